# bench/async_drift.sh: the waiting-task samples of a JSON-lines profile of bench/async_moves.py
# against the times its tasks logged: a sample is right when its task waited, at the sample's
# pass, in the await its stack shows.
# Usage: python3 async_drift_compare.py PROFILE.jsonl LOG
import bisect
import collections
import json
import sys

truth = collections.defaultdict(list)
for line in open(sys.argv[2]):
    at, name, point = line.split()
    truth[name].append((int(at) // 1000, point))
right = wrong = 0
for line in open(sys.argv[1]):
    sample = json.loads(line)
    names = [frame["name"] for frame in sample["frames"]]
    tasks = [name[6:-1] for name in names if name.startswith("<task w")]
    points = [name for name in names if name in ("point_a", "point_b")]
    if not tasks or not points or tasks[-1] not in truth:
        continue
    times = [entry[0] for entry in truth[tasks[-1]]]
    index = bisect.bisect_right(times, sample["time_us"]) - 1
    if index < 0:
        continue
    if truth[tasks[-1]][index][1] == points[-1]:
        right += 1
    else:
        wrong += 1
total = right + wrong
print("%d waiting-task samples, %d (%.1f%%) where the task waited at the pass, %d (%.1f%%) elsewhere" %
      (total, right, 100.0 * right / max(total, 1), wrong, 100.0 * wrong / max(total, 1)))

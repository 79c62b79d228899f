# `pybpfprof stacks --json` of tests/scripts/async_threads.py (tests/test_async_tasks.c), whose
# live loop threads are TID1 and TID2: prints "stale: why" if a task of the exited thread's loop
# or of another thread is listed, "tree" if each live thread lists its tree (live-N-main awaited
# by none, awaiting live-N-a and live-N-b), else "other: why".
# Usage: python3 async_threads_check.py FILE TID1 TID2
import json
import sys

document = json.load(open(sys.argv[1]))
live = {int(sys.argv[2]): "live-1", int(sys.argv[3]): "live-2"}
tasks = document["tasks"]
for task in tasks:
    if task["name"].startswith("gone-") or task["thread"] not in live:
        print("stale: %s of thread %s" % (task["name"], task["thread"]))
        sys.exit(0)
for tid, prefix in live.items():
    mine = [task for task in tasks if task["thread"] == tid]
    roots = [task for task in mine if task["name"] == prefix + "-main" and task["awaited_by"] is None]
    if len(roots) != 1:
        print("other: no %s root in thread %d: %s" % (prefix, tid, [task["name"] for task in mine]))
        sys.exit(0)
    children = sorted(task["name"] for task in mine if task["awaited_by"] == roots[0]["address"])
    if children != [prefix + "-a", prefix + "-b"]:
        print("other: %s awaits %s" % (prefix, children))
        sys.exit(0)
print("tree")

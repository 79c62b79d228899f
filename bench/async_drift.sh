#!/usr/bin/env bash
# Part of `sudo make bench` (also on its own): how often --async-mode all shows a waiting task
# somewhere else than where it waited at the pass. A waiting task's stack is read when its
# thread's record is drained, after the pass: a task its loop ran in between has moved.
# bench/async_moves.py's 8 tasks move between two awaits every 2-6 ms and log when; the profile's
# waiting-task samples are compared with that log (bench/async_drift_compare.py), RUNS times.
# Figures are printed, never asserted; the load average beside.
#
# Environment: PYTHON (python3), SECONDS_EACH (3), RUNS (3).
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
seconds=${SECONDS_EACH:-3}
runs=${RUNS:-3}
out=$(mktemp -d /tmp/pybpfprof-async-drift.XXXXXX)
trap 'rm -rf "$out"' EXIT

[ "$(id -u)" -eq 0 ] || { echo "async_drift.sh: must run as root" >&2; exit 1; }
echo "== waiting tasks that move every 2-6 ms: --mode wall --async-mode all, 100 Hz, ${seconds} s"
for run in $(seq 1 "$runs"); do
	"$python" bench/async_moves.py "$((seconds + 2))" "$out/log" >"$out/ready" &
	target=$!
	while ! grep -q ready "$out/ready" 2>/dev/null; do sleep 0.1; done
	./pybpfprof -q --mode wall --async-mode all -F 100 -p "$target" -d "$seconds" -f jsonl -o "$out/profile.jsonl"
	wait "$target"
	echo "run $run: $(python3 bench/async_drift_compare.py "$out/profile.jsonl" "$out/log"); load $(cut -d' ' -f1 /proc/loadavg)"
done

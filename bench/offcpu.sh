#!/usr/bin/env bash
# Part of `sudo make bench` (also on its own): what --event off-cpu costs. Its program runs at
# every context switch of the host, a target's or not, so its cost is per switch.
# A context-switch-heavy load (tests/scripts/offcpu_work.py switches: two threads hand a token
# through pipes), pinned to CPU 0 so that every hand-over is one switch (the writer blocks in its
# read, the reader runs),
# for SECONDS, four times:
#   alone (the baseline hand-overs per second), and again at the end (how much the host's own
#     load moved the baseline meanwhile);
#   beside the profiler, not its target (--event off-cpu -p an idle Python process): what every
#     other process of the host pays per switch;
#   as the profiler's target (launched): each switch-out walked, each switch-in sent.
# Printed per run: the load's CPU time per hand-over (user+sys: the BPF time of its own switches
# is charged to it; unlike its rate, this hardly moves with what else the host runs) and its
# ratio to the baseline's, hand-overs per second, the host's context
# switches per second (/proc/stat ctxt), the program's runs and ns per run (the kernel's
# bpf_prog_info run_time_ns / run_cnt, kernel.bpf_stats_enabled through --bpf-stats), its
# in-program split (ns of a run that found a target, of one that did not), and the profiler's own
# CPU. Figures are printed, never asserted; the load average beside.
#
# Environment: PYTHON (python3), SECONDS_EACH (10).
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
seconds=${SECONDS_EACH:-10}
out=$(mktemp -d /tmp/pybpfprof-offcpu.XXXXXX)
trap 'rm -rf "$out"; [ -n "${idle:-}" ] && kill "$idle" 2>/dev/null || true' EXIT

[ "$(id -u)" -eq 0 ] || { echo "offcpu.sh: must run as root" >&2; exit 1; }

ctxt() { awk '/^ctxt / { print $2 }' /proc/stat; }

# run NAME LOG COMMAND...: the load's hand-overs per second and the host's switches per second.
run() {
	local name=$1 log=$2 before after result
	shift 2
	before=$(ctxt)
	result=$("$@" 2>"$log" | awk '/^handovers / { print $2, $4 }')
	after=$(ctxt)
	echo "$name ${result:-0 0} $(( (after - before) / seconds ))" >>"$out/runs"
}

# "| run | CPU ns per hand-over | ratio | hand-overs/s | host switches/s | BPF runs | ns per run | ns per target run | ns per other run | profiler CPU |"
row() { # name log
	awk -v name="$1" -v seconds="$seconds" -v runs_file="$out/runs" '
		BEGIN {
			while ((getline line < runs_file) > 0) {
				split(line, f, " ")
				rate[f[1]] = f[2] / seconds
				cost[f[1]] = f[2] ? f[3] * 1e9 / f[2] : 0
				host[f[1]] = f[4]
			}
		}
		/ bpf: [0-9]+ runs,/ { runs = $3; per_run = $5; other_ns = $12; target_ns = $20 }
		/ cpu: / { cpu = $3; share = $8; sub(/^\(/, "", share) }
		END {
			base = cost["alone"]
			printf "| %s | %.0f | %.3f | %.0f | %d | %s | %s | %s | %s | %s |\n", name, cost[name],
			       base ? cost[name] / base : 0, rate[name], host[name], runs ? runs : "-", runs ? per_run : "-",
			       runs ? target_ns : "-", runs ? other_ns : "-", cpu ? cpu " s (" share ")" : "-"
		}' "$2"
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
echo "## --event off-cpu cost ($(date -u +%Y-%m-%d), $(nproc) CPUs, $("$python" -V 2>&1), ${seconds} s each)"
echo
echo "| run | load CPU ns per hand-over | ratio to alone | hand-overs/s | host switches/s | BPF runs | ns per run (run_time_ns/run_cnt) | ns per target run | ns per other run | profiler CPU |"
echo "|---|---|---|---|---|---|---|---|---|---|"

: >"$out/runs"
run alone "$out/alone.log" taskset -c 0 "$python" tests/scripts/offcpu_work.py switches "$seconds"
row alone "$out/alone.log"

"$python" -c 'import time; time.sleep(1e6)' &
idle=$!
sleep 0.5
./pybpfprof --bpf-stats -v --event off-cpu -p "$idle" -d $((seconds + 3)) -o "$out/host.mojo" 2>"$out/host.log" &
profiler=$!
sleep 2
run beside "$out/beside.log" taskset -c 0 "$python" tests/scripts/offcpu_work.py switches "$seconds"
wait "$profiler" || true
kill "$idle" 2>/dev/null || true
idle=
row beside "$out/host.log"

run target "$out/target.log" ./pybpfprof --bpf-stats -v --event off-cpu -o "$out/target.mojo" -- \
	taskset -c 0 "$python" tests/scripts/offcpu_work.py switches "$seconds"
row target "$out/target.log"

run alone-again "$out/again.log" taskset -c 0 "$python" tests/scripts/offcpu_work.py switches "$seconds"
row alone-again "$out/again.log"

echo
echo "beside: every switch of the host runs the program (the profiler's run spans the load and a"
echo "few idle seconds); target: each hand-over is a switch-out walked and a switch-in sent."
echo "--bpf-stats times each run inside the program too (two clock reads, some 50 ns of the figures)."
echo "load average: $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"

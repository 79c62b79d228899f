#!/usr/bin/env bash
# Part of `sudo make bench` (also on its own): what --event syscall:NAME costs. Attached to
# sys_enter, its program runs at every system call of the host, a target's or not, and the
# kernel sends every task through its traced system-call path while it is attached: its cost is
# per call.
# A syscall-heavy load (tests/scripts/syscall_work.py spin: write(2) of one byte to /dev/null in
# a loop, a million calls a second), pinned to CPU 0, for SECONDS, six times:
#   alone (the baseline calls per second), and again at the end (how much the host's own load
#     moved the baseline meanwhile);
#   beside the profiler, not its target (-p an idle Python process), the load's call not asked
#     for (--event syscall:openat): what every process of the host pays per call; once as users
#     run it (plain), once with --bpf-stats (the kernel's run-time statistics, themselves a cost);
#   beside it, the load's call asked for (--event syscall:write): a wanted call of a process that
#     is no target (the bitmap test passes, the target lookup fails);
#   as the profiler's target (launched, --event syscall:write): each call walked and sent, and
#     with :latency (parked at entry, sent at exit).
# Then the cost of --event-period: a futex-heavy load (syscall_work.py futex: two threads of one
# process handing a turn back and forth through locks, both pinned to CPU 0) alone, and as the
# target of --event syscall:futex at period 1 (every call walked and sent) and 100 (one call in
# 100 on average: the others pay the entry program's test and this CPU's countdown); its "calls"
# are hand-overs, each some futex calls in both threads.
# Printed per run: the load's CPU time per call (user+sys: the BPF time of its own calls is
# charged to it) and its ratio to the baseline's, calls per second, the entry program's runs and
# ns per run (the kernel's bpf_prog_info run_time_ns / run_cnt with kernel.bpf_stats_enabled,
# through --bpf-stats; with :latency the exit program's time is added to its call's), its
# in-program split (ns of a target's call, of another), the records lost, and the profiler's own
# CPU. Figures are printed, never asserted; the load average beside.
#
# Environment: PYTHON (python3), SECONDS_EACH (5).
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
seconds=${SECONDS_EACH:-5}
out=$(mktemp -d /tmp/pybpfprof-syscalls.XXXXXX)
trap 'rm -rf "$out"; [ -n "${idle:-}" ] && kill "$idle" 2>/dev/null || true' EXIT

[ "$(id -u)" -eq 0 ] || { echo "syscalls.sh: must run as root" >&2; exit 1; }

load=(taskset -c 0 "$python" tests/scripts/syscall_work.py spin "$seconds")
futex_load=(taskset -c 0 "$python" tests/scripts/syscall_work.py futex "$seconds")

# run NAME LOG COMMAND...: the load's calls and CPU seconds.
run() {
	local name=$1 log=$2 result
	shift 2
	result=$("$@" 2>"$log" | awk '/^calls / { print $2, $4 }')
	echo "$name ${result:-0 0}" >>"$out/runs"
}

# "| run | load CPU ns per call | ratio | calls/s | BPF runs | ns per run | ns per target call | ns per other call | lost | profiler CPU |"
row() { # name log [baseline run: alone]
	awk -v name="$1" -v baseline="${3:-alone}" -v seconds="$seconds" -v runs_file="$out/runs" '
		BEGIN {
			while ((getline line < runs_file) > 0) {
				split(line, f, " ")
				rate[f[1]] = f[2] / seconds
				cost[f[1]] = f[2] ? f[3] * 1e9 / f[2] : 0
			}
		}
		/ bpf: [0-9]+ runs,/ { runs = $3; per_run = $5; other_ns = $12; target_ns = $20 }
		/ samples in .* lost$/ { lost = $(NF - 1) }
		/ cpu: / { cpu = $3; share = $8; sub(/^\(/, "", share) }
		END {
			base = cost[baseline]
			printf "| %s | %.0f | %.3f | %.0f | %s | %s | %s | %s | %s | %s |\n", name, cost[name],
			       base ? cost[name] / base : 0, rate[name], runs ? runs : "-", runs ? per_run : "-",
			       runs ? target_ns : "-", runs ? other_ns : "-", runs ? lost : "-",
			       cpu ? cpu " s (" share ")" : "-"
		}' "$2"
}

# beside NAME EVENT [OPTION...]: the load beside a profiler of an idle Python process.
beside() {
	local name=$1 event=$2 profiler
	shift 2
	"$python" -c 'import time; time.sleep(1e6)' &
	idle=$!
	sleep 0.5
	./pybpfprof "$@" --event "$event" -p "$idle" -d $((seconds + 3)) -o "$out/$name.mojo" \
		2>"$out/$name.log" &
	profiler=$!
	sleep 2
	run "$name" "$out/$name-load.log" "${load[@]}"
	wait "$profiler" || true
	kill "$idle" 2>/dev/null || true
	idle=
	row "$name" "$out/$name.log"
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
echo "## --event syscall cost ($(date -u +%Y-%m-%d), $(nproc) CPUs, $("$python" -V 2>&1), ${seconds} s each)"
echo
echo "| run | load CPU ns per call | ratio to alone | calls/s | BPF runs | ns per run (run_time_ns/run_cnt) | ns per target call | ns per other call | lost | profiler CPU |"
echo "|---|---|---|---|---|---|---|---|---|---|"

: >"$out/runs"
run alone "$out/alone.log" "${load[@]}"
row alone "$out/alone.log"

beside beside-plain syscall:openat
beside beside-unwanted syscall:openat --bpf-stats -v
beside beside-wanted syscall:write --bpf-stats -v

run target "$out/target.log" ./pybpfprof --bpf-stats -v --event syscall:write -o "$out/target.mojo" -- "${load[@]}"
row target "$out/target.log"

run target-latency "$out/latency.log" ./pybpfprof --bpf-stats -v --event syscall:write:latency \
	-o "$out/latency.mojo" -- "${load[@]}"
row target-latency "$out/latency.log"

run alone-again "$out/again.log" "${load[@]}"
row alone-again "$out/again.log"

run futex-alone "$out/futex-alone.log" "${futex_load[@]}"
row futex-alone "$out/futex-alone.log" futex-alone
for period in 1 100; do
	run "futex-period-$period" "$out/futex-$period.log" ./pybpfprof --bpf-stats -v --event syscall:futex \
		--event-period "$period" -o "$out/futex-$period.mojo" -- "${futex_load[@]}"
	row "futex-period-$period" "$out/futex-$period.log" futex-alone
done

echo
echo "beside: every call of the host takes the kernel's traced system-call path and runs the entry"
echo "program (its BPF runs span the load and a few idle seconds). plain: as users run it; the others"
echo "with --bpf-stats, whose run-time statistics and in-program clock reads (some 50 ns) add to every"
echo "run. unwanted: the load's write is not asked for (one bitmap test); wanted: it is, but the load is"
echo "no target (a bitmap test and a map lookup). target: each call walked and sent."
echo "futex: a futex-heavy load (its calls: hand-overs between two threads), its ratio to futex-alone;"
echo "period 1: every futex call walked and sent, 100: one in 100 on average."
echo "load average: $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"

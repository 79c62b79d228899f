#!/usr/bin/env bash
# `sudo make bench` (or alone): what a deep stack costs the target at 10 kHz, --no-native, on
# 3.12 and 3.13 (bench/depth_work.py: every frame its own code object, or one function's
# recursion). Figures are printed, never asserted.
#   BPF us per target sample (bpftool-free: --bpf-stats) at depths 30, 200, 900 of distinct
#   functions and of one recursive one, and 32 recursive vs 32 distinct, each the median of 3
#   runs, ratios beside them; "trusted": BPF takes a code object's identity unread while the
#   target's code-object counter stands still (py_proc_config.code_stamp_addr), "read":
#   PYBPFPROF_NO_CODE_STAMP=1, every code object read on every walk. Beside them the CPU
#   seconds pybpfprof took to start (the BPF verifier's time most of it), median of the runs.
#   Target slowdown at 10 kHz: the CPU seconds of a fixed amount of work at depths 30, 200,
#   900, profiled vs unprofiled, beside the floor, `perf record -F 10000 -e cpu-clock` (no
#   stacks) on the same work; medians of 3 each.
# Environment: RATE (10000), WORK (rounds of the fixed work, 30000000), RUNS (3), SPIN (the CPU
# seconds the deep stack's leaf spins in the BPF-time runs, 0.5: some 5000 samples at 10 kHz
# however loaded the machine is).
set -euo pipefail
cd "$(dirname "$0")/.."
versions=$(tools/pyenv-versions.sh)

rate=${RATE:-10000}
work=${WORK:-30000000}
runs=${RUNS:-3}
spin=cpu=${SPIN:-0.5}
out=$(mktemp -d /tmp/pybpfprof-depth.XXXXXX)
trap 'rm -rf "$out"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# BPF ns per target sample: version depth shape(distinct|recursive) how(trusted|read); each
# run's start-up CPU seconds go to $out/start.
bpf_ns() {
	local python=$1 depth=$2 shape=$3 how=$4
	for _ in $(seq "$runs"); do
		if [ "$how" = read ]; then export PYBPFPROF_NO_CODE_STAMP=1; else unset PYBPFPROF_NO_CODE_STAMP; fi
		./pybpfprof --bpf-stats --no-native -F "$rate" -o "$out/depth.mojo" -- "$python" bench/depth_work.py "$depth" "$spin" "$shape" \
			>"$out/run.txt" 2>&1 || true
		sed -n 's/.*, \([0-9.]*\) s to start$/\1/p' "$out/run.txt" >>"$out/start"
		sed -n 's/.* \([0-9]*\) ns per target sample$/\1/p' "$out/run.txt"
		unset PYBPFPROF_NO_CODE_STAMP
	done | median
}

printf '\nBPF us per target sample at %d Hz, --no-native (bench/depth_work.py, median of %d)\n' "$rate" "$runs"
printf '%-7s %-8s %-9s %7s %7s %7s %7s %7s %7s %8s %8s\n' python ids shape d30 d200 d900 900/30 r32 d32 d32/r32 start_s
for version in 3.12 3.13; do
	python=$(ls -d "$versions"/"$version".*/bin/python 2>/dev/null | head -1)
	[ -n "$python" ] || { printf '%-7s absent\n' "$version"; continue; }
	for how in trusted read; do
		: >"$out/start"
		r32=$(bpf_ns "$python" 32 recursive "$how"); d32=$(bpf_ns "$python" 32 distinct "$how")
		for shape in distinct recursive; do
			d30=$(bpf_ns "$python" 30 "$shape" "$how"); d200=$(bpf_ns "$python" 200 "$shape" "$how")
			d900=$(bpf_ns "$python" 900 "$shape" "$how")
			start=$(median <"$out/start")
			awk -v v="$version" -v h="$how" -v s="$shape" -v a="$d30" -v b="$d200" -v c="$d900" -v r="$r32" -v d="$d32" \
				-v t="$start" 'BEGIN {
				printf "%-7s %-8s %-9s %7.1f %7.1f %7.1f %6.1fx %7.1f %7.1f %7.2fx %8.3f\n", v, h, s, a / 1000, b / 1000,
					c / 1000, a ? c / a : 0, r / 1000, d / 1000, r ? d / r : 0, t }'
		done
	done
done

# CPU seconds of the fixed work: version depth how(none|perf|pybpfprof|read: pybpfprof, identities read)
work_s() {
	local python=$1 depth=$2 how=$3
	for _ in $(seq "$runs"); do
		case $how in
		none) "$python" bench/depth_work.py "$depth" "work=$work" ;;
		perf) perf record -q -F "$rate" -e cpu-clock -o "$out/perf.data" -- "$python" bench/depth_work.py "$depth" "work=$work" 2>/dev/null ;;
		pybpfprof) ./pybpfprof -q --no-native -F "$rate" -o "$out/work.mojo" -- "$python" bench/depth_work.py "$depth" "work=$work" ;;
		read) PYBPFPROF_NO_CODE_STAMP=1 ./pybpfprof -q --no-native -F "$rate" -o "$out/work.mojo" -- "$python" bench/depth_work.py "$depth" "work=$work" ;;
		esac
	done | median
}

printf '\ntarget slowdown at %d Hz, distinct functions, --no-native (CPU s of %d rounds, median of %d)\n' "$rate" "$work" "$runs"
printf '%-7s %6s %8s %9s %9s %9s %9s %9s\n' python depth base_s floor trusted vs_floor read vs_floor
for version in 3.12 3.13; do
	python=$(ls -d "$versions"/"$version".*/bin/python 2>/dev/null | head -1)
	[ -n "$python" ] || continue
	for depth in 30 200 900; do
		base=$(work_s "$python" "$depth" none); floor=$(work_s "$python" "$depth" perf)
		profiled=$(work_s "$python" "$depth" pybpfprof); read=$(work_s "$python" "$depth" read)
		awk -v v="$version" -v d="$depth" -v b="$base" -v f="$floor" -v p="$profiled" -v r="$read" 'BEGIN {
			fs = (f / b - 1) * 100; ps = (p / b - 1) * 100; rs = (r / b - 1) * 100
			pratio = fs > 0 ? sprintf("%.2fx", ps / fs) : "-"
			rratio = fs > 0 ? sprintf("%.2fx", rs / fs) : "-"
			printf "%-7s %6d %8.3f %+8.1f%% %+8.1f%% %9s %+8.1f%% %9s\n", v, d, b, fs, ps, pratio, rs, rratio }'
	done
done
cat <<'TXT'
ids: trusted, BPF takes a code object's identity unread while the target's code-object counter
  stands still; read, every code object read on every walk. shape: every frame its own function,
  or one function's recursion. 900/30 and d32/r32: ratios of the BPF times beside them (r32, d32
  repeated on each shape's row). start_s: pybpfprof's CPU seconds to start, the BPF verifier's
  time most of it. trusted, read: pybpfprof's slowdown each way; vs_floor: it over the
  floor's (perf record, no stacks: the timer interrupts' own cost, large on a VM at 10 kHz);
  "-" where the floor measured none.
TXT

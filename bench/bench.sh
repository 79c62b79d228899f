#!/usr/bin/env bash
# `sudo make bench`: what pybpfprof costs, at 1 kHz and 20 kHz, on a fixed
# CPU-bound workload with a known 3:1 split. Figures are printed, never asserted.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-/root/.pyenv/versions/3.12.1/bin/python}
[ -x "$python" ] || python=/usr/bin/python3
rounds=${ROUNDS:-4500}
out=$(mktemp -d /tmp/pybpfprof-bench.XXXXXX)
trap 'rm -rf "$out"' EXIT

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "workload: $python bench/fixed_work.py $rounds"
base=$(for _ in 1 2 3; do "$python" bench/fixed_work.py "$rounds"; done | median)
echo "unprofiled: ${base} s (median of 3)"
# The floor: the same perf events firing on every CPU with a program that
# matches nothing (its target is an idle Python), while the workload runs.
floor_of() {
	local hz=$1 idle profiler elapsed
	"$python" -c 'import time; time.sleep(600)' &
	idle=$!
	sleep 0.3
	./pybpfprof -q -F "$hz" -p "$idle" -o "$out/floor.mojo" &
	profiler=$!
	sleep 0.5
	elapsed=$("$python" bench/fixed_work.py "$rounds")
	kill -INT "$profiler"; wait "$profiler" || true
	kill "$idle"; wait "$idle" 2>/dev/null || true
	echo "$elapsed"
}

printf '\n%-8s %10s %11s %10s %10s %9s %9s %6s %11s %11s %9s %8s\n' rate bpf_ns/smp cpu_us/smp cpu%core slowdown vs_floor received expect lost mojo_B/smp tach_B/smp start_s
for hz in 1000 20000; do
	runs=()
	for _ in 1 2 3; do
		log="$out/run.log"
		elapsed=$(./pybpfprof --bpf-stats -F "$hz" -o "$out/b.mojo" -o "$out/b.bin" -- "$python" bench/fixed_work.py "$rounds" 2>"$log")
		samples=$(sed -n 's/^pybpfprof: \([0-9]*\) samples in \([0-9.]*\) s.*; \([0-9]*\) lost;.*/\1 \2 \3/p' "$log")
		bpf_ns=$(sed -n 's/.* \([0-9]*\) ns per target sample$/\1/p' "$log")
		cpu_s=$(sed -n 's/^pybpfprof: cpu: \([0-9.]*\) s user+sys while sampling.*/\1/p' "$log")
		setup_s=$(sed -n 's/.*, \([0-9.]*\) s to start$/\1/p' "$log")
		read -r count secs lost <<<"$samples"
		mojo=$(stat -c %s "$out/b.mojo"); tach=$(stat -c %s "$out/b.bin")
		runs+=("$elapsed $bpf_ns $cpu_s $count $secs $lost $mojo $tach $setup_s")
	done
	floor=$(floor_of "$hz")
	# The run with the median elapsed time stands for this rate.
	line=$(printf '%s\n' "${runs[@]}" | sort -n | sed -n 2p)
	read -r elapsed bpf_ns cpu_s count secs lost mojo tach setup_s <<<"$line"
	awk -v hz="$hz" -v e="$elapsed" -v b="$base" -v f="$floor" -v ns="$bpf_ns" -v cpu="$cpu_s" -v n="$count" \
	    -v s="$secs" -v lost="$lost" -v mojo="$mojo" -v tach="$tach" -v setup="$setup_s" 'BEGIN {
		printf "%-8s %10d %11.1f %9.2f%% %9.1f%% %8.1f%% %9d %6d %11d %11.1f %9.1f %8.3f\n",
		hz "Hz", ns, cpu * 1e6 / n, 100 * cpu / s, 100 * (e - b) / b, 100 * (e - f) / f, n, e * hz, lost,
		mojo / n, tach / n, setup }'
done
# BPF cost by stack depth: every frame runs its own code object (as in real programs), so
# each one costs the walker a read of that object for its checksum.
printf '\nBPF ns per target sample by depth (1 kHz, median of 3; every frame its own code object)\n'
printf '%-8s %8s %8s %8s %8s\n' python 5 32 128 500
for version in 2.7 3.10 3.11 3.12 3.13; do
	interp=$(ls -d /root/.pyenv/versions/"$version".*/bin/python 2>/dev/null | head -1)
	[ -n "$interp" ] || { printf '%-8s absent\n' "$version"; continue; }
	row=$(printf '%-8s' "$version")
	for depth in 5 32 128 500; do
		ns=$(for _ in 1 2 3; do
			./pybpfprof --bpf-stats -F 1000 -o "$out/depth.mojo" -- "$interp" bench/depth_work.py "$depth" 1.5 2>&1 |
				sed -n 's/.* \([0-9]*\) ns per target sample$/\1/p'
		done | median)
		row+=$(printf ' %8s' "$ns")
	done
	echo "$row"
done

cat <<'TXT'

bpf_ns/smp: the sample program's BPF run time (kernel.bpf_stats_enabled) over samples of targets
  (its cheap runs on other processes' ticks are charged to them too).
cpu_us/smp, cpu%core: the profiler's own user+sys time while sampling, per sample and as a share
  of one core; start_s: its CPU time before sampling began (BPF verification, kallsyms, discovery).
slowdown: the workload's own elapsed time, profiled vs unprofiled (noisy on a VM: compare runs);
  vs_floor: profiled vs the same rate of perf events with nothing to sample (the timer interrupts'
  own cost, large on a VM at high rates).
received/expect: samples written vs the workload's elapsed time x rate (one busy thread).
TXT

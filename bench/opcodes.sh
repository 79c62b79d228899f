#!/usr/bin/env bash
# `sudo make bench` (or alone): what record --opcodes costs. The instruction byte is read in
# userspace when a (code object, offset) is first resolved (user/symbolize/symbolize_py.c),
# so BPF's time per sample is the same with and without it; the cost is the profiler's own
# CPU. Printed, never asserted:
#   the profiler's user+sys CPU per 1000 samples with and without --opcodes, at 10 kHz,
#   --no-native, in the same run pairs (alternating), medians of RUNS, their ratio; on
#   bench/depth_work.py at depth 30 (every frame its own code object: few new slots after
#   the first milliseconds) and tests/scripts/code_churn.py (new code objects every 3 ms: a
#   slot miss, and with --opcodes a read, every few samples).
# Environment: RATE (10000), RUN_SECONDS (3), RUNS (3).
set -euo pipefail
cd "$(dirname "$0")/.."

rate=${RATE:-10000}
seconds=${RUN_SECONDS:-3}
runs=${RUNS:-3}
out=$(mktemp -d /tmp/pybpfprof-opcodes.XXXXXX)
trap 'rm -rf "$out"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# One run: "CPU_MS SAMPLES" of the profiler. $1: extra option ("" or --opcodes), the rest: the command.
one_run() {
	local option=$1
	shift
	/usr/bin/time -f 'cpu %U %S' -o "$out/time" ./pybpfprof $option --no-native -F "$rate" -o "$out/run.bin" \
		-- "$@" >"$out/log" 2>&1 || true
	awk '/^cpu / {cpu = ($2 + $3) * 1000} END {printf "%d ", cpu}' "$out/time"
	sed -n 's/^pybpfprof: \([0-9]*\) samples in .*/\1/p' "$out/log" | head -n 1
}

# "WITHOUT WITH" medians of CPU ms per 1000 samples, alternating the two in each pair.
pairs() {
	local i without with
	for i in $(seq "$runs"); do
		without=$(one_run "" "$@")
		with=$(one_run --opcodes "$@")
		echo "$without $with"
	done >"$out/pairs"
	without=$(awk '$2 > 0 {print $1 * 1000 / $2}' "$out/pairs" | median)
	with=$(awk '$4 > 0 {print $3 * 1000 / $4}' "$out/pairs" | median)
	samples=$(awk '{print $4}' "$out/pairs" | median)
	echo "$without $with $samples"
}

printf '\nrecord --opcodes: profiler CPU ms per 1000 samples at %d Hz, --no-native, %s s runs (median of %d pairs)\n' \
	"$rate" "$seconds" "$runs"
printf '%-7s %-10s %9s %9s %7s %9s\n' python workload without opcodes ratio samples
for version in 3.12 3.13; do
	python=$(ls -d /root/.pyenv/versions/"$version".*/bin/python 2>/dev/null | head -1)
	[ -n "$python" ] || { printf '%-7s absent\n' "$version"; continue; }
	read -r without with samples < <(pairs "$python" bench/depth_work.py 30 "$seconds")
	awk -v v="$version" -v a="$without" -v b="$with" -v n="$samples" 'BEGIN {
		printf "%-7s %-10s %9.2f %9.2f %6.2fx %9d\n", v, "depth 30", a, b, a ? b / a : 0, n }'
	read -r without with samples < <(pairs "$python" tests/scripts/code_churn.py "$seconds")
	awk -v v="$version" -v a="$without" -v b="$with" -v n="$samples" 'BEGIN {
		printf "%-7s %-10s %9.2f %9.2f %6.2fx %9d\n", v, "code churn", a, b, a ? b / a : 0, n }'
done

# Against CPython 3.15's own sampler on the same program (tests/scripts/opcode_work.py, 3.15 in
# the sid chroot, in its own mount namespace with /proc mounted there, as bench/peers.sh runs
# it): the instruction shares `annotate` reads from each one's Tachyon file, under the
# attribute line (attrs, 19) and the arithmetic line (arith, 26).
sid=${PYBPFPROF_SID_DIR:-/var/cache/pybpfprof/sid}
# "FUNCTION:LINE<TAB>NAME<TAB>TOTAL%" for each instruction row under the line, from annotate's text.
instructions() {
	local profile=$1 function=$2 line=$3
	./pybpfprof annotate --function "$function" "$profile" | awk -v f="$function" -v l="$line" '
		substr($0, 17, 12) == "          | " { if (under) printf "%s:%d\t%s\t%.2f\n", f, l, substr($0, 29), substr($0, 9, 8) + 0; next }
		{ under = (substr($0, 17, 7) + 0 == l) }'
}
if [ -x "$sid/usr/bin/python3.15" ]; then
	inner=/tmp/pybpfprof-opcodes-bench
	mkdir -p "$sid$inner"
	cp tests/scripts/opcode_work.py "$sid$inner/"
	unshare -m --propagation private sh -c "mount -t proc proc '$sid/proc' && exec chroot '$sid' python3.15 -m profiling.sampling run -r 1khz --mode cpu --binary --opcodes -o '$inner/cpython.bin' '$inner/opcode_work.py' $seconds" \
		>"$out/cpython.log" 2>&1 || true
	./pybpfprof -q --opcodes -F 1000 -o "$out/pybpfprof.bin" -- tests/pythons/run-python.sh 3.15 tests/scripts/opcode_work.py "$seconds" >/dev/null
	for side in cpython pybpfprof; do
		file=$out/pybpfprof.bin
		[ "$side" = cpython ] && file=$sid$inner/cpython.bin
		{ instructions "$file" attrs 19; instructions "$file" arith 26; } >"$out/$side.rows" 2>/dev/null || true
	done
	printf '\nInstruction shares of all samples on python3.15, %s s of CPU at 1 kHz: CPython 3.15 profiling.sampling --opcodes vs pybpfprof --opcodes (tests/scripts/opcode_work.py)\n' "$seconds"
	printf '%-9s %-40s %8s %10s\n' line instruction cpython pybpfprof
	awk -F'\t' 'NR == FNR { cpython[$1 "\t" $2] = $3; order[++n] = $1 "\t" $2; next }
		{ key = $1 "\t" $2; ours[key] = $3; if (!(key in cpython)) order[++n] = key }
		END { for (i = 1; i <= n; i++) { split(order[i], k, "\t");
			printf "%-9s %-40s %8s %10s\n", k[1], k[2], (order[i] in cpython) ? cpython[order[i]] : "-",
				(order[i] in ours) ? ours[order[i]] : "-" } }' "$out/cpython.rows" "$out/pybpfprof.rows"
	rm -rf "${sid:?}$inner"
else
	printf '\nCPython 3.15 comparison skipped: no python3.15 in %s\n' "$sid"
fi

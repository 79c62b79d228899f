#!/usr/bin/env bash
# Every writer on one recording: `pybpfprof convert` of a MOJO file to each output format, its
# file size and its time per sample (median of 3; convert's whole run, the MOJO read included:
# MOJO to MOJO is the reference). Figures are printed, never asserted.
#
# Usage: bench/writers.sh [FILE.mojo]   (default: 5 s of bench/fixed_work.py at 1 kHz, recorded here)
set -euo pipefail
cd "$(dirname "$0")/.."
versions=$(tools/pyenv-versions.sh)

python=${PYTHON:-"$versions"/3.12.1/bin/python}
[ -x "$python" ] || python=/usr/bin/python3
out=$(mktemp -d /tmp/pybpfprof-writers.XXXXXX)
trap 'rm -rf "$out"' EXIT

input=${1:-}
if [ -z "$input" ]; then
	input="$out/in.mojo"
	./pybpfprof -q -F 1000 -o "$input" -- "$python" bench/fixed_work.py 1500 >/dev/null
fi
samples=$(./pybpfprof top "$input" | sed -n '1s/.*: \([0-9]*\) samples.*/\1/p')
[ -n "$samples" ] && [ "$samples" -gt 0 ] || { echo "writers: no samples in $input" >&2; exit 1; }

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf 'writers: %s samples of %s (convert, median of 3)\n' "$samples" "$input"
printf '%-12s %-22s %10s %10s %10s\n' format file bytes B/smp us/smp
for format in mojo tachyon collapsed svg pprof speedscope pstats gecko gecko-gz jsonl; do
	ext=$(case $format in
		mojo) echo mojo ;; tachyon) echo bin ;; collapsed) echo collapsed ;; svg) echo svg ;;
		pprof) echo pb.gz ;; speedscope) echo speedscope.json ;; pstats) echo pstats ;;
		gecko) echo gecko.json ;; gecko-gz) echo gecko.json.gz ;; jsonl) echo jsonl ;; esac)
	file="$out/out.$ext"
	ns=$(for _ in 1 2 3; do
		rm -f "$file"
		start=$(date +%s%N)
		./pybpfprof convert "$input" -o "$file" -f "$format"
		echo $(($(date +%s%N) - start))
	done | median)
	bytes=$(stat -c %s "$file")
	awk -v f="$format" -v e="out.$ext" -v b="$bytes" -v n="$samples" -v ns="$ns" \
		'BEGIN { printf "%-12s %-22s %10d %10.1f %10.2f\n", f, e, b, b / n, ns / 1000 / n }'
done

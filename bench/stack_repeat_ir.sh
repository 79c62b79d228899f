#!/usr/bin/env bash
# Instructions per frame of a repeated stack (bench/stack_repeat.c) under callgrind: for each
# sink and depth, the difference of two runs (base and base + extra samples) over the extra
# frames, so setup and the first sightings cancel out. Repeatable where timings are not.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BUILD:-build}/bench/stack_repeat
out=$(mktemp -d /tmp/stack_repeat_ir.XXXXXX)
trap 'rm -rf "$out"' EXIT
ir_of() {
	valgrind --tool=callgrind --callgrind-out-file="$out/cg" "$bin" "--sink=$1" "$2" "$3" >/dev/null 2>"$out/log"
	sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out/log"
}
printf '%-6s %9s %9s %9s %9s   (instructions per frame)\n' depth resolve +mojo +tachyon +both
for depth in 30 900; do
	base=20; extra=$((depth == 30 ? 2000 : 200))
	row=$(printf '%-6s' "$depth")
	for sink in resolve +mojo +tachyon +both; do
		a=$(ir_of "$sink" "$depth" "$base"); b=$(ir_of "$sink" "$depth" $((base + extra)))
		row+=$(awk -v a="$a" -v b="$b" -v n="$extra" -v d="$depth" 'BEGIN { printf " %9.1f", (b - a) / (n * d) }')
	done
	echo "$row"
done

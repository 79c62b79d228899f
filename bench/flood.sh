#!/bin/sh
# A new process on a flooded host: tests/scripts/flood_host.py starts many Python processes
# spending their time in libraries of their own (each file a table to build), a whole-host
# profiler runs, and a zlib workload starts after it. Prints, for the workload, how many of its
# zlib samples hold the chain under its Python caller, and the profiler's -v lines on tables
# and late unwinding.
#   bench/flood.sh [PYTHON] [LONG] [SHORT]
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
versions=$("$here/tools/pyenv-versions.sh")
python=${1:-"$versions"/3.12.1/bin/python3}
long=${2:-40}
short=${3:-20}
work=$(mktemp -d)
trap "rm -rf \"$work\"" EXIT; [ -n "${KEEP:-}" ] && trap - EXIT
python3 "$here/tests/scripts/flood_host.py" "$work" 25 "$long" "$short" >"$work/flood.out" &
flood=$!
while ! grep -q ready "$work/flood.out" 2>/dev/null; do sleep 0.2; done
echo "flood: $(ps -e | grep -c python) python processes"
"${PYBPFPROF:-$here/pybpfprof}" -v -d 5 -o "$work/host.collapsed" 2>"$work/summary" &
profiler=$!
sleep 0.8
"$python" "$here/tests/scripts/native_zlib_at_once.py" 1
wait $profiler || echo "pybpfprof exited $?"
# The workload's zlib samples: its caller's stacks reaching libz; the chain holds the caller.
zlib=$(grep -E 'native_zlib_at_once|compress_at_once' "$work/host.collapsed" | grep -E 'deflate|libz' |
       awk '{ n += $NF } END { print n + 0 }')
chain=$(grep -E 'compress_at_once:[0-9]+;[^;]*;deflate' "$work/host.collapsed" | awk '{ n += $NF } END { print n + 0 }')
all_zlib=$(grep -E 'deflate|libz\.so' "$work/host.collapsed" | grep -v libflood | awk '{ n += $NF } END { print n + 0 }')
echo "workload: $chain of $all_zlib zlib samples hold the chain ($zlib under its caller)"
grep -iE 'late unwinding|lost native|defer|tables|unwound' "$work/summary" || true
kill $flood 2>/dev/null || true
wait $flood 2>/dev/null || true

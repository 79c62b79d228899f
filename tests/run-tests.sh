#!/usr/bin/env bash
# Runs every test binary given, shows their output, and closes with one line
# "N passed, N failed, N skipped" summed over all of them (cmocka's counts).
set -u
passed=0 failed=0 skipped=0 broken=()
for test in "$@"; do
	echo "=== ${test##*/}"
	out=$("$test" 2>&1); rc=$?
	printf '%s\n' "$out"
	p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
	f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
	s=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
	passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
	# A binary that crashed or exited non-zero without reporting failures still fails.
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then failed=$((failed + 1)); broken+=("${test##*/} (exit $rc)"); fi
done
[ ${#broken[@]} -eq 0 ] || printf 'broken: %s\n' "${broken[@]}"
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

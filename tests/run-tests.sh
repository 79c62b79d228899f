#!/usr/bin/env bash
# Runs every test binary given, shows their output, and closes with one line
# "tests: N passed, N failed, N skipped" summed over all of them (cmocka's counts).
# An argument ending in ':' ("unit:", "e2e:") names the group of the binaries after it;
# each group closes with its own line "GROUP: N passed, N failed, N skipped".
set -u
# Job control: every background job gets its own process group.
set -m
# A binary still running after this many seconds hangs (the longest take a few minutes): its
# group is killed and it fails, so that make check ends and says where.
limit=${TEST_BINARY_LIMIT_S:-1500}
log=$(mktemp) || exit 1
job= watchdog=
trap 'rm -f "$log" "$log.overdue"' EXIT
# Interrupted, the running binary's group goes too (it is not in the terminal's group).
trap '[ -z "$job" ] || kill -KILL -- "-$job" 2>/dev/null; [ -z "$watchdog" ] || kill -- "-$watchdog" 2>/dev/null; exit 130' INT TERM HUP
passed=0 failed=0 skipped=0 broken=()
group= group_passed=0 group_failed=0 group_skipped=0

close_group() {
	[ -n "$group" ] && echo "$group: $group_passed passed, $group_failed failed, $group_skipped skipped"
	group_passed=0 group_failed=0 group_skipped=0
}

for test in "$@"; do
	if [ "${test%:}" != "$test" ]; then
		close_group
		group=${test%:}
		continue
	fi
	echo "=== ${test##*/}"
	# Each binary runs as a job of its own process group, its output to a file: a target a
	# failed test left running neither holds the output open (the suite would wait on it for
	# good) nor outlives its binary (it is killed with the group, and named here).
	rm -f "$log.overdue"
	started=$SECONDS
	"$test" > "$log" 2>&1 < /dev/null &
	job=$!
	# (the traps are the suite's: the watchdog's subshell must not remove the log when it ends)
	( trap - EXIT INT TERM HUP; sleep "$limit" && : > "$log.overdue" && kill -KILL -- "-$job" ) > /dev/null 2>&1 &
	watchdog=$!
	wait "$job"; rc=$?
	kill -- "-$watchdog" 2>/dev/null
	wait "$watchdog" 2>/dev/null
	watchdog=
	left=$(pgrep -g "$job" -d, -l)
	kill -KILL -- "-$job" 2>/dev/null
	job=
	out=$(cat "$log")
	printf '%s\n' "$out"
	[ ! -e "$log.overdue" ] || echo "${test##*/}: still running after $limit s, killed"
	[ -z "$left" ] || echo "${test##*/}: processes outlived it, killed: $left"
	echo "--- ${test##*/}: $((SECONDS - started)) s"
	p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
	f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
	s=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
	# A binary that crashed or exited non-zero without reporting failures still fails.
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; broken+=("${test##*/} (exit $rc)"); fi
	passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
	group_passed=$((group_passed + p)); group_failed=$((group_failed + f)); group_skipped=$((group_skipped + s))
done
close_group
[ ${#broken[@]} -eq 0 ] || printf 'broken: %s\n' "${broken[@]}"
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

#!/usr/bin/env bash
# Part of `sudo make bench` (also on its own): the overhead budget against the floor. The
# peers bench's target (bench/peer_work.py: DEPTH frames, half distinct code objects, then a
# timed 3:1 split) on a pyenv interpreter, attached with -p at RATE, ROUNDS of work, each way
# REPEAT times on a fresh target, the median kept:
#   unprofiled;
#   floor: perf record -F RATE -e cpu-clock (no stacks), the timer interrupts alone;
#   pybpfprof --no-native with no budget;
#   pybpfprof --no-native --max-overhead BUDGET.
# Printed: each way's slowdown (the target's CPU time for the work against unprofiled), the
# budgeted run's excess over the floor (to hold against the budget), its samples kept and the
# error of its weighted 3:1 split, and the load average. Figures are printed, never asserted.
#
# Environment: PYTHONS ("3.12.1 3.13.0", pyenv versions), DEPTH (900), RATE (10000),
#   BUDGET (1), ROUNDS (6000), REPEAT (3), WAIT (2: seconds the target spins before its work,
#   for the profiler to attach and the budget to settle).
set -euo pipefail
cd "$(dirname "$0")/.."
pyenv=$(tools/pyenv-versions.sh)

read -r -a versions <<<"${PYTHONS:-3.12.1 3.13.0}"
depth=${DEPTH:-900}
hz=${RATE:-10000}
budget=${BUDGET:-1}
rounds=${ROUNDS:-6000}
repeat=${REPEAT:-3}
wait_s=${WAIT:-2}
out=$(mktemp -d /tmp/pybpfprof-budget.XXXXXX)
trap 'rm -rf "$out"' EXIT
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

[ "$(id -u)" -eq 0 ] || { echo "budget.sh: must run as root" >&2; exit 1; }

# The weighted heavy and light ticks of a profile, and its samples in either.
split_of() { # file
	./pybpfprof dump --samples "$1" | awk -v hz="$hz" '
		/^Sample / { if (n++) count(); leaf = ""; weight = 1
			if (match($0, / time=[0-9]+/)) weight = substr($0, RSTART + 6, RLENGTH - 6) * hz / 1e6
			next }
		/^\tpython / { leaf = $0 }
		function count() { if (leaf ~ /name="heavy"/) { h += weight; k++ } else if (leaf ~ /name="light"/) { l += weight; k++ } }
		END { if (n) count(); printf "%.0f %.0f %d\n", h, l, k }'
}

# One run of the work on a fresh target, profiled as `how` says; prints
#   cpu_s truth_heavy truth_light heavy light kept
one_run() { # python how
	local python=$1 how=$2 target cpu th tl
	"$python" bench/peer_work.py "$depth" "$wait_s" "$rounds" >"$out/target.out" &
	target=$!
	sleep 0.3
	case $how in
	none) ;;
	floor) perf record -q -F "$hz" -e cpu-clock -p "$target" -o "$out/perf.data" >/dev/null 2>&1 || true ;;
	full) ./pybpfprof -q --no-native -F "$hz" -p "$target" -o "$out/p.mojo" 2>/dev/null || true ;;
	budget) ./pybpfprof --no-native --max-overhead "$budget" -F "$hz" -p "$target" -o "$out/p.mojo" 2>"$out/budget.log" || true ;;
	esac
	wait "$target" || true
	read -r _ _ _ cpu _ th _ tl <"$out/target.out"
	# Only the budgeted profile is read: a full one at 10 kHz and depth 900 dumps gigabytes of text.
	case $how in
	budget) echo "$cpu $th $tl $(split_of "$out/p.mojo")" ;;
	*) echo "$cpu $th $tl 0 0 0" ;;
	esac
	rm -f "$out/p.mojo" "$out/perf.data"
}

# The run with the median CPU time of `repeat` runs.
median_run() { # python how
	local _
	for _ in $(seq "$repeat"); do one_run "$1" "$2"; done | sort -n | sed -n "$(((repeat + 1) / 2))p"
}

printf '\noverhead budget: depth %s at %s Hz, --max-overhead %s (median of %s; load average at the start %s)\n' \
	"$depth" "$hz" "$budget" "$repeat" "$load_start"
printf '%-8s %9s %9s %9s %9s %10s %8s %10s %10s\n' python work_s floor full budget excess kept kept/s split_err
for version in "${versions[@]}"; do
	python=$pyenv/$version/bin/python3
	[ -x "$python" ] || { echo "budget.sh: no $python, skipped" >&2; continue; }
	base=$(median_run "$python" none)
	floor=$(median_run "$python" floor)
	full=$(median_run "$python" full)
	budgeted=$(median_run "$python" budget)
	awk -v v="$version" -v base="$base" -v floor="$floor" -v full="$full" -v budgeted="$budgeted" 'BEGIN {
		split(base, b); split(floor, f); split(full, p); split(budgeted, q)
		slow_f = 100 * (f[1] - b[1]) / b[1]; slow_p = 100 * (p[1] - b[1]) / b[1]; slow_q = 100 * (q[1] - b[1]) / b[1]
		err = (q[4] + q[5]) ? 100 * q[4] / (q[4] + q[5]) - 100 * q[2] / (q[2] + q[3]) : 0
		printf "%-8s %9.2f %+8.1f%% %+8.1f%% %+8.1f%% %+9.1fpt %8d %10.0f %+9.1fpt\n", v, b[1], slow_f, slow_p, slow_q,
			slow_q - slow_f, q[6], q[6] / q[1], err }'
	sed -n 's/^pybpfprof:   pid [0-9]* (python3) /  last budgeted run: /p' "$out/budget.log"
done
printf 'load average at the end: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
cat <<'TXT'
work_s: the target's CPU seconds for the work, unprofiled. floor, full, budget: its slowdown (its
CPU time for the same work) under perf record -e cpu-clock with no stacks, pybpfprof with no
budget, and pybpfprof --max-overhead; excess: the budgeted slowdown less the floor's, in points,
to hold against the budget (its walks' share of the target's CPU); kept: the budgeted profile's
samples in heavy() or light(), kept/s per CPU second of the work; split_err: its weighted heavy
share less the share the target measured itself, in points (with few samples kept, the
statistical error of a share is about 43/sqrt(kept) points).
TXT

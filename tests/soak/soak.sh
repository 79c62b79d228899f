#!/usr/bin/env bash
# The long whole-host run: pybpfprof with no target (every Python process on the host) while
# a driver starts about 200 short Python processes a minute (pyenv's versions in turn, each
# running a function of its own name, soak_<N>, then 6 short threads one after the other, each
# in a function of its own, soak_<N>_t<K>), and every tenth start a hostile one as
# nobody (tests/soak/hostile.py: a truncated, a FIFO'd, a symlinked library, 16384 symbols
# sharing a name, 200 code objects sharing a 1 MiB line table, 2,000 overlapping note
# sections, five sparse 510 MiB files whose sections span them; each forking a child every
# half second). Every 5 s the profiler's RSS and CPU time are read from /proc.
#
# Usage: tests/soak/soak.sh [MINUTES]   (else $SOAK_MINUTES, else 60; as root, after `make`)
#
# Passes (exit 0) when, at the end:
#  - the profiler is still running, and exits 0 on SIGINT;
#  - every benign process's soak_<N> and every one of its threads' soak_<N>_t<K> is in the profile;
#  - memory is flat: the largest RSS of the last quarter is at most 10% + 4 MiB above the
#    largest of the second quarter (the first quarter is warm-up: tables, caches and
#    buffers reach their working size);
#  - CPU is flat: the profiler's CPU share over the last quarter is at most 1.5 times that
#    of the second quarter, plus 3% of a core (the same load comes in all along);
#  - the summary prints its budgets line (exited processes forgotten, at least).
set -u

minutes=${1:-${SOAK_MINUTES:-60}}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
root=$(cd "$here/../.." && pwd -P)
profiler_bin=$root/pybpfprof
hostile_python=/usr/bin/python3.11 # nobody cannot run pyenv's (under /root)
per_minute=200
every_hostile=10
threads_per_process=6
sample_s=5

say() { echo "soak: $*"; }
die() { say "FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root"
[ -x "$profiler_bin" ] || die "no $profiler_bin (run make)"
pythons=()
for python in /root/.pyenv/versions/*/bin/python; do
	[ -x "$python" ] && pythons+=("$python")
done
[ ${#pythons[@]} -gt 0 ] || die "no pyenv Python in /root/.pyenv/versions"
[ -x "$hostile_python" ] || die "no $hostile_python for the hostile processes"

work=$(mktemp -d /tmp/pybpfprof-soak.XXXXXX)
chmod 0711 "$work"
mkdir "$work/hostile"
chown nobody: "$work/hostile"
say "$minutes min, $per_minute processes a minute (1 in $every_hostile hostile), ${#pythons[@]} Pythons; in $work"

profiler=
cleanup() {
	[ -n "$profiler" ] && kill -9 "$profiler" 2>/dev/null
	jobs -p | xargs -r kill -9 2>/dev/null
	true
}
trap cleanup EXIT

"$profiler_bin" -v -o "$work/soak.bin" 2>"$work/profiler.err" &
profiler=$!
sleep 3
kill -0 "$profiler" 2>/dev/null || die "the profiler did not start: $(cat "$work/profiler.err")"
ticks_per_s=$(getconf CLK_TCK)

# elapsed_s rss_kib cpu_ticks, every sample_s seconds, until the profiler is gone.
monitor() {
	local start=$SECONDS rss ticks stat
	while kill -0 "$profiler" 2>/dev/null; do
		rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$profiler/status" 2>/dev/null)
		stat=$(cat "/proc/$profiler/stat" 2>/dev/null) || break
		stat=${stat##*) }
		ticks=$(echo "$stat" | awk '{print $12 + $13}')
		[ -n "$rss" ] && echo "$((SECONDS - start)) $rss $ticks" >>"$work/usage.tsv"
		sleep "$sample_s"
	done
}
monitor &
monitor_pid=$!

# A benign process: its main thread runs soak_<N> twice for 30 ms; then, one after the other
# (so that each has a CPU to itself), threads_per_process threads run soak_<N>_t<K> twice
# for 10 ms each and end.
benign() { # seq python
	local name=soak_$1
	exec "$2" -c "
import threading, time
def spin(seconds):
    end = time.time() + seconds
    while time.time() < end:
        pass
def $name():
    spin(0.03)
$(for k in $(seq 1 "$threads_per_process"); do printf 'def %s_t%d():\n    spin(0.01)\n    time.sleep(0.02)\n    spin(0.01)\n' "$name" "$k"; done)
for _ in range(2):
    $name()
    time.sleep(0.2)
for k in range(1, $threads_per_process + 1):
    thread = threading.Thread(target=globals()['${name}_t%d' % k])
    thread.start()
    thread.join()
"
}

hostile_modes=(truncate fifo symlink names linetable notes sparse)
hostile() { # seq
	local mode=${hostile_modes[$(($1 / every_hostile % ${#hostile_modes[@]}))]}
	local dir=$work/hostile/$1
	mkdir "$dir" && chown nobody: "$dir"
	exec setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$hostile_python" "$here/hostile.py" "$mode" "$dir" 6
}

# The driver: one start every 60/per_minute s, by the clock (a slow start does not slow the rate).
interval_ms=$((60000 / per_minute))
start_ms=$(date +%s%3N)
end_ms=$((start_ms + minutes * 60000))
next_ms=$(date +%s%3N)
seq=0 benign_count=0 hostile_count=0
: >"$work/benign.txt"
while [ "$next_ms" -lt "$end_ms" ]; do
	seq=$((seq + 1))
	if [ $((seq % every_hostile)) = 0 ]; then
		hostile "$seq" >/dev/null 2>>"$work/hostile.err" &
		hostile_count=$((hostile_count + 1))
	else
		python=${pythons[$((seq % ${#pythons[@]}))]}
		benign "$seq" "$python" >/dev/null 2>>"$work/benign.err" &
		echo "soak_$seq $(($(date +%s%3N) - start_ms)) ${python#/root/.pyenv/versions/} $!" >>"$work/benign.txt"
		for k in $(seq 1 "$threads_per_process"); do
			echo "soak_${seq}_t$k $(($(date +%s%3N) - start_ms)) ${python#/root/.pyenv/versions/} $!" >>"$work/benign.txt"
		done
		benign_count=$((benign_count + 1))
	fi
	next_ms=$((next_ms + interval_ms))
	now_ms=$(date +%s%3N)
	[ "$next_ms" -gt "$now_ms" ] && sleep "$(printf '0.%03d' $((next_ms - now_ms)))"
done
say "started $benign_count benign processes ($((benign_count * threads_per_process)) threads besides their main ones) and $hostile_count hostile ones"
sleep 8 # the last ones end (hostile ones run 6 s)

alive=yes
kill -0 "$profiler" 2>/dev/null || alive=no
kill -INT "$profiler" 2>/dev/null
wait "$profiler"
status=$?
profiler=
wait "$monitor_pid" 2>/dev/null
cat "$work/profiler.err"

failures=()
[ "$alive" = yes ] || failures+=("the profiler died during the run")
[ "$status" = 0 ] || failures+=("the profiler exited $status")
grep -q '^pybpfprof: budgets: ' "$work/profiler.err" || failures+=("no budgets line in the summary")

# Every benign process's function is in the profile.
if "$profiler_bin" convert "$work/soak.bin" -o "$work/soak.collapsed" 2>"$work/convert.err"; then
	grep -oE 'soak_[0-9]+(_t[0-9]+)?' "$work/soak.collapsed" | sort -u >"$work/found.txt"
	cut -d' ' -f1 "$work/benign.txt" | sort -u >"$work/wanted.txt"
	missing=$(comm -23 "$work/wanted.txt" "$work/found.txt" | wc -l)
	say "benign processes and threads found in the profile: $(($(wc -l <"$work/wanted.txt") - missing))/$(wc -l <"$work/wanted.txt")"
	if [ "$missing" != 0 ]; then
		# name, ms after the driver started, Python, pid
		comm -23 "$work/wanted.txt" "$work/found.txt" | join - <(sort "$work/benign.txt") >"$work/missing.txt"
		failures+=("$missing benign processes or threads missing from the profile: $(head -5 "$work/missing.txt" | tr '\n' ',')")
	fi
else
	failures+=("the profile does not convert: $(cat "$work/convert.err")")
fi

# Flat memory and CPU: quarters of the samples taken.
read -r verdict figures < <(awk -v tps="$ticks_per_s" '
	{ t[NR] = $1; rss[NR] = $2; cpu[NR] = $3 }
	END {
		n = NR; q = int(n / 4)
		if (q < 2) { print "short only " n " samples"; exit }
		for (i = q + 1; i <= 2 * q; i++) if (rss[i] > base) base = rss[i]
		for (i = n - q + 1; i <= n; i++) if (rss[i] > last) last = rss[i]
		base_cpu = (cpu[2 * q] - cpu[q + 1]) / tps / (t[2 * q] - t[q + 1]) * 100
		last_cpu = (cpu[n] - cpu[n - q + 1]) / tps / (t[n] - t[n - q + 1]) * 100
		rss_ok = last <= base * 1.10 + 4096
		cpu_ok = last_cpu <= base_cpu * 1.5 + 3
		printf "%s rss_kib second_quarter_max=%d last_quarter_max=%d first=%d; cpu_percent second_quarter=%.2f last_quarter=%.2f\n",
			(rss_ok && cpu_ok) ? "ok" : (!rss_ok ? "rss" : "cpu"), base, last, rss[1], base_cpu, last_cpu
	}' "$work/usage.tsv")
say "$figures"
case $verdict in
ok) ;;
rss) failures+=("memory grew: $figures") ;;
cpu) failures+=("CPU grew: $figures") ;;
*) failures+=("too few usage samples: $figures") ;;
esac

if [ ${#failures[@]} -gt 0 ]; then
	for failure in "${failures[@]}"; do say "FAIL: $failure"; done
	say "kept $work"
	exit 1
fi
say "ok"
rm -rf "$work"

#!/usr/bin/env bash
# Part of `sudo make bench` (also run alone): the profiler's resident memory, its own and its
# helpers'. For each run: the profiler's VmRSS and VmHWM a second before its end; the peak of the
# child that loaded the BPF programs (sampler/bpf_loader.c; it ends before sampling starts, its
# figure is from the --bpf-stats summary); the parser workers' VmHWM summed (how many there were).
# Figures are printed, never asserted. PROFILER=path measures another build; SKIP_LONG=1 leaves
# out the 510 s row.
set -euo pipefail
cd "$(dirname "$0")/.."
versions=$(tools/pyenv-versions.sh)
python=${PYTHON:-"$versions"/3.12.1/bin/python}
[ -x "$python" ] || python=/usr/bin/python3
profiler_bin=${PROFILER:-./pybpfprof}
out=$(mktemp -d /tmp/pybpfprof-memory.XXXXXX)
trap 'rm -rf "$out"' EXIT

# KiB of a /proc/PID/status field, 0 if the process is gone.
status_kib() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }

# KiB of a /proc/PID/smaps_rollup field (Pss: its share of the pages it maps, a library's
# pages shared with the profiler counted once between them), 0 if the process is gone.
rollup_kib() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/smaps_rollup" 2>/dev/null || echo 0; }

# The parser workers' VmHWM summed, their count, their Pss now summed, and their own pages now
# summed (Private_Clean + Private_Dirty: pages no other process maps, what the workers add to the
# profiler's own RSS, which counts the pages they share with it already): "KiB count KiB KiB".
workers_kib() {
	local total=0 count=0 pss=0 own=0 pid kib
	for pid in $(pgrep -P "$1" -x pybpfprof-parse || true); do
		kib=$(status_kib "$pid" VmHWM)
		total=$((total + ${kib:-0})) count=$((count + 1))
		kib=$(rollup_kib "$pid" Pss)
		pss=$((pss + ${kib:-0}))
		kib=$(( $(rollup_kib "$pid" Private_Clean) + $(rollup_kib "$pid" Private_Dirty) ))
		own=$((own + kib))
	done
	echo "$total $count $pss $own"
}

# Two idle Pythons of every version pyenv holds (2.7, 3.6-3.13), each with zlib and json loaded:
# a host's population of distinct interpreters, whose unwind and symbol tables whole-host runs hold.
start_idle_pythons() {
	local version
	for version in "$versions"/*/bin/python; do
		for _ in 1 2; do
			"$version" -c 'import time, zlib, json
while True: time.sleep(0.5); sum(range(20000))' & busy+=($!)
		done
	done
}

# ARGS SECONDS [BUSY_COUNT] [attach|host]: busy 32-frame Pythons; attach: profile the first with
# -p; host: idle Pythons of every version beside them (start_idle_pythons).
rss_of_run() {
	local args=$1 seconds=$2 busy_count=${3:-1} attach=${4:-} profiler rss hwm workers busy=()
	for _ in $(seq "$busy_count"); do
		"$python" bench/depth_work.py 32 $((seconds + 5)) >/dev/null & busy+=($!)
	done
	[ "$attach" = host ] && start_idle_pythons
	[ "$attach" = attach ] && args="$args -p ${busy[0]}"
	sleep 0.3
	# shellcheck disable=SC2086
	"$profiler_bin" --bpf-stats $args -d "$seconds" -o "$out/rss.mojo" 2>"$out/rss.log" & profiler=$!
	sleep $((seconds - 1))
	rss=$(status_kib "$profiler" VmRSS)
	hwm=$(status_kib "$profiler" VmHWM)
	workers=$(workers_kib "$profiler")
	wait "$profiler" || true
	kill "${busy[@]}" 2>/dev/null; wait "${busy[@]}" 2>/dev/null || true
	awk -v r="${rss:-0}" -v h="${hwm:-0}" -v w="$workers" \
	    -v l="$(sed -n 's/.*the BPF loader (a child, ended before sampling) \([0-9.]*\) MiB.*/\1/p' "$out/rss.log")" \
	    -v n="$(sed -n 's/^pybpfprof: \([0-9]*\) samples in.* from \([0-9]*\) Python process.*/\1 \2/p' "$out/rss.log")" \
	    -v g="$(sed -n 's/^pybpfprof: ring buffer: \([0-9]*\) KiB.*/\1/p' "$out/rss.log")" \
	    'BEGIN { split(w, wk, " "); split(n, nn, " ")
		printf "%9.1f %9.1f %10s %9.1f %8d %11.1f %11.1f %9d %8d %8s", r / 1024, h / 1024, l == "" ? "-" : sprintf("%.1f", l),
			wk[1] / 1024, wk[2], wk[3] / 1024, wk[4] / 1024, nn[1], nn[2], g == "" ? "-" : sprintf("%.0f", g / 1024) }'
}

printf 'profiler memory (MiB): the profiler a second before the end of the run; its BPF loader; its parser workers\n'
printf '%-38s %9s %9s %10s %9s %8s %11s %11s %9s %8s %8s\n' run rss peak loader_peak workers workers_n workers_pss workers_own samples pythons ring_mib
printf '%-38s %s\n' "1 kHz, -p a busy 3.12, native, 20 s" "$(rss_of_run '-F 1000' 20 1 attach)"
printf '%-38s %s\n' "1 kHz, whole host, --no-native, 20 s" "$(rss_of_run '-F 1000 --no-native' 20)"
printf '%-38s %s\n' "1 kHz, whole host, native, 20 s" "$(rss_of_run '-F 1000' 20)"
printf '%-38s %s\n' "1 kHz, whole host + 18 idle, native" "$(rss_of_run '-F 1000' 20 1 host)"
printf '%-38s %s\n' "20 kHz, whole host, --no-native, 25 s" "$(rss_of_run '-F 20000 --no-native' 25)"
printf '%-38s %s\n' "20 kHz, whole host, native, 25 s" "$(rss_of_run '-F 20000' 25)"
# A million samples at 1 kHz: a busy Python on each of the 2 CPUs for 510 s (the longest row).
[ "${SKIP_LONG:-0}" = 1 ] || printf '%-38s %s\n' "1 kHz, whole host, native, 510 s" "$(rss_of_run '-F 1000' 510 2)"
cat <<'TXT'
rss, peak: the profiler's VmRSS and VmHWM. loader_peak: the peak resident memory of the child that
  loaded the BPF programs (libbpf's parse of the kernel's BTF; it ends before sampling starts).
  workers: the parser workers' VmHWM summed (workers_n of them; unprivileged, each capped).
  workers_pss: their Pss summed a second before the end: what they hold then, a library's pages
  shared with the profiler counted once between them (an idle worker gives its heap back).
  workers_own: the pages only the workers map (private clean and dirty), summed: what they add
  to the profiler's rss, which counts in full the library pages they share with it.
  pythons: the Python processes profiled (whole host: every one on the machine, others' too).
  "+ 18 idle": a busy 3.12 and two idle Pythons of each of the 9 pyenv versions, 20 s.
  ring_mib: the record ring's size at the end (sized from the rate and the CPUs, grown from the
  records' mean size; every page resident and mapped twice, so twice this counts in rss).
TXT

#!/usr/bin/env bash
# `sudo make bench`: what pybpfprof costs, at 1 kHz and 20 kHz, on a fixed
# CPU-bound workload with a known 3:1 split. Figures are printed, never asserted.
set -euo pipefail
cd "$(dirname "$0")/.."
versions=$(tools/pyenv-versions.sh)

python=${PYTHON:-"$versions"/3.12.1/bin/python}
[ -x "$python" ] || python=/usr/bin/python3
rounds=${ROUNDS:-4500}
BUILD_DIR=${BUILD:-build}
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

printf '\ncost by rate (native stacks on, the default)\n'
printf '%-8s %10s %11s %10s %10s %9s %9s %6s %11s %11s %9s %8s %8s\n' rate bpf_ns/smp cpu_us/smp cpu%core slowdown vs_floor received expect lost mojo_B/smp tach_B/smp start_s first_ms
for hz in 1000 20000; do
	runs=()
	for _ in 1 2 3; do
		log="$out/run.log"
		elapsed=$(./pybpfprof --bpf-stats -F "$hz" -o "$out/b.mojo" -o "$out/b.bin" -- "$python" bench/fixed_work.py "$rounds" 2>"$log")
		samples=$(sed -n 's/^pybpfprof: \([0-9]*\) samples in \([0-9.]*\) s.*; \([0-9]*\) lost$/\1 \2 \3/p' "$log")
		bpf_ns=$(sed -n 's/.* \([0-9]*\) ns per target sample$/\1/p' "$log")
		cpu_s=$(sed -n 's/^pybpfprof: cpu: \([0-9.]*\) s user+sys while sampling.*/\1/p' "$log")
		setup_s=$(sed -n 's/.*, \([0-9.]*\) s to start$/\1/p' "$log")
		first_ms=$(sed -n 's/^pybpfprof: first sample written \([0-9.]*\) ms after the start$/\1/p' "$log")
		read -r count secs lost <<<"$samples"
		mojo=$(stat -c %s "$out/b.mojo"); tach=$(stat -c %s "$out/b.bin")
		runs+=("$elapsed $bpf_ns $cpu_s $count $secs $lost $mojo $tach $setup_s $first_ms")
	done
	floor=$(floor_of "$hz")
	# The run with the median elapsed time stands for this rate.
	line=$(printf '%s\n' "${runs[@]}" | sort -n | sed -n 2p)
	read -r elapsed bpf_ns cpu_s count secs lost mojo tach setup_s first_ms <<<"$line"
	awk -v hz="$hz" -v e="$elapsed" -v b="$base" -v f="$floor" -v ns="$bpf_ns" -v cpu="$cpu_s" -v n="$count" \
	    -v s="$secs" -v lost="$lost" -v mojo="$mojo" -v tach="$tach" -v setup="$setup_s" -v first="$first_ms" 'BEGIN {
		printf "%-8s %10d %11.1f %9.2f%% %9.1f%% %8.1f%% %9d %6d %11d %11.1f %9.1f %8.3f %8.1f\n",
		hz "Hz", ns, cpu * 1e6 / n, 100 * cpu / s, 100 * (e - b) / b, 100 * (e - f) / f, n, e * hz, lost,
		mojo / n, tach / n, setup, first }'
done
# The profiler's own per-frame work for a stack it has seen before, without BPF or a target:
# the same synthetic record resolved (prefetch and resolve, as the session does) and written.
printf '\nuserspace ns per frame, repeated stack, depth 30/900, MOJO+Tachyon (bench/stack_repeat.c)\n'
"$BUILD_DIR"/bench/stack_repeat
# Wall mode: every thread at every interval, running or not (here all waiting in time.sleep,
# three Python calls deep), attached with -p: one task iterator over the target's threads.
printf '\nwall mode at 100 Hz (-p, threads in time.sleep; median of 3 by profiler CPU)\n'
printf '%-8s %9s %13s %11s %10s %9s %8s\n' threads samples us/thr/intv cpu_us/pass cpu%core passes skipped
for threads in 1 10 100; do
	runs=()
	for _ in 1 2 3; do
		"$python" bench/wall_threads.py "$threads" 6 & target=$!
		sleep 0.5
		./pybpfprof --bpf-stats --mode wall -F 100 -d 4 -p "$target" -o "$out/wall.mojo" 2>"$out/wall.log" || true
		kill "$target" 2>/dev/null; wait "$target" 2>/dev/null || true
		count=$(sed -n 's/^pybpfprof: \([0-9]*\) samples in.*/\1/p' "$out/wall.log")
		bpf_ns=$(sed -n 's/.* \([0-9]*\) ns per target sample$/\1/p' "$out/wall.log")
		cpu_s=$(sed -n 's/^pybpfprof: cpu: \([0-9.]*\) s user+sys while sampling.*/\1/p' "$out/wall.log")
		share=$(sed -n 's/.*while sampling (\([0-9.]*\)% of a core).*/\1/p' "$out/wall.log")
		read -r passes skipped <<<"$(sed -n 's/^pybpfprof: wall: \([0-9]*\) passes, \([0-9]*\) skipped.*/\1 \2/p' "$out/wall.log")"
		runs+=("$share $count $bpf_ns $cpu_s $passes $skipped")
	done
	line=$(printf '%s\n' "${runs[@]}" | sort -n | sed -n 2p)
	read -r share count bpf_ns cpu_s passes skipped <<<"$line"
	awk -v t="$threads" -v n="$count" -v ns="$bpf_ns" -v cpu="$cpu_s" -v p="$passes" -v sk="$skipped" -v sh="$share" 'BEGIN {
		printf "%-8s %9d %13.1f %11.0f %9.2f%% %9d %8d\n", t, n, ns / 1000, p ? cpu * 1e6 / p : 0, sh, p, sk }'
done

# BPF cost by stack depth: every frame runs its own code object (as in real programs), so
# each one costs the walker a read of that object for its checksum.
printf '\nBPF ns per target sample by depth (1 kHz, median of 3; every frame its own code object)\n'
printf '%-8s %8s %8s %8s %8s\n' python 5 32 128 500
for version in 2.7 3.10 3.11 3.12 3.13; do
	interp=$(ls -d "$versions"/"$version".*/bin/python 2>/dev/null | head -1)
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

# Deep and distinct stacks at 10 kHz on 3.12 and 3.13: BPF time with code identities trusted
# and read, and the target's slowdown beside perf's floor (bench/depth_cost.sh).
bench/depth_cost.sh
# record --opcodes: the profiler's own CPU per sample with and without (bench/opcodes.sh).
bench/opcodes.sh

# Mixed stacks: the BPF cost of the native walk by native x Python depth, on 3.12 (the
# activation found by the C-stack shim). Native frames: the mean per sample that the walk
# went through, counted in a --native=all collapsed file (every frame BPF walked).
mixed_python="$versions"/3.12.1/bin/python
[ -x "$mixed_python" ] || mixed_python=$python
printf '\nmixed stacks: BPF ns per target sample, native stacks on vs --no-native (1 kHz, median of 3; %s)\n' "$mixed_python"
printf '%-8s %8s %8s %10s %12s %8s\n' py_depth nesting native ns_native ns_no_native ratio
bpf_ns_of() { sed -n 's/.* \([0-9]*\) ns per target sample$/\1/p' "$1"; }
native_frames_of() {
	awk '{ weight = $NF; n = gsub(/_\[n\]/, ""); frames += n * weight; total += weight }
	     END { printf "%.0f", total ? frames / total : 0 }' "$1"
}
for nesting in 0 4 16; do
	for depth in 5 32 128; do
		on=(); off=()
		for _ in 1 2 3; do
			./pybpfprof --bpf-stats --native=all -F 1000 -o "$out/mixed.collapsed" -- \
				"$mixed_python" bench/mixed_work.py "$depth" "$nesting" 1 2>"$out/mixed.log" >/dev/null
			on+=("$(bpf_ns_of "$out/mixed.log")")
			./pybpfprof --bpf-stats --no-native -F 1000 -o "$out/flat.mojo" -- \
				"$mixed_python" bench/mixed_work.py "$depth" "$nesting" 1 2>"$out/flat.log" >/dev/null
			off+=("$(bpf_ns_of "$out/flat.log")")
		done
		ns_on=$(printf '%s\n' "${on[@]}" | median); ns_off=$(printf '%s\n' "${off[@]}" | median)
		awk -v d="$depth" -v k="$nesting" -v nf="$(native_frames_of "$out/mixed.collapsed")" -v a="$ns_on" -v b="$ns_off" \
			'BEGIN { printf "%-8s %8s %8s %10s %12s %7.1fx\n", d, k, nf, a, b, b ? a / b : 0 }'
	done
done

# Late unwinding (doc/internals.md): a whole-host run with a zlib workload started after it, so
# that its first samples come before its files' tables. BPF's cost per stack copy (the copy and
# its larger record, --bpf-stats) and userspace's per sample unwound from a copy (-v).
printf '\nlate unwinding: a whole-host run, %s started after it (BPF ns per stack copy, userspace us per sample)\n' "$mixed_python"
./pybpfprof -v --bpf-stats -d 3 -o "$out/late.mojo" 2>"$out/late.log" &
late_profiler=$!
sleep 0.8
"$mixed_python" tests/scripts/native_zlib_at_once.py 0.5
wait "$late_profiler" || true
grep -E 'bpf: [0-9]+ stack copies|late unwinding:' "$out/late.log" | sed 's/^pybpfprof: //' || true

# Unwind tables: the summary's line for one run, then the rows of each file on their own.
printf '\nunwind tables of a run (%s bench/mixed_work.py 32 4)\n' "$mixed_python"
./pybpfprof -v -F 1000 -o "$out/mixed.mojo" -- "$mixed_python" bench/mixed_work.py 32 4 1 2>&1 >/dev/null | grep 'unwind tables:' || true
libpython=$(ldd "$mixed_python" | awk '/libpython/ { print $3 }')
libc=$(ldd "$mixed_python" | awk '/libc\.so/ { print $3 }')
# numpy's core module: the bench interpreter's, else Debian's (python3-numpy, a make deps package).
numpy_of='import numpy.core._multiarray_umath as m; print(m.__file__)'
numpy_core=$("$mixed_python" -c "$numpy_of" 2>/dev/null || /usr/bin/python3 -c "$numpy_of" 2>/dev/null || true)
printf '\nunwind table per file (rows, KiB in the BPF rows map)\n'
"$BUILD_DIR"/bench/unwind_rows $libpython "$libc" $numpy_core | sed '$d'
[ -n "$numpy_core" ] || echo "       -         - numpy: not installed for $mixed_python nor /usr/bin/python3"

# Building a table: one pass over each FDE's CFI, against libdw replaying it for every row.
sid_python=/var/cache/pybpfprof/sid/usr/bin/python3.15
[ -r "$sid_python" ] || sid_python=
printf '\nunwind table build time\n'
"$BUILD_DIR"/bench/unwind_rows --build-time $libpython "$libc" $sid_python

# The parser worker (doc/security.md): a file's symbols, discovery's verdict on it and its unwind
# table, read in it against in process (the goal: tables at most 20% slower, cpu_x <= 1.2).
printf '\nnative symbols, discovery verdicts and unwind tables per file: in the parser worker against in process (ms; cpu: root + worker; pinned: chrt -f 50, one CPU)\n'
chrt -f 50 taskset -c 1 "$BUILD_DIR"/bench/parser_cost ./pybpfprof $libpython "$libc" $numpy_core $sid_python || true

# A normal host's discovery and tables (issue 21's acceptance: at most 20% slower): every
# executable file that Pythons of several versions map with common modules imported (numpy
# where it is installed), each judged and its table built, the whole set each way.
host_imports='import sys, json, decimal, ssl, sqlite3, ctypes, hashlib, socket, select, zlib, datetime, math
try:
    import numpy
except Exception:
    pass
sys.stdout.write("ready\n"); sys.stdout.flush(); sys.stdin.read()'
host_files=$(mktemp)
for py in "$versions"/2.7.18/bin/python "$versions"/3.8.18/bin/python "$versions"/3.12.1/bin/python /usr/bin/python3 \
	"${sid_python:+chroot /var/cache/pybpfprof/sid /usr/bin/python3.15}"; do
	command -v "${py%% *}" >/dev/null || continue
	coproc host_python { exec $py -c "$host_imports" 2>/dev/null; }
	read -r _ <&"${host_python[0]}" || true
	# the Python's own pid (chroot execs it)
	awk '$2 ~ /x/ && $6 ~ /^\// { print $6 }' /proc/"$host_python_PID"/maps >>"$host_files" 2>/dev/null || true
	exec {host_python[1]}>&-
	wait "$host_python_PID" 2>/dev/null || true
done
mapfile -t host_set < <(sort -u "$host_files" | grep -v -e '(deleted)' -e '^/memfd:')
rm -f "$host_files"
printf '\na host'"'"'s discovery and tables: %d files from the executable mappings of Pythons 2.7, 3.8, 3.12, 3.11 (Debian)%s with common modules, pinned (chrt -f 50, one CPU)\n' \
	"${#host_set[@]}" "${sid_python:+ and 3.15 (sid)}"
chrt -f 50 taskset -c 1 "$BUILD_DIR"/bench/parser_cost --host ./pybpfprof "${host_set[@]}" || true

# A host running 20 distinct Pythons: the distinct interpreter files here (each version's
# libpython, or its binary when static), their tables summed, scaled to 20; libc once.
interpreters=()
for dir in "$versions"/*/; do
	lib=$(ls "$dir"lib/libpython*.so.1.0 2>/dev/null | head -1)
	if [ -n "$lib" ]; then interpreters+=("$lib"); else
		interpreters+=("$(ls "$dir"bin/python[0-9].* 2>/dev/null | grep -v config | head -1)"); fi
done
[ -x /usr/bin/python3.11 ] && interpreters+=(/usr/bin/python3.11)
printf '\nunwind tables for 20 distinct Pythons (from %d here)\n' "${#interpreters[@]}"
"$BUILD_DIR"/bench/unwind_rows "${interpreters[@]}" >"$out/interp.txt"
cat "$out/interp.txt"
libc_rows=$("$BUILD_DIR"/bench/unwind_rows "$libc" | awk 'NR == 1 { print $1 }')
awk -v libc="$libc_rows" '/ total of / { per = $1 / $5; rows = 20 * per + libc
	printf "20 interpreters + libc: ~%.0f rows, %.1f MiB (%.1f%% of the 4194304-row map)\n",
		rows, rows * 8 / 1048576, 100 * rows / 4194304 }' "$out/interp.txt"

# From a target's first Python sample to its first full native stack (Python frames over a
# native root, _start, with --native=all keeping the bootstrap): how long its unwind tables
# take to be there. Launched (from exec) and attached with -p.
first_full_ms() {
	./pybpfprof dump --samples "$1" 2>/dev/null | awk '
		function close_sample() {
			if (!python) return
			if (first == "") first = ts
			if (full == "" && root ~ /name="_start"/) full = ts
		}
		/^Sample / { close_sample(); python = 0; root = ""
			     for (i = 1; i <= NF; i++) if ($i ~ /^ts=/) ts = substr($i, 4) + 0
			     next }
		/^\t/ { if (root == "") root = $0; if ($1 == "python") python = 1 }
		END { close_sample(); if (full == "") print "never"; else printf "%.1f\n", (full - first) / 1000 }'
}
printf '\nfirst sample to first full native stack (ms, median of 3)\n'
launched=$(for _ in 1 2 3; do
	./pybpfprof -q --native=all -F 1000 -o "$out/first.bin" -- "$mixed_python" bench/mixed_work.py 32 4 1 >/dev/null 2>&1
	first_full_ms "$out/first.bin"
done | median)
attached=$(for _ in 1 2 3; do
	"$mixed_python" bench/mixed_work.py 32 4 3 & target=$!
	sleep 0.5
	./pybpfprof -q --native=all -F 1000 -d 1 -p "$target" -o "$out/first.bin" >/dev/null 2>&1
	wait "$target" 2>/dev/null || true
	first_full_ms "$out/first.bin"
done | median)
printf 'launched: %s  attached (-p): %s\n' "$launched" "$attached"

# Memory and the highest rate: the profiler's resident set a second before the end of whole-host
# runs (short ones at 1 and 20 kHz, --no-native and native, and one of a million samples at
# 1 kHz), and the highest rate per CPU at which a 32-frame stack loses no sample.
# The profiler's memory, its BPF loader's and its parser workers' (bench/memory.sh).
printf '\n'
bench/memory.sh

# Whole host: what a process that is not Python pays (each tick that lands on it runs the
# sample program as far as its target lookup): gzip, timed without and with the profiler.
gzip_seconds() {
	local start end
	start=$(date +%s%N)
	head -c 300M /dev/zero | gzip -1 >/dev/null
	end=$(date +%s%N)
	echo "$(((end - start) / 1000000))"
}
printf '\nwhole host: a process that is not Python (gzip -1 of 300 MB, ms, median of 3)\n'
plain=$(for _ in 1 2 3; do gzip_seconds; done | median)
./pybpfprof -q -F 1000 -o "$out/host.mojo" & host_profiler=$!
sleep 2
profiled=$(for _ in 1 2 3; do gzip_seconds; done | median)
kill -INT "$host_profiler"; wait "$host_profiler" || true
awk -v a="$plain" -v b="$profiled" 'BEGIN { printf "unprofiled %d ms, whole host at 1 kHz %d ms: %+.1f%%\n", a, b, a ? 100 * (b - a) / a : 0 }'

printf '\nsustained rate: 32-frame stacks, --no-native, 5 s (lost samples; profiler CPU %% of a core)\n'
printf '%-8s %9s %6s %9s\n' rate samples lost cpu%core
for hz in 10000 20000 40000; do
	./pybpfprof --bpf-stats --no-native -F "$hz" -o "$out/rate.mojo" -- "$python" bench/depth_work.py 32 5 2>"$out/rate.log" >/dev/null
	sed -n 's/^pybpfprof: \([0-9]*\) samples in [0-9.]* s.*; \([0-9]*\) lost$/\1 \2/p; s/^pybpfprof: cpu: [0-9.]* s user+sys while sampling (\([0-9.]*\)% of a core).*/\1/p' \
		"$out/rate.log" | xargs | awk -v hz="$hz" '{ printf "%-8s %9d %6d %8.1f%%\n", hz "Hz", $1, $2, $3 }'
done

# Deep stacks beside two busy processes: the record ring grows from the records it sees (a
# 900-frame record is some 15 KiB; a ring sized for 2 KiB ones lost 8% of them at 1 kHz). A
# 900-frame stack launched at 1 kHz for 4 s with two CPU-bound loops running; then attached,
# with the profiler stopped for 300 ms in the middle (what arrives meanwhile waits in the ring).
deep_ring_run() {
	local stop_ms=$1 target profiler hogs=()
	for _ in 1 2; do sh -c 'while :; do :; done' & hogs+=($!); done
	if [ "$stop_ms" = 0 ]; then
		./pybpfprof -F 1000 -o "$out/deep.mojo" -- "$python" bench/depth_work.py 900 4 2>"$out/deep.log" >/dev/null
	else
		"$python" bench/depth_work.py 900 8 >/dev/null & target=$!
		sleep 0.5
		./pybpfprof -F 1000 -d 5 -p "$target" -o "$out/deep.mojo" 2>"$out/deep.log" & profiler=$!
		sleep 2
		kill -STOP "$profiler"; sleep "$(awk -v ms="$stop_ms" 'BEGIN { print ms / 1000 }')"; kill -CONT "$profiler"
		wait "$profiler" || true
		kill "$target" 2>/dev/null; wait "$target" 2>/dev/null || true
	fi
	kill "${hogs[@]}"; wait "${hogs[@]}" 2>/dev/null || true
	sed -n 's/^pybpfprof: \([0-9]*\) samples in [0-9.]* s.*; \([0-9]*\) lost;.*/\1 \2/p' "$out/deep.log" |
		awk -v ring="$(./pybpfprof dump "$out/deep.mojo" 2>/dev/null | sed -n 's/.*key="ring_buffer_bytes" value="\([0-9]*\)".*/\1/p')" \
		'{ printf "%9d %6d %6.2f%% %8d\n", $1, $2, $1 + $2 ? 100 * $2 / ($1 + $2) : 0, ring / 1024 }'
}
printf '\ndeep stacks beside two busy processes: 900 frames at 1 kHz (lost samples; the ring at the end)\n'
printf '%-30s %9s %6s %7s %8s\n' run samples lost lost% ring_KiB
for _ in 1 2 3; do printf '%-30s %s\n' "launched, 4 s" "$(deep_ring_run 0)"; done
for _ in 1 2 3; do printf '%-30s %s\n' "attached, stopped 300 ms" "$(deep_ring_run 300)"; done

# diff on large profiles: two collapsed files of distinct stacks 30 frames deep, NEW with one
# function twice as heavy; the table, the graph and the pprof pair at once.
printf '\ndiff of two large profiles (collapsed, 30 frames per stack; median of 3)\n'
printf '%-8s %8s %10s %10s %10s\n' stacks wall_s svg_KiB pprof_KiB rss_MiB
for stacks in 10000 50000; do
	for side in base new; do
		awk -v n="$stacks" -v side="$side" 'BEGIN { srand(side == "base" ? 1 : 2)
			for (i = 0; i < n; i++) { s = "main"
				for (d = 1; d < 30; d++) s = s ";f" int(rand() * (d < 4 ? 8 : 40)) "_" d
				w = int(rand() * 1000) + 1; if (side == "new" && s ~ /;f3_2;/) w *= 2
				print s, w } }' >"$out/$side.collapsed"
	done
	runs=()
	for _ in 1 2 3; do
		/usr/bin/time -f '%e %M' -o "$out/diff.time" ./pybpfprof diff "$out/base.collapsed" "$out/new.collapsed" \
			-o "$out/d.svg" -o "$out/d.txt" -o "$out/d.pb.gz"
		runs+=("$(cat "$out/diff.time")")
	done
	read -r wall rss_kib <<<"$(printf '%s\n' "${runs[@]}" | sort -n | sed -n 2p)"
	awk -v n="$stacks" -v w="$wall" -v svg="$(stat -c %s "$out/d.svg")" -v pb="$(stat -c %s "$out/d.pb.gz")" \
	    -v pbb="$(stat -c %s "$out/d.base.pb.gz")" -v rss="$rss_kib" \
	    'BEGIN { printf "%-8d %8.2f %10.0f %10.0f %10.1f\n", n, w, svg / 1024, (pb + pbb) / 1024, rss / 1024 }'
done

cat <<'TXT'

bpf_ns/smp: the sample program's time per target sample, timed inside the program with --bpf-stats
  (two clock reads, ~50 ns); its runs on other processes' ticks are timed apart (the summary's
  "other runs") and not charged to the target.
cpu_us/smp, cpu%core: the profiler's own user+sys time while sampling, per sample and as a share
  of one core; start_s: its CPU time before sampling began (BPF verification, discovery);
  first_ms: from its start to its first sample written (a launched command: the interpreter's
  own start-up included).
slowdown: the workload's own elapsed time, profiled vs unprofiled (noisy on a VM: compare runs);
  vs_floor: profiled vs the same rate of perf events with nothing to sample (the timer interrupts'
  own cost, large on a VM at high rates).
received/expect: samples written vs the workload's elapsed time x rate (one busy thread).
userspace ns per frame: bench/stack_repeat.c without BPF: one synthetic record (every frame its own code
  object, read before) prefetched, resolved and written again and again, its leaf at 4 offsets in turn;
  resolve alone, then with the MOJO writer, the Tachyon writer, or both (bench/stack_repeat_ir.sh: the
  same in instructions under callgrind).
wall mode: us/thr/intv is the iterator program's BPF run time per thread sampled (Python, native and
  kernel stacks); cpu_us/pass the profiler's whole user+sys time (passes, iterator syscalls,
  symbolizing, writing) per pass; skipped: passes missed because the one before overran.
mixed stacks: py_depth Python frames over nesting levels of C recursion (list repr); native: the
  native frames BPF walked per sample (mean); ratio: native on over --no-native.
sustained rate: a launched 32-frame workload at each rate; lost: records dropped because the ring
  was full.
diff: pybpfprof diff BASE NEW -o .svg -o .txt -o .pb.gz on n distinct stacks each; pprof_KiB is
  the pair's; rss the command's peak.
TXT

# What a web service under load loses to the profiler (requests per second), Austin beside it.
printf '\n'
bench/service.sh
# The overhead budget at depth 900 and 10 kHz against the floor (perf record, no stacks).
printf '\n'
bench/budget.sh
# Every output format's file size and convert time per sample, on one recording.
printf '\n'
bench/writers.sh
# Sampling on kernel events: BPF time per occurrence, the profiler's CPU.
printf '\n'
bench/events.sh
# --event off-cpu: its cost per context switch, the host's and a target's.
printf '\n'
bench/offcpu.sh
# --event syscall: its cost per system call, the host's and a target's.
printf '\n'
bench/syscalls.sh

# --async-mode all: how often a waiting task is shown where it no longer waits.
printf '\n'
bench/async_drift.sh

# Side by side with Austin and CPython 3.15's sampler (bench/results/peers-latest.md).
printf '\n'
bench/peers.sh

#!/usr/bin/env bash
# `sudo make bench` (its end): what profiling costs a web service. gunicorn with two sync
# workers serving the Flask app of tests/scripts/services/ (two views, /report three times
# /lookup), Debian's /usr/bin/python3.11, driven by wrk on loopback (one thread, four
# connections, requests alternating between the views); requests per second with no
# profiler, with pybpfprof at 100 Hz (the continuous-profiling rate) and 1 kHz, whole host
# and attached to the master with -C, and with Austin 3.7 (Debian sid's, -C -p master) at
# the same rates where sid has it. Each round measures every configuration in turn; a
# configuration's ratio is to the unprofiled run of its own round, and the median of the
# rounds is printed with the absolute figures. Figures are printed, never asserted.
#
# Environment: ROUNDS (3), SECONDS_PER_RUN (15), PYBPFPROF_SID_DIR (the chroot).
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${ROUNDS:-3}
seconds=${SECONDS_PER_RUN:-15}
services=tests/scripts/services
[ "$(id -u)" -eq 0 ] || { echo "service.sh: must run as root" >&2; exit 1; }
for need in /usr/bin/gunicorn /usr/bin/wrk; do
	[ -x "$need" ] || { echo "service.sh: $need is not installed (sudo make deps)" >&2; exit 1; }
done

out=$(mktemp -d /tmp/pybpfprof-service.XXXXXX)
master=
cleanup() {
	[ -z "$master" ] || { kill -TERM "$master" 2>/dev/null; wait "$master" 2>/dev/null || true; }
	rm -rf "$out"
}
trap cleanup EXIT

# Austin where the sid chroot has it, run on this host through the chroot's loader (its
# binary needs sid's libc).
austin=()
austin_note=
if sid=$(tests/pythons/provision-sid.sh 2>/dev/null) && path=$(bench/sid-austin.sh "$sid" 2>"$out/austin.err"); then
	austin=("$sid/lib64/ld-linux-x86-64.so.2" --library-path "$sid/lib/x86_64-linux-gnu" "$sid$path")
	"${austin[@]}" --version >/dev/null 2>&1 || { austin=(); austin_note="Austin from sid does not run here"; }
else
	austin_note="Austin not measured: $(cat "$out/austin.err" 2>/dev/null || echo 'the sid chroot could not be provisioned')"
fi

port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd "$services" && PYTHONDONTWRITEBYTECODE=1 exec /usr/bin/gunicorn -w 2 -b "127.0.0.1:$port" flask_app:app) >"$out/gunicorn.log" 2>&1 &
master=$!
for _ in $(seq 300); do
	if /usr/bin/python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null; then break; fi
	sleep 0.1
done
url=http://127.0.0.1:$port/

# The workers' CPU time so far (user+sys, clock ticks).
workers_ticks() {
	local pid total=0
	for pid in $(cat "/proc/$master/task/$master/children"); do
		total=$((total + $(awk '{ print $14 + $15 }' "/proc/$pid/stat")))
	done
	echo "$total"
}

# One wrk run: requests per second, and the workers' CPU time per request (ms), which a busy
# machine disturbs less than the rate.
rps() {
	local before after
	before=$(workers_ticks)
	wrk -t1 -c4 -d "${1}s" -s "$services/alternate.lua" "$url" >"$out/wrk.out"
	after=$(workers_ticks)
	awk -v ticks=$((after - before)) -v hz="$(getconf CLK_TCK)" '
		/ requests in / { n = $1 } /^Requests\/sec:/ { r = $2 }
		END { printf "%s %.2f\n", r, n ? 1000 * ticks / hz / n : 0 }' "$out/wrk.out"
}

# A profiler started in the background (under GNU time, which counts its children: pybpfprof's
# parser worker): waits until it has written a sample (pybpfprof's MOJO is flushed every second)
# or for 2 s (Austin), then runs wrk; the profiler is then stopped. Prints what rps does, then
# the profiler's CPU time over its whole run, as a share of one core.
profiled_rps() { # kind hz scope
	local kind=$1 hz=$2 scope=$3 timer profiler value args=()
	[ "$scope" = attached ] && args=(-C -p "$master")
	rm -f "$out/p.mojo"
	case $kind in
	pybpfprof) set -- ./pybpfprof -q -F "$hz" "${args[@]}" -o "$out/p.mojo" ;;
	austin) set -- "${austin[@]}" -s -b -i "$((1000000 / hz))us" "${args[@]}" -o "$out/p.mojo" ;;
	esac
	/usr/bin/time -o "$out/time" -f '%U %S %e' "$@" 2>"$out/profiler.log" &
	timer=$!
	for _ in $(seq 50); do profiler=$(cat "/proc/$timer/task/$timer/children" 2>/dev/null) && [ -n "$profiler" ] && break; sleep 0.1; done
	if [ "$kind" = pybpfprof ]; then
		for _ in $(seq 200); do [ -s "$out/p.mojo" ] && break; sleep 0.1; done
	else
		sleep 2
	fi
	sleep 1
	value=$(rps "$seconds")
	kill -INT $profiler 2>/dev/null || true
	wait "$timer" 2>/dev/null || true
	# GNU time's last line (a line before it says when the profiler exited non-zero, as Austin
	# does on SIGINT).
	tail -1 "$out/time" | awk -v rps="$value" '{ printf "%s %.1f\n", rps, 100 * ($1 + $2) / ($3 > 0 ? $3 : 1) }'
}

configs=("none" "pybpfprof 100 host" "pybpfprof 100 attached" "pybpfprof 1000 host" "pybpfprof 1000 attached")
[ ${#austin[@]} -eq 0 ] || configs+=("austin 100 attached" "austin 1000 attached")

rps 3 >/dev/null # warm the workers
load_start=$(cut -d" " -f1-3 /proc/loadavg)
: >"$out/runs"
for round in $(seq "$rounds"); do
	base=
	for config in "${configs[@]}"; do
		read -r kind hz scope <<<"$config"
		if [ "$kind" = none ]; then
			read -r value per_request <<<"$(rps "$seconds")"; base=$value; base_per_request=$per_request; cpu=0
		else
			read -r value per_request cpu <<<"$(profiled_rps "$kind" "$hz" "$scope")"
		fi
		echo "$round|$config|$value|$base|$cpu|$per_request|$base_per_request" >>"$out/runs"
	done
done

printf '\ncost on a service: gunicorn (2 sync workers) + Flask, python3.11, wrk -t1 -c4 for %s s, %s rounds (median; load %s at the start)\n' \
	"$seconds" "$rounds" "$load_start"
printf '%-30s %8s %10s %7s %11s %10s %9s\n' profiler req/s unprofiled fewer worker_ms/req unprofiled prof_cpu
for config in "${configs[@]}"; do
	awk -F'|' -v c="$config" '
		$2 == c { n++; v[n] = $3; b[n] = $4; r[n] = $3 / $4; u[n] = $5; w[n] = $6; wb[n] = $7 }
		function median(a, n,   i, j, t) {
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return a[int((n + 1) / 2)]
		}
		END {
			split(c, f, " ")
			name = f[1] == "none" ? "none" : sprintf("%s %s Hz %s", f[1], f[2], f[3] == "host" ? "whole host" : "-p master -C")
			printf "%-30s %8.1f %10.1f %6.1f%% %11.2f %10.2f %8.1f%%\n", name, median(v, n), median(b, n),
				100 * (1 - median(r, n)), median(w, n), median(wb, n), median(u, n)
		}' "$out/runs"
done
[ -z "$austin_note" ] || echo "$austin_note"
echo "fewer: requests per second lost against the unprofiled run of the same round (median of the rounds);"
echo "worker_ms/req: the gunicorn workers' CPU time (user+sys) per request served, the same run's and the round's unprofiled;"
echo "prof_cpu: the profiler's user+sys time over its whole run (start included), as a share of one core."

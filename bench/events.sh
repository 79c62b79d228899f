#!/usr/bin/env bash
# Part of `sudo make bench` (also on its own): what sampling on a kernel event (--event) costs.
# Each event on its workload (tests/scripts/event_work.py) for SECONDS, with --bpf-stats:
#   page-faults (default period 16) on a process filling a fresh 200 MB buffer over and over, -p;
#   context-switches (period 1) on a process sleeping 100 us at a time and its spinning child,
#   launched.
# Printed per event: BPF runs (each one sampled occurrence, anywhere on the host), the BPF time of
# a run that walks a target's stacks and of one that finds no target, the time per occurrence
# of the event (runs' total over runs x period), the samples, and the profiler's own CPU while
# sampling (user+sys, % of a core). Figures are printed, never asserted; the load average beside.
#
# Environment: PYTHON (python3), SECONDS_EACH (10).
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
seconds=${SECONDS_EACH:-10}
out=$(mktemp -d /tmp/pybpfprof-events.XXXXXX)
trap 'rm -rf "$out"; [ -n "${target:-}" ] && kill "$target" 2>/dev/null || true' EXIT

[ "$(id -u)" -eq 0 ] || { echo "events.sh: must run as root" >&2; exit 1; }

# "bpf: R runs, A ns per run; O other runs, B ns each; T target samples, W wakeups, C ns per target sample"
# and "cpu: U s user+sys while sampling (P% of a core)" of a summary, as one line of the table.
row() { # event period log
	awk -v event="$1" -v period="$2" '
		/ bpf: [0-9]+ runs,/ { runs = $3; per_run = $5; other_ns = $12; targets = $15; target_ns = $20 }
		/ cpu: / { cpu = $3; share = $8; sub(/^\(/, "", share) }
		END {
			if (!runs) { printf "| %s | (no bpf line) |\n", event; exit }
			printf "| %s | %d | %d | %d | %d | %.1f | %d | %s s (%s) |\n", event, period, runs, target_ns,
			       other_ns, per_run / period, targets, cpu, share
		}' "$3"
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
echo "## --event cost ($(date -u +%Y-%m-%d), $(nproc) CPUs, $("$python" -V 2>&1), ${seconds} s each)"
echo
echo "| event | period | BPF runs | ns per target walk | ns per other run | ns per occurrence | samples | profiler CPU |"
echo "|---|---|---|---|---|---|---|---|"

"$python" tests/scripts/event_work.py faults >"$out/faults.out" &
target=$!
for _ in $(seq 300); do grep -q ready "$out/faults.out" 2>/dev/null && break; sleep 0.1; done
./pybpfprof --bpf-stats -v --event page-faults -p "$target" -d "$seconds" -o "$out/faults.mojo" 2>"$out/faults.log" || true
kill "$target" 2>/dev/null || true
wait "$target" 2>/dev/null || true
target=
row page-faults 16 "$out/faults.log"

./pybpfprof --bpf-stats -v --event context-switches -o "$out/switches.mojo" -- \
	"$python" tests/scripts/event_work.py switches "$seconds" >/dev/null 2>"$out/switches.log" || true
row context-switches 1 "$out/switches.log"

echo
echo "load average: $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"

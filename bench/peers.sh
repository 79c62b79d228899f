#!/usr/bin/env bash
# `sudo make bench-peers` (and the end of `make bench`): pybpfprof side by side with
# its peers, in one run, on the same targets at the same rates:
#   Austin 3.7.0 (Debian's) against pybpfprof on a 3.13 target (Austin 3.7 knows no 3.14),
#   CPython 3.15's sampler (Tachyon, profiling.sampling) against pybpfprof on a 3.15 target,
# at stack depths 30, 200, 900 and 1 kHz, 10 kHz. Figures are printed, never asserted.
# Beside them, on fresh targets of the same work: the floor, `perf record -F RATE -e cpu-clock`
# (no stacks: the timer interrupts alone, the least any interrupt-driven sampler costs on the
# machine), and pybpfprof under --max-overhead BUDGET (1% of a CPU by default).
# The Markdown table goes to bench/results/peers-latest.md too.
#
# Every run starts a fresh target (bench/peer_work.py in the sid chroot): it builds its
# stack, spins WAIT seconds while the profiler attaches, then does a fixed amount of work
# and times it. A fresh target per profiler, rather than one target profiled in turn, so
# that each profiler sees the whole of the same work from its first round to its exit, and
# no profiler inherits a target another one has already paid to discover.
#
# Environment: DEPTHS ("30 200 900"), RATES ("1000 10000"), ROUNDS (3000), WAIT (3: pybpfprof -p starts in about 1 s on a loaded 2-vCPU VM),
#   BUDGET (1: --max-overhead's percent), PEERS ("austin tachyon": the tables to measure),
#   PYBPFPROF_SID_DIR (the chroot, default /var/cache/pybpfprof/sid).
set -euo pipefail
cd "$(dirname "$0")/.."

read -r -a depths <<<"${DEPTHS:-30 200 900}"
read -r -a rates <<<"${RATES:-1000 10000}"
rounds=${ROUNDS:-3000}
wait_s=${WAIT:-3}
budget=${BUDGET:-1}
read -r -a peers <<<"${PEERS:-austin tachyon}"
results=bench/results/peers-latest.md
austin=/opt/austin/usr/bin/austin
load_start=$(cut -d" " -f1-3 /proc/loadavg)

[ "$(id -u)" -eq 0 ] || { echo "peers.sh: must run as root" >&2; exit 1; }
sid=$(tests/pythons/provision-sid.sh)

# Austin from Debian sid, unpacked into the chroot (bench/sid-austin.sh), and a 3.13
# interpreter for it to profile. Both are fetched once, through the chroot's apt.
chroot_apt() { chroot "$sid" /usr/bin/env DEBIAN_FRONTEND=noninteractive LC_ALL=C apt-get "$@"; }
ensure_peers() {
	if [ ! -x "$sid/usr/bin/python3.13" ]; then
		chroot_apt install -y -q python3.13 >/dev/null || { chroot_apt update -q >/dev/null && chroot_apt install -y -q python3.13 >/dev/null; }
	fi
	austin=$(bench/sid-austin.sh "$sid")
}
ensure_peers

out=$(mktemp -d "$sid/tmp/pybpfprof-peers.XXXXXX")
inner=${out#"$sid"}
trap '[ -n "${KEEP:-}" ] || rm -rf "$out"' EXIT
cp bench/peer_work.py "$out/"

# A target in its own mount namespace with /proc mounted in the chroot (Austin finds no
# interpreter in a target whose chroot has no /proc), the peers entering that namespace.
# unshare, sh and chroot all exec: $! is the Python process.
start_target() { # version depth wait
	unshare -m --propagation private sh -c "mount -t proc proc '$sid/proc' && exec chroot '$sid' python$1 '$inner/peer_work.py' $2 $3 $rounds" \
		>"$out/target.out" &
}

# The samples of a profile: total, in heavy(), in light() (the leaf's function name), and the
# samples in either. With a rate, heavy and light count the ticks their samples stand for (a
# sample's time over the interval: --max-overhead weighs a thinned target's samples).
count_samples() { # file [hz]
	./pybpfprof dump --samples "$1" | awk -v hz="${2:-0}" '
		/^Sample / { if (n++) count(); leaf = ""; weight = 1
			if (hz > 0 && match($0, / time=[0-9]+/)) weight = substr($0, RSTART + 6, RLENGTH - 6) * hz / 1e6
			next }
		/^\tpython / { leaf = $0 }
		function count() { if (leaf ~ /name="heavy"/) { h += weight; k++ } else if (leaf ~ /name="light"/) { l += weight; k++ } }
		END { if (n) count(); printf "%d %.0f %.0f %d\n", n, h, l, k }'
}

# One profiled run; appends a line to $out/runs:
#   peer profiler depth hz cpu_s rss_kb bytes samples heavy light bpf_ns elapsed tcpu truth_h truth_l
#   sampling_cpu_s (pybpfprof's own count of its CPU time once sampling began; a peer's whole)
#   kept (the samples in heavy() or light(), each counted once whatever it weighs)
profile_run() { # peer(austin|tachyon) profiler(pybpfprof|austin|tachyon) version depth hz
	local peer=$1 who=$2 version=$3 depth=$4 hz=$5 target file bpf_ns=0 sampling_cpu=
	start_target "$version" "$depth" "$wait_s"; target=$!
	sleep 0.3
	case $who in
	pybpfprof)
		[ "$peer" = austin ] && file=$out/p.mojo || file=$out/p.bin
		/usr/bin/time -o "$out/time" -f '%U %S %M' ./pybpfprof --bpf-stats --no-native -F "$hz" -p "$target" -o "$file" 2>"$out/log" || true
		bpf_ns=$(sed -n 's/.* \([0-9]*\) ns per target sample$/\1/p' "$out/log")
		sampling_cpu=$(sed -n 's/^pybpfprof: cpu: \([0-9.]*\) s user+sys while sampling.*/\1/p' "$out/log")
		;;
	austin)
		file=$out/a.mojo
		/usr/bin/time -o "$out/time" -f '%U %S %M' nsenter -t "$target" -m -- chroot "$sid" \
			"$austin" -s -b -i "$((1000000 / hz))us" -o "$inner/a.mojo" -p "$target" 2>"$out/log" || true
		;;
	budget)
		file=$out/b.mojo
		/usr/bin/time -o "$out/time" -f '%U %S %M' ./pybpfprof --bpf-stats --no-native --max-overhead "$budget" -F "$hz" \
			-p "$target" -o "$file" 2>"$out/log" || true
		bpf_ns=$(sed -n 's/.* \([0-9]*\) ns per target sample$/\1/p' "$out/log")
		sampling_cpu=$(sed -n 's/^pybpfprof: cpu: \([0-9.]*\) s user+sys while sampling.*/\1/p' "$out/log")
		;;
	floor)
		file=$out/perf.data
		/usr/bin/time -o "$out/time" -f '%U %S %M' perf record -q -F "$hz" -e cpu-clock -p "$target" -o "$file" \
			>"$out/log" 2>&1 || true
		;;
	tachyon)
		file=$out/t.bin
		/usr/bin/time -o "$out/time" -f '%U %S %M' nsenter -t "$target" -m -- chroot "$sid" \
			python3.15 -m profiling.sampling attach -r "$hz" --mode cpu --binary -o "$inner/t.bin" "$target" >"$out/log" 2>&1 || true
		;;
	esac
	wait "$target" || true
	read -r user sys rss <"$out/time"
	total_cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')
	read -r _ elapsed _ tcpu _ truth_h _ truth_l <"$out/target.out"
	case $who in
	floor) counts="0 0 0 0" ;;
	budget) counts=$(count_samples "$file" "$hz") ;;
	*) counts=$(count_samples "$file") ;;
	esac
	read -r n heavy light kept <<<"$counts"
	echo "$peer $who $depth $hz $total_cpu $rss $(stat -c %s "$file") $n $heavy $light ${bpf_ns:-0} $elapsed $tcpu $truth_h $truth_l ${sampling_cpu:-$total_cpu} $kept" >>"$out/runs"
	rm -f "$file"
}

# The unprofiled runs of each version and depth: the target's CPU time for the work
# (the median of 3).
baseline() { # version depth
	local _
	for _ in 1 2 3; do
		start_target "$1" "$2" 0; wait $! || true
		awk '{ print $4 }' "$out/target.out"
	done | sort -n | sed -n 2p
}

started=$SECONDS
: >"$out/runs"; : >"$out/base"
for pair in "austin 3.13" "tachyon 3.15"; do
	read -r peer version <<<"$pair"
	[[ " ${peers[*]} " == *" $peer "* ]] || continue
	for depth in "${depths[@]}"; do
		echo "$peer $depth $(baseline "$version" "$depth")" >>"$out/base"
		for hz in "${rates[@]}"; do
			echo "peers: $peer vs pybpfprof, python$version, depth $depth, $hz Hz" >&2
			profile_run "$peer" pybpfprof "$version" "$depth" "$hz"
			profile_run "$peer" "$peer" "$version" "$depth" "$hz"
			profile_run "$peer" floor "$version" "$depth" "$hz"
			profile_run "$peer" budget "$version" "$depth" "$hz"
		done
	done
done
took=$((SECONDS - started))

mkdir -p "$(dirname "$results")"
{
	echo "# pybpfprof against its peers"
	echo
	printf 'Measured %s on %s CPUs (%s), kernel %s; load average at the start and end: %s / %s. Took %d s.\n' \
		"$(date -u +%Y-%m-%dT%H:%MZ)" "$(nproc)" "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)" \
		"$(uname -r)" "$load_start" "$(cut -d' ' -f1-3 /proc/loadavg)" "$took"
	echo
	awk -v rounds="$rounds" -v budget="$budget" -v wanted="${peers[*]}" '
		FILENAME ~ /base$/ { base[$1, $2] = $3; next }
		{	peer = $1; who = ($2 == "pybpfprof") ? "p" : ($2 == "floor") ? "f" : ($2 == "budget") ? "b" : "q"
			key = peer SUBSEP $3 SUBSEP $4 SUBSEP who
			cpu[key] = $5; rss[key] = $6; bytes[key] = $7; n[key] = $8; h[key] = $9; l[key] = $10
			bpf[key] = $11; wall[key] = $12; tcpu[key] = $13; th[key] = $14; tl[key] = $15; scpu[key] = $16
			kept[key] = $17
			if (!(($3, $4) in col)) { col[$3, $4] = 1; cols[++ncols] = $3 SUBSEP $4 }
		}
		function cell(a, b, fmt,   s) {
			s = sprintf(fmt " / " fmt, a, b)
			if (b > 0 && a >= 0) s = s sprintf(" (%.2f)", a / b)
			return s
		}
		function row(peer, label, what,   c, k, s) {
			s = "| " label
			for (c = 1; c <= ncols; c++) {
				split(cols[c], k, SUBSEP)
				s = s " | " value(peer, k[1], k[2], what)
			}
			print s " |"
		}
		function metric(key, what, depth, peer,   work) {
			work = h[key] + l[key]
			if (what == "total") return cpu[key]
			if (what == "cpu") return n[key] ? 1e6 * scpu[key] / n[key] : 0
			if (what == "slow") return 100 * (tcpu[key] - base[peer, depth]) / base[peer, depth]
			# Each profiler against its own clock: pybpfprof samples CPU time (perf cpu-clock),
			# the peers wall time (keeping runnable threads in -s and --mode cpu).
			if (what == "recv") return 100 * work / ((key ~ /p$/ ? tcpu[key] : wall[key]) * hz)
			if (what == "bytes") return n[key] ? bytes[key] / n[key] : 0
			if (what == "split") return work ? 100 * h[key] / work - 100 * th[key] / (th[key] + tl[key]) : 0
			if (what == "rss") return rss[key] / 1024
		}
		function value(peer, depth, rate, what,   p, q, a, b, f, bk) {
			p = peer SUBSEP depth SUBSEP rate SUBSEP "p"; q = peer SUBSEP depth SUBSEP rate SUBSEP "q"
			f = peer SUBSEP depth SUBSEP rate SUBSEP "f"; bk = peer SUBSEP depth SUBSEP rate SUBSEP "b"
			hz = rate
			if (what == "bpf") return sprintf("%.1f / -", bpf[p] / 1000)
			if (what == "floor") return sprintf("%+.1f%%", metric(f, "slow", depth, peer))
			if (what == "vsfloor") return cell(metric(p, "slow", depth, peer), metric(f, "slow", depth, peer), "%+.1f%%")
			if (what == "budget") return sprintf("%+.1f%% / %+.1f%%: %+.1f points (budget %g)", metric(bk, "slow", depth, peer),
							     metric(f, "slow", depth, peer),
							     metric(bk, "slow", depth, peer) - metric(f, "slow", depth, peer), budget)
			if (what == "budgetbpf") return sprintf("%.1f", bpf[bk] / 1000)
			if (what == "budgetkept") return sprintf("%d (%.1f%%); %+.1f", kept[bk], tcpu[bk] > 0 ? 100 * kept[bk] / (tcpu[bk] * hz) : 0,
								 metric(bk, "split", depth, peer))
			a = metric(p, what, depth, peer); b = metric(q, what, depth, peer)
			if (what == "total") return cell(a, b, "%.2f")
			if (what == "cpu") return cell(a, b, "%.1f")
			if (what == "slow") return cell(a, b, "%+.1f%%")
			if (what == "recv") return cell(a, b, "%.0f%%")
			if (what == "bytes") return cell(a, b, "%.1f")
			if (what == "split") return sprintf("%+.1f / %+.1f", a, b) (b != 0 ? sprintf(" (%.2f)", (a < 0 ? -a : a) / (b < 0 ? -b : b)) : "")
			if (what == "rss") return cell(a, b, "%.1f")
		}
		function table(peer, title,   c, k, s, d) {
			print "## " title
			print ""
			s = "| pybpfprof / peer (ratio) "; d = "|---"
			for (c = 1; c <= ncols; c++) { split(cols[c], k, SUBSEP); s = s sprintf("| depth %s, %g kHz ", k[1], k[2] / 1000); d = d "|---" }
			print s "|"; print d "|"
			row(peer, "profiler CPU, s (user+sys, start included)", "total")
			row(peer, "profiler CPU per sample, us (pybpfprof: once sampling; peer: all)", "cpu")
			row(peer, "BPF time per sample, us (pybpfprof; run in the target)", "bpf")
			row(peer, "target slowdown (its CPU time for the work vs unprofiled)", "slow")
			row(peer, "floor: perf record -e cpu-clock, no stacks: target slowdown", "floor")
			row(peer, "pybpfprof slowdown / the floor'"'"'s (ratio)", "vsfloor")
			row(peer, "--max-overhead " budget ": slowdown / the floor'"'"'s: the excess", "budget")
			row(peer, "--max-overhead " budget ": BPF time per kept sample (skipped ticks'"'"' lookups included), us", "budgetbpf")
			row(peer, "--max-overhead " budget ": samples kept (of expected); weighted split error, points", "budgetkept")
			row(peer, "samples received / expected (work s x rate)", "recv")
			row(peer, "bytes per sample", "bytes")
			row(peer, "3:1 split: measured heavy share - true share, points", "split")
			row(peer, "peak RSS, MiB", "rss")
			print ""
		}
		END {
			if (index(" " wanted " ", " austin "))
				table("austin", "Austin 3.7.0 (MOJO, -s), python3.13 target")
			if (index(" " wanted " ", " tachyon "))
				table("tachyon", "CPython 3.15 profiling.sampling (Tachyon binary, --mode cpu), python3.15 target")
		}' "$out/base" "$out/runs"
	cat <<'TXT'
Each cell: pybpfprof / peer, then their ratio. pybpfprof runs with --no-native: Python stacks
only, as the peers record them. All three attach to a fresh target (-p / attach)
and stop when it exits; bytes per sample: pybpfprof's MOJO against Austin's MOJO, its Tachyon
against Tachyon's. The split row: each profile's share of heavy() among the samples in heavy()
and light(), less the share of CPU time the target measured for heavy() itself (the ratio is of
the errors' sizes). The slowdown is on the target's CPU time, not its wall time (on a loaded host
wall time measures the neighbours); BPF time runs in the target's context and is part of it,
as are the perf timer interrupts (costly on a VM at 10 kHz). Expected samples: the work's
seconds x rate, on each profiler's clock: CPU time for pybpfprof, wall time for the peers.
The floor: `perf record -F RATE -e cpu-clock -p PID` (no call graphs) on a fresh target of the
same work: the timer interrupts and a sample record each, what any interrupt-driven sampler pays
here; pybpfprof's slowdown is set beside it as a ratio, both measured in this run. --max-overhead:
pybpfprof -p with the budget (percent of one CPU for its walks); its excess over the floor is
to be held against the budget, and its split error is on the weighted samples (each stands for
the ticks its stride skipped). The target spins WAIT seconds before its work, so the budget has
settled (its first look: 100 ms) when the timed work starts.
CPython's sampler keeps at most 256 frames of a stack (the leaf end), so at depth 900 its
profile holds 256 of the 900 frames. Samples received count those whose leaf is heavy() or light():
at depth 900 Austin takes milliseconds a sample and most of its samples end in work() instead.
TXT
} >"$results.tmp"
mv "$results.tmp" "$results"
cat "$results"

#!/usr/bin/env bash
# Provision (once, cached) a Debian sid chroot holding real CPython 3.13, 3.14 and 3.15
# interpreters for the pybpfprof tests.
#
# Usage: tests/pythons/provision-sid.sh [--force]
#   --force   throw away an existing chroot and build it again
#
# Environment:
#   PYBPFPROF_SID_DIR     chroot directory   (default /var/cache/pybpfprof/sid)
#   PYBPFPROF_SID_MIRROR  Debian mirror      (default: the first Debian source of this
#                         host's apt configuration)
#
# On success prints the chroot path on stdout. Needs root. Safe to call from
# several processes at once (flock). A finished chroot is marked with a stamp
# file next to it; a directory without the stamp (interrupted run) is rebuilt.
set -euo pipefail

DIR="${PYBPFPROF_SID_DIR:-/var/cache/pybpfprof/sid}"
SUITE=sid
PYTHONS=(python3.13 python3.14 python3.15)
STAMP="$DIR.stamp"
LOCK="$DIR.lock"
LOG="$DIR.log"
PROG="${0##*/}"

die() {
	echo "$PROG: error: $*" >&2
	exit 1
}

FORCE=0
for arg in "$@"; do
	case "$arg" in
	--force) FORCE=1 ;;
	-h | --help)
		sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*) die "unknown argument '$arg' (usage: $PROG [--force])" ;;
	esac
done

[[ $(id -u) -eq 0 ]] || die "must run as root (debootstrap and chroot need it)"

# The first Debian archive this host's apt uses (deb822 "URIs:" or one-line "deb"),
# leaving out security and update archives, which carry no sid.
host_apt_mirror() {
	local files=(/etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources)
	local f uri
	for f in "${files[@]}"; do
		[[ -r $f ]] || continue
		while read -r uri; do
			case "$uri" in
			*security* | *-updates* | *backports*) continue ;;
			http://* | https://*) echo "${uri%/}"; return 0 ;;
			esac
		done < <(sed -n -e 's/^[[:space:]]*URIs:[[:space:]]*//p' \
			-e 's/^[[:space:]]*deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\{0,1\}\([^[:space:]]*\).*/\2/p' "$f" |
			tr ' ' '\n')
	done
	return 1
}
MIRROR="${PYBPFPROF_SID_MIRROR:-$(host_apt_mirror || true)}"

chroot_ok() {
	[[ -f "$STAMP" ]] || return 1
	local p
	for p in "${PYTHONS[@]}"; do
		[[ -x "$DIR/usr/bin/$p" ]] || return 1
	done
}

# Fast path without the lock: stamp is written last, after everything else.
if [[ $FORCE -eq 0 ]] && chroot_ok; then
	echo "$DIR"
	exit 0
fi

mkdir -p "$(dirname "$DIR")"
exec 9>"$LOCK"
flock 9 || die "cannot lock $LOCK"

# Someone else may have finished while we waited for the lock.
if [[ $FORCE -eq 0 ]] && chroot_ok; then
	echo "$DIR"
	exit 0
fi

# Unmount anything still mounted below $DIR (left by an interrupted run).
umount_below() {
	local m
	# Deepest first.
	while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done < <(awk -v d="$DIR" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/mounts | sort -r)
}

PROC_MOUNTED=0
cleanup() {
	if [[ $PROC_MOUNTED -eq 1 ]]; then
		umount -l "$DIR/proc" 2>/dev/null || true
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# Throw away a partial (or forced) chroot.
rm -f "$STAMP"
if [[ -e "$DIR" ]]; then
	umount_below
	rm -rf --one-file-system "$DIR" || die "cannot remove partial chroot $DIR"
fi

# Tools.
if ! command -v debootstrap >/dev/null 2>&1; then
	if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap; } >"$LOG" 2>&1; then
		die "cannot install debootstrap with apt-get (see $LOG)"
	fi
fi

# Mirror reachability: one clear line instead of a page of debootstrap output.
mirror_ok() {
	local url="$MIRROR/dists/$SUITE/InRelease"
	if command -v curl >/dev/null 2>&1; then
		curl -fsS -o /dev/null --max-time 20 "$url" 2>/dev/null
	elif command -v wget >/dev/null 2>&1; then
		wget -q -O /dev/null --timeout=20 --tries=1 "$url"
	else
		return 0 # let debootstrap find out
	fi
}
[[ -n $MIRROR ]] || die "no Debian mirror in this host's apt sources; set PYBPFPROF_SID_MIRROR"
mirror_ok || die "Debian mirror $MIRROR is unreachable (cannot fetch dists/$SUITE/InRelease)"

start=$SECONDS
echo "$PROG: building $SUITE chroot in $DIR (log: $LOG) ..." >&2

: >"$LOG"
if ! debootstrap --variant=minbase "$SUITE" "$DIR" "$MIRROR" >>"$LOG" 2>&1; then
	die "debootstrap $SUITE failed (see $LOG: $(grep -E '^E:' "$LOG" | tail -n1))"
fi

# The mirror may serve a snapshot whose Release file has passed Valid-Until.
cat >"$DIR/etc/apt/apt.conf.d/99pybpfprof" <<'EOF'
Acquire::Check-Valid-Until "false";
Acquire::Check-Date "false";
APT::Install-Recommends "false";
APT::Install-Suggests "false";
EOF
# No daemons may start inside the chroot.
printf '#!/bin/sh\nexit 101\n' >"$DIR/usr/sbin/policy-rc.d"
chmod 0755 "$DIR/usr/sbin/policy-rc.d"
# DNS for apt inside the chroot (debootstrap normally copies it already).
if [[ -f /etc/resolv.conf ]]; then
	cp -L /etc/resolv.conf "$DIR/etc/resolv.conf" 2>/dev/null || true
fi

mount -t proc proc "$DIR/proc"
PROC_MOUNTED=1
if ! {
	chroot "$DIR" /usr/bin/env DEBIAN_FRONTEND=noninteractive LC_ALL=C apt-get update -q &&
		chroot "$DIR" /usr/bin/env DEBIAN_FRONTEND=noninteractive LC_ALL=C apt-get install -y -q "${PYTHONS[@]}" &&
		chroot "$DIR" /usr/bin/env LC_ALL=C apt-get clean
} >>"$LOG" 2>&1; then
	die "apt-get install ${PYTHONS[*]} in the chroot failed (see $LOG: $(grep -E '^E:' "$LOG" | tail -n1))"
fi
umount "$DIR/proc" || umount -l "$DIR/proc"
PROC_MOUNTED=0

mkdir -p "$DIR/tmp/pybpfprof-scripts"
chmod 1777 "$DIR/tmp/pybpfprof-scripts"

for p in "${PYTHONS[@]}"; do
	chroot "$DIR" "/usr/bin/$p" -c 'import sys' >>"$LOG" 2>&1 || die "$p in the chroot does not run (see $LOG)"
done

{
	date -u +%Y-%m-%dT%H:%M:%SZ
	for p in "${PYTHONS[@]}"; do
		printf '%s %s\n' "$p" "$(chroot "$DIR" "/usr/bin/$p" -c 'import platform; print(platform.python_version())')"
	done
} >"$STAMP.tmp"
mv -f "$STAMP.tmp" "$STAMP"

echo "$PROG: done in $((SECONDS - start))s" >&2
echo "$DIR"

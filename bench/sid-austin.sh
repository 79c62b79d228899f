#!/usr/bin/env bash
# Prints the path, inside the sid chroot SID (tests/pythons/provision-sid.sh), of Austin 3.7
# from Debian sid, unpacked (not installed) there once through the chroot's apt: its package
# depends on python3 << 3.14, which sid's python3 no longer satisfies, and the binary needs
# only libc. Outside the chroot it runs through the chroot's loader:
#   "$SID/lib64/ld-linux-x86-64.so.2" --library-path "$SID/lib/x86_64-linux-gnu" "$SID$(bench/sid-austin.sh "$SID")"
# Exits non-zero, saying why, when sid has no austin package.
set -euo pipefail
sid=$1
austin=/opt/austin/usr/bin/austin

if [ ! -x "$sid$austin" ]; then
	chroot_apt() { chroot "$sid" /usr/bin/env DEBIAN_FRONTEND=noninteractive LC_ALL=C apt-get "$@"; }
	chroot "$sid" sh -c 'cd /tmp && apt-get download austin' >/dev/null 2>&1 ||
		{ chroot_apt update -q >/dev/null && chroot "$sid" sh -c 'cd /tmp && apt-get download austin' >/dev/null; } ||
		{ echo "sid-austin.sh: Debian sid has no austin package here" >&2; exit 1; }
	deb=$(ls "$sid"/tmp/austin_*.deb | head -1)
	mkdir -p "$sid/opt/austin"
	dpkg-deb -x "$deb" "$sid/opt/austin"
	rm -f "$deb"
fi
echo "$austin"

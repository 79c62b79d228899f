#!/usr/bin/env bash
# Install Debian packages into the sid chroot of provision-sid.sh, for the tests that need them
# (python3-uvloop for 3.14): under the chroot's lock, once, quietly.
#
# Usage: tests/pythons/sid-install.sh PACKAGE...
# Environment: PYBPFPROF_SID_DIR (default /var/cache/pybpfprof/sid). Needs root and a
# provisioned chroot; exit status 0 when every package is installed.
set -euo pipefail

DIR="${PYBPFPROF_SID_DIR:-/var/cache/pybpfprof/sid}"
[[ $# -ge 1 ]] || { echo "usage: ${0##*/} PACKAGE..." >&2; exit 2; }
[[ -f "$DIR.stamp" ]] || { echo "${0##*/}: sid chroot not provisioned at $DIR" >&2; exit 1; }
exec 9>"$DIR.lock"
flock 9
missing=()
for package in "$@"; do
	chroot "$DIR" dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$package")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
chroot "$DIR" /usr/bin/env DEBIAN_FRONTEND=noninteractive LC_ALL=C apt-get install -y -q "${missing[@]}" \
	>>"$DIR.log" 2>&1

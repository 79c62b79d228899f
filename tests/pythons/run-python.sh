#!/usr/bin/env bash
# Run a Python script with python3.VERSION from the sid chroot.
#
# Usage: tests/pythons/run-python.sh VERSION SCRIPT [ARGS...]
#   e.g. tests/pythons/run-python.sh 3.14 tests/workloads/busy.py 5
#
# SCRIPT is copied to /tmp/pybpfprof-scripts/NAME inside the chroot (NAME is
# its basename) and then this shell execs
#   chroot DIR /usr/bin/python3.VERSION /tmp/pybpfprof-scripts/NAME ARGS...
# and chroot execs Python, so the PID of this script is the PID of the Python
# process. Stdin, stdout and stderr pass through; the working directory inside
# is the chroot's /. ARGS that are host paths are not visible inside the chroot.
# Needs root and a chroot built by provision-sid.sh (it is not built here).
#
# Environment: PYBPFPROF_SID_DIR (default /var/cache/pybpfprof/sid); PYBPFPROF_RUN_AS_NOBODY=1
# runs Python as uid and gid 65534 without other groups (an attacker).
set -euo pipefail

DIR="${PYBPFPROF_SID_DIR:-/var/cache/pybpfprof/sid}"
PROG="${0##*/}"

die() {
	echo "$PROG: error: $*" >&2
	exit 2
}

[[ $# -ge 2 ]] || die "usage: $PROG VERSION SCRIPT [ARGS...]"
version="$1"
script="$2"
shift 2

[[ $version =~ ^3\.[0-9]+$ ]] || die "VERSION must look like 3.14, got '$version'"
[[ -f "$script" && -r "$script" ]] || die "script '$script' not found"
[[ $(id -u) -eq 0 ]] || die "must run as root (chroot)"
[[ -f "$DIR.stamp" ]] || die "sid chroot not provisioned at $DIR (run tests/pythons/provision-sid.sh)"
python="/usr/bin/python$version"
[[ -x "$DIR$python" ]] || die "python$version is not installed in $DIR"

name="${script##*/}"
inner_dir=/tmp/pybpfprof-scripts
mkdir -p "$DIR$inner_dir"
chmod 1777 "$DIR$inner_dir"

# Atomic replace, so that parallel runs never see a half-written file.
tmp="$(mktemp "$DIR$inner_dir/.$name.XXXXXX")"
if ! cp -- "$script" "$tmp"; then
	rm -f -- "$tmp"
	die "cannot copy '$script' into $DIR$inner_dir"
fi
chmod 0644 "$tmp"
mv -f -- "$tmp" "$DIR$inner_dir/$name"

if [[ "${PYBPFPROF_RUN_AS_NOBODY:-}" == 1 ]]; then
	exec chroot --userspec=65534:65534 --groups=65534 "$DIR" "$python" "$inner_dir/$name" "$@"
fi
exec chroot "$DIR" "$python" "$inner_dir/$name" "$@"

#!/usr/bin/env bash
# List the CPython interpreters available on this machine for the pybpfprof tests.
#
# Usage: tests/pythons/list-pythons.sh
#
# One line per interpreter, tab-separated:
#   label <TAB> major.minor.micro <TAB> kind <TAB> command
# kind is one of:
#   pyenv   <versions>/*/bin/python*                   label "3.12", "2.7", ...
#   static  Debian's /usr/bin/python3.X                label "3.11-static"
#   chroot  python3.14/3.15 in the sid chroot          label "3.14", "3.15"
# command is an absolute path, followed for chroot entries by the version
# ("/work/main/tests/pythons/run-python.sh 3.14"); append SCRIPT [ARGS...].
# Each interpreter is started once to read its exact version; an interpreter
# that is missing or does not start is simply not listed. The chroot is never
# built here (see provision-sid.sh).
#
# <versions> is pyenv's versions folder as tools/pyenv-versions.sh names it ($PYENV_ROOT/versions).
# Environment: PYENV_ROOT, PYBPFPROF_SID_DIR (default /var/cache/pybpfprof/sid)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
PYENV_DIR="$("$HERE/../../tools/pyenv-versions.sh")"
SID_DIR="${PYBPFPROF_SID_DIR:-/var/cache/pybpfprof/sid}"
VERSION_CODE='import sys; print("%d.%d.%d" % sys.version_info[:3])'

if [[ $# -gt 0 ]]; then
	echo "${0##*/}: error: takes no arguments" >&2
	exit 2
fi

# version_of CMD... -> prints major.minor.micro or fails
version_of() {
	local out
	out="$(timeout 20 "$@" -E -S -c "$VERSION_CODE" </dev/null 2>/dev/null)" || return 1
	[[ $out =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || return 1
	printf '%s\n' "$out"
}

emit() { # label version kind command
	printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4"
}

# pyenv, ordered by version.
if [[ -d "$PYENV_DIR" ]]; then
	while IFS= read -r name; do
		vdir="$PYENV_DIR/$name"
		[[ $name =~ ^([0-9]+)\.([0-9]+)\.[0-9]+$ ]] || continue
		mm="${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
		bin=""
		for cand in "python$mm" "python${BASH_REMATCH[1]}" python; do
			if [[ -x "$vdir/bin/$cand" && ! -d "$vdir/bin/$cand" ]]; then
				bin="$vdir/bin/$cand"
				break
			fi
		done
		[[ -n $bin ]] || continue
		ver="$(version_of "$bin")" || continue
		emit "$mm" "$ver" pyenv "$bin"
	done < <(find "$PYENV_DIR/" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | sort -V)
fi

# Debian's own interpreter (statically linked libpython).
if [[ -x /usr/bin/python3.11 ]]; then
	if ver="$(version_of /usr/bin/python3.11)"; then
		emit 3.11-static "$ver" static /usr/bin/python3.11
	fi
fi

# The sid chroot, only if fully provisioned and we may chroot.
if [[ -f "$SID_DIR.stamp" && $(id -u) -eq 0 ]]; then
	for mm in 3.14 3.15; do
		[[ -x "$SID_DIR/usr/bin/python$mm" ]] || continue
		ver="$(version_of chroot "$SID_DIR" "/usr/bin/python$mm")" || continue
		emit "$mm" "$ver" chroot "$HERE/run-python.sh $mm"
	done
fi

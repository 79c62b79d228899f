#!/bin/sh
# Regenerates the table rows of user/py_offsets.c from each installed CPython's
# headers: sh tests/scripts/gen_py_offsets.sh [PYENV_ROOT] > rows.txt
set -eu
root=${1:-/root/.pyenv/versions}
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for minor in 2.7 3.6 3.7 3.8 3.9 3.10 3.11 3.12; do
	dir=$(ls -d "$root/$minor".* 2>/dev/null | head -n 1)
	[ -n "$dir" ] || { echo "/* $minor: not installed */"; continue; }
	inc=$(ls -d "$dir"/include/python"$minor"* | head -n 1)
	gcc -std=gnu11 -w -I"$inc" -I"$inc/internal" -o "$tmp/gen$minor" "$here/gen_py_offsets.c"
	echo "	/* generated from $inc */"
	"$tmp/gen$minor"
done

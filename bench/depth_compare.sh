#!/usr/bin/env bash
# Two or more builds of pybpfprof side by side on deep stacks: BPF ns per target sample
# (--bpf-stats) at 10 kHz, --no-native, bench/depth_work.py, the builds' runs interleaved so that
# the machine's drift falls on all of them alike. Prints each build's runs, sorted.
#   bench/depth_compare.sh NAME=BINARY... (e.g. main=/tmp/main/pybpfprof fast=./pybpfprof)
# Environment: VERSIONS ("3.12 3.13"), DEPTHS ("30 900"), SHAPE (distinct|recursive), RUNS (3),
# SPIN (the leaf's CPU seconds a run, 0.5), RATE (10000).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 NAME=BINARY..." >&2; exit 2; }
versions_dir=$(tools/pyenv-versions.sh)
out=$(mktemp -d /tmp/pybpfprof-compare.XXXXXX)
trap 'rm -rf "$out"' EXIT
for version in ${VERSIONS:-3.12 3.13}; do
	python=$(ls -d "$versions_dir"/"$version".*/bin/python 2>/dev/null | head -1)
	[ -n "$python" ] || { echo "$version: absent"; continue; }
	for depth in ${DEPTHS:-30 900}; do
		for build in "$@"; do : >"$out/${build%%=*}"; done
		for _ in $(seq "${RUNS:-3}"); do
			for build in "$@"; do
				"${build#*=}" --bpf-stats --no-native -F "${RATE:-10000}" -o "$out/run.mojo" -- \
					"$python" bench/depth_work.py "$depth" "cpu=${SPIN:-0.5}" "${SHAPE:-distinct}" >"$out/run.txt" 2>&1 || true
				sed -n 's/.* \([0-9]*\) ns per target sample$/\1/p' "$out/run.txt" >>"$out/${build%%=*}"
			done
		done
		printf '%s %s %s:' "$version" "$depth" "${SHAPE:-distinct}"
		for build in "$@"; do printf ' %s=%s' "${build%%=*}" "$(sort -n "$out/${build%%=*}" | paste -sd, -)"; done
		echo
	done
done

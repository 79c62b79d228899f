#!/usr/bin/env bash
# `sudo make demo`: profile the bundled example with the system's python3 and
# show what the files hold and how to open them.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-/usr/bin/python3}
if ! command -v "$python" >/dev/null 2>&1; then
	echo "demo: $python not found (set PYTHON=/path/to/python3)" >&2
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	echo "demo: pybpfprof needs root (or CAP_BPF and CAP_PERFMON): run 'sudo make demo'" >&2
	exit 1
fi

outputs=(-o demo.mojo -o demo.bin -o demo.collapsed)
if ./pybpfprof --help | grep -q '\.svg'; then outputs+=(-o demo.svg); fi

echo "== pybpfprof -F 1000 ${outputs[*]} -- $python examples/demo_app.py"
./pybpfprof -F 1000 "${outputs[@]}" -- "$python" examples/demo_app.py
echo
./pybpfprof top -n 8 demo.mojo
echo
# Files made under sudo belong to the user who asked for them.
if [ -n "${SUDO_UID:-}" ] && [ -n "${SUDO_GID:-}" ]; then
	chown "$SUDO_UID:$SUDO_GID" demo.mojo demo.bin demo.collapsed demo.svg 2>/dev/null || true
fi
cat <<TXT
How to open them:
  demo.mojo       Austin's format: austin-tui, austin-web, the Austin VS Code extension;
                  'pybpfprof dump demo.mojo' shows every event as text.
  demo.bin        CPython's Tachyon format: python3.15 -m profiling.sampling replay demo.bin
                  (--flamegraph, --pstats, ...); 'pybpfprof dump demo.bin' shows its records.
  demo.collapsed  collapsed stacks: flamegraph.pl demo.collapsed > flame.svg, speedscope, inferno.
TXT
if [ -f demo.svg ]; then echo "  demo.svg        a flame graph: open it in a browser (click to zoom)."; fi

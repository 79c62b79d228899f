#!/usr/bin/env python3
"""Loads a .pstats file with Python's own pstats.Stats, as snakeviz and gprof2dot do, and prints
its N functions with the most own time (tottime) and the most total time (cumtime), each as
"own|total PERCENT LABEL" with PERCENT of the functions' summed own time and LABEL as
`pybpfprof top` names the function: "name (file)" for a Python function, "name" for a native
one, "name [kernel]" for a kernel one. Runs on any Python 3 (no f-strings: a chroot's too).

Usage: pstats_check.py FILE [N]
"""
import pstats
import sys


def label(func):
    file, _line, name = func
    if file == "~" and name.startswith("<") and name.endswith(">"):
        return name[1:-1]
    return "%s (%s)" % (name, file) if file else name


def main():
    path = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    stats = pstats.Stats(path)
    rows = stats.stats
    total = sum(tt for (_cc, _nc, tt, _ct, _callers) in rows.values())
    if total <= 0:
        print("no time", file=sys.stderr)
        sys.exit(1)
    print("functions %d total %.6f" % (len(rows), total))
    for which, field in (("own", 2), ("total", 3)):
        ranked = sorted(rows.items(), key=lambda item: item[1][field], reverse=True)
        for func, row in ranked[:count]:
            print("%s %.2f %s" % (which, 100.0 * row[field] / total, label(func)))


main()

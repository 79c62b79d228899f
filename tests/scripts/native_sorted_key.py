# sorted() with a slow Python key: the interpreter's C sort (builtin_sorted,
# list_sort_impl) calls the key function once per item. Runs on 2.7 and 3.x
# for SECONDS (argv[1], default 2).
import sys
import time

# CPU time: a loaded machine stretches the run instead of thinning its samples (2.7
# has no process_time; its clock() is CPU time on Linux).
cpu_seconds = getattr(time, "process_time", None) or time.clock


def sort_key(value):
    total = 0
    for step in range(40):
        total += (value * step) % 7
    return total


def sort_with_key(seconds):
    items = list(range(3000))
    end = cpu_seconds() + seconds
    while cpu_seconds() < end:
        sorted(items, key=sort_key)


sort_with_key(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)

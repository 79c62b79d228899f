# sorted() with a slow Python key: the interpreter's C sort (builtin_sorted,
# list_sort_impl) calls the key function once per item. Runs on 2.7 and 3.x
# for SECONDS (argv[1], default 2).
import sys
import time


def sort_key(value):
    total = 0
    for step in range(40):
        total += (value * step) % 7
    return total


def sort_with_key(seconds):
    items = list(range(3000))
    end = time.time() + seconds
    while time.time() < end:
        sorted(items, key=sort_key)


sort_with_key(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)

# libc's qsort through ctypes with a Python comparator: Python calls C (libffi,
# then qsort), which calls back into Python for every comparison. Runs on 2.7
# and 3.x for SECONDS (argv[1], default 2).
import ctypes
import random
import sys
import time

# CPU time: a loaded machine stretches the run instead of thinning its samples (2.7
# has no process_time; its clock() is CPU time on Linux).
cpu_seconds = getattr(time, "process_time", None) or time.clock

LIBC = ctypes.CDLL(None)
COMPARE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))


def qsort_compare(left, right):
    a, b = left[0], right[0]
    return (a > b) - (a < b)


def sort_through_qsort(seconds):
    compare = COMPARE(qsort_compare)
    values = list(range(4000))
    random.Random(7).shuffle(values)
    end = cpu_seconds() + seconds
    while cpu_seconds() < end:
        array = (ctypes.c_int * len(values))(*values)
        LIBC.qsort(array, len(values), ctypes.sizeof(ctypes.c_int), compare)


sort_through_qsort(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)

# numpy's C and C++ code and the BLAS under Python functions: a matrix product
# (BLAS dgemm) then a sort (numpy's own C++ sorts), SECONDS (argv[1]) each,
# after a second of warm-up: importing numpy maps some 30 libraries, which the
# profiler's native unwinder learns about within about a second.
import sys
import time

import numpy

# CPU time: a loaded machine stretches the run instead of thinning its samples (2.7
# has no process_time; its clock() is CPU time on Linux).
cpu_seconds = getattr(time, "process_time", None) or time.clock


def numpy_matmul(seconds):
    rng = numpy.random.RandomState(7)
    a, b = rng.rand(200, 200), rng.rand(200, 200)
    end = cpu_seconds() + seconds
    while cpu_seconds() < end:
        numpy.dot(a, b)


def numpy_sort(seconds):
    values = numpy.random.RandomState(7).rand(1 << 18)
    end = cpu_seconds() + seconds
    while cpu_seconds() < end:
        numpy.sort(values, kind="quicksort")


def warm_up(seconds):
    numpy_matmul(seconds)


seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5
warm_up(1.0)
numpy_matmul(seconds)
numpy_sort(seconds)

# The profiling target of tests/e2e/test_record.c; runs unchanged on 2.7 and 3.6-3.15.
# Each phase is a function whose name the test looks for in the samples.
import os
import random
import sys
import threading
import time

SPLIT_SECONDS = 2.5
PHASE_SECONDS = 0.8
SPLIT_BLOCK = 16


# while loops, not range(): Python 2's range builds a list, which would skew the split.
def heavy(n):  # heavy-body
    total = 0  # heavy-body
    i = 0  # heavy-body
    limit = 3 * n  # heavy-body
    while i < limit:  # heavy-body
        total += i  # heavy-body
        i += 1  # heavy-body
    return total  # heavy-body


def light(n):  # light-body
    total = 0  # light-body
    i = 0  # light-body
    while i < n:  # light-body
        total += i  # light-body
        i += 1  # light-body
    return total  # light-body


# CPU time of this process (2.7 has no process_time; its clock() is CPU time on Linux).
# The single-threaded phases last for CPU time, not wall time: a cpu-mode profile samples CPU
# time, so the test sees as many samples on a busy machine as on a quiet one.
cpu_seconds = getattr(time, "process_time", None) or time.clock


def phase_split():
    # Calls of random length: a call as long as the sampling period would
    # otherwise be sampled at the same point every time and skew the split.
    # The split is 3:1 by iterations; the CPU each side really took is measured
    # too and told on stderr, so that a profile is checked against the truth.
    # The clock is read around blocks of calls, not around each call: reading
    # a CPU clock is a system call at which a loaded kernel preempts the thread,
    # and a clock read at every heavy/light boundary put the preemptions there,
    # which skewed timer sampling (perf's as much as ours) by up to 10 points.
    rng = random.Random(1234)
    heavy_cpu = light_cpu = 0.0
    while heavy_cpu + light_cpu < SPLIT_SECONDS:
        sizes = [rng.randint(2000, 12000) for _ in range(SPLIT_BLOCK)]
        start = cpu_seconds()
        for n in sizes:
            heavy(n)
        middle = cpu_seconds()
        for n in sizes:
            light(n)
        heavy_cpu += middle - start
        light_cpu += cpu_seconds() - middle
    sys.stderr.write("split-truth %.6f %.6f\n" % (heavy_cpu, light_cpu))
    sys.stderr.flush()


def bottom(seconds):
    end = cpu_seconds() + seconds
    while cpu_seconds() < end:
        pass


def recurse(depth, leaf):
    if depth > 1:
        return recurse(depth - 1, leaf)
    return leaf(PHASE_SECONDS)


def bottom_deep(seconds):
    bottom_spin_until = cpu_seconds() + seconds
    while cpu_seconds() < bottom_spin_until:
        pass


def phase_recursion():
    recurse(500, bottom)


def phase_deep():
    recurse(1500, bottom_deep)


def split_leaf(seconds):
    phase_split()


# The split under a deep stack: every sample's walk is long (tests/e2e/test_overhead_budget.c).
def phase_deep_split():
    recurse(900, split_leaf)


def thread_cpu_clock():
    """This thread's CPU time in seconds (3.7+ thread_time, 3.3+ clock_gettime, 2.7 through libc)."""
    if hasattr(time, "thread_time"):
        return time.thread_time
    if hasattr(time, "clock_gettime") and hasattr(time, "CLOCK_THREAD_CPUTIME_ID"):
        return lambda: time.clock_gettime(time.CLOCK_THREAD_CPUTIME_ID)
    import ctypes

    class Timespec(ctypes.Structure):
        _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]

    libc = ctypes.CDLL("libc.so.6", use_errno=True)

    def thread_time():
        now = Timespec()
        if libc.clock_gettime(3, ctypes.byref(now)) != 0:  # 3: CLOCK_THREAD_CPUTIME_ID
            raise OSError(ctypes.get_errno(), "clock_gettime")
        return now.tv_sec + now.tv_nsec * 1e-9

    return thread_time


thread_cpu_seconds = thread_cpu_clock()


# Each worker spins until it has run a quarter of PHASE_SECONDS itself. The GIL is not handed out
# fairly (3.6 left one of four workers 14 samples of 800 in one run), so a quota of the
# process's CPU shared by all would leave a worker as short as the GIL made it; on a starved
# machine the phase lasts longer, and each thread is still sampled as often as on a quiet one.
def spin():
    end = thread_cpu_seconds() + PHASE_SECONDS / 4
    while thread_cpu_seconds() < end:
        pass


def worker_0():
    spin()


def worker_1():
    spin()


def worker_2():
    spin()


def worker_3():
    spin()


def phase_threads():
    threads = [threading.Thread(target=f) for f in (worker_0, worker_1, worker_2, worker_3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def read_zero():
    fd = os.open("/dev/zero", os.O_RDONLY)
    end = cpu_seconds() + PHASE_SECONDS
    while cpu_seconds() < end:
        os.read(fd, 1 << 20)
    os.close(fd)


def main():
    sys.setrecursionlimit(10000)
    phases = sys.argv[1:] or ["split", "recursion", "deep", "threads", "read"]
    table = {
        "split": phase_split,
        "recursion": phase_recursion,
        "deep": phase_deep,
        "deep_split": phase_deep_split,
        "threads": phase_threads,
        "read": read_zero,
    }
    for name in phases:
        table[name]()


main()

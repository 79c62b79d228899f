# Workload for --mode memory (tests/e2e/test_sample_modes.c); runs on 2.7 and 3.x.
#   memory: prints "ready", then spins in wait_for_go() until SIGUSR1 comes (the test sends it
#   once the profiler samples this process: a signal reaches a chrooted interpreter too). Then
#   grow_a() touches 200 MB of fresh anonymous memory and grow_b() 100 MB, 4 MB at a time,
#   each step followed by some CPU time spent in the same function (so the tick that sees a
#   step's growth lands there too, whatever the load); release_b() unmaps grow_b's 100 MB and
#   spins likewise. Prints the truth, "grew a=BYTES b=BYTES released b=BYTES", and exits.
import mmap
import resource
import signal
import sys

STEP_BYTES = 4 << 20
PAGE_BYTES = mmap.PAGESIZE
STEP_CPU_S = 0.04
go = []


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def spin(seconds):
    # A while loop on small ints: no new memory while it runs.
    end = cpu_seconds() + seconds
    total = 0
    while cpu_seconds() < end:
        i = 0
        while i < 1000:
            total += i % 7
            i += 1
    return total


def touch(buffer, start, end):
    offset = start
    while offset < end:
        buffer[offset:offset + 1] = b"\x01"
        offset += PAGE_BYTES


def grow(buffer):
    for start in range(0, len(buffer), STEP_BYTES):
        touch(buffer, start, start + STEP_BYTES)
        spin(STEP_CPU_S)


def grow_a(buffer):
    grow(buffer)


def grow_b(buffer):
    grow(buffer)


def release_b(buffer):
    buffer.close()
    spin(10 * STEP_CPU_S)


def wait_for_go():
    while not go:
        spin(0.01)


def main():
    signal.signal(signal.SIGUSR1, lambda number, frame: go.append(number))
    a = mmap.mmap(-1, 200 << 20)
    b = mmap.mmap(-1, 100 << 20)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    wait_for_go()
    grow_a(a)
    grow_b(b)
    size_b = len(b)
    release_b(b)
    sys.stdout.write("grew a=%d b=%d released b=%d\n" % (len(a), size_b, size_b))
    sys.stdout.flush()


if __name__ == "__main__" and sys.argv[1] == "memory":
    main()

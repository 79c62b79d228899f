# Workload for live `pybpfprof top` with an event or a mode (tests/e2e/test_live_top_events.c);
# runs on 3.x until it is killed.
#   sleeps: prints "ready" (for the test that starts it), then, round after round, long_sleep() sleeps 6 ms and short_sleep()
#           2 ms (off-cpu: 3 times the blocked time in long_sleep, whatever the load adds to
#           both alike).
#   exceptions: round after round, parse_a() three times and parse_b() once, each raising a
#           ValueError and spinning in its except block, then settle() spins as long with no
#           exception in flight (exception mode: parse_a 3 times parse_b's samples, settle none).
#   memory: round after round, grow_a() maps 32 MB and touches every page of it, free_b() unmaps
#           it; each then spins in its own body, so that the tick after a step's change of
#           resident memory lands in the function that made it (memory mode: grow_a grows,
#           free_b releases, 32 MB a round each).
import mmap
import sys
import time

SPIN_STEPS = 20000


def long_sleep():
    time.sleep(0.006)


def short_sleep():
    time.sleep(0.002)


def sleeps():
    while True:
        long_sleep()
        short_sleep()


def parse_a():
    try:
        raise ValueError("a")
    except ValueError:
        i = 0
        while i < SPIN_STEPS: i += 1  # noqa: E701 (one line: one row in top)


def parse_b():
    try:
        raise ValueError("b")
    except ValueError:
        i = 0
        while i < SPIN_STEPS: i += 1  # noqa: E701 (one line: one row in top)


def settle():
    i = 0
    while i < SPIN_STEPS:
        i += 1


MEMORY_STEP_BYTES = 32 << 20
MEMORY_SPIN_STEPS = 500000


def grow_a():
    buffer = mmap.mmap(-1, MEMORY_STEP_BYTES)
    offset = 0
    while offset < MEMORY_STEP_BYTES: buffer[offset:offset + 1] = b"\x01"; offset += mmap.PAGESIZE  # noqa: E702
    i = 0
    while i < MEMORY_SPIN_STEPS: i += 1  # noqa: E701 (one line: one row in top)
    return buffer


def free_b(buffer):
    buffer.close()
    i = 0
    while i < MEMORY_SPIN_STEPS: i += 1  # noqa: E701 (one line: one row in top)


def memory():
    while True:
        free_b(grow_a())


def exceptions():
    while True:
        for _ in range(3):
            parse_a()
            settle()
        parse_b()
        settle()


if __name__ == "__main__" and sys.argv[1] == "sleeps":
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    sleeps()
elif __name__ == "__main__" and sys.argv[1] == "memory":
    memory()
elif __name__ == "__main__":
    exceptions()

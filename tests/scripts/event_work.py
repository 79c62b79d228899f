# Workloads for --event (tests/e2e/test_events.c, bench/); runs on 2.7 and 3.x.
#   faults:  touch_fresh() fills a fresh 200 MB buffer (its pages first touched: one fault each),
#            then compute() does arithmetic on a few small ints (no new memory), over and over.
#            Prints "ready" once the loop has run once, then loops until killed.
#   buffers N: the same N times, then prints the truth: "touched N BYTES" (the bytes touch_fresh
#            filled) and exits.
#   switches SECONDS: the process forks; for SECONDS the parent calls sleep_often(), which sleeps
#            100 us at a time (a context switch out per sleep), and the child calls spin(), which
#            computes without a pause (switched out only when the scheduler preempts it). Each
#            counts its own context switches (getrusage) inside its function; at the end the
#            parent prints the truth: "switches sleep_often=N spin=M".
import os
import resource
import sys
import time

BUFFER_BYTES = 200 << 20


def touch_fresh():
    # bytearray(n) zeroes its n bytes, and a block this large is a fresh mapping each time
    # (malloc maps it and unmaps it at free): every page is touched for the first time here.
    buffer = bytearray(BUFFER_BYTES)
    return len(buffer)


def compute():
    # A while loop, not range(): Python 2's range builds a list (new memory, new pages).
    total = 0
    i = 0
    while i < 500000:
        total += i * i % 7
        i += 1
    return total


def sleep_often():
    for _ in range(1000):
        time.sleep(0.0001)


def spin():
    total = 0
    i = 0
    while i < 200000:
        total += i % 3
        i += 1
    return total


def switches_so_far():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_nvcsw + usage.ru_nivcsw


def count_switches_in(function, seconds):
    """Calls function for seconds; the context switches that happened inside its calls."""
    inside = 0
    end = time.time() + seconds
    while time.time() < end:
        before = switches_so_far()
        function()
        inside += switches_so_far() - before
    return inside


def switches(seconds):
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read_end)
        os.write(write_end, str(count_switches_in(spin, seconds)).encode())
        os._exit(0)
    os.close(write_end)
    slept = count_switches_in(sleep_often, seconds)
    spun = int(os.read(read_end, 64))
    os.waitpid(child, 0)
    sys.stdout.write("switches sleep_often=%d spin=%d\n" % (slept, spun))
    sys.stdout.flush()


def faults():
    touch_fresh()
    compute()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        touch_fresh()
        compute()


def buffers(count):
    touched = 0
    for _ in range(count):
        touched += touch_fresh()
        compute()
    sys.stdout.write("touched %d %d\n" % (count, touched))
    sys.stdout.flush()


def main():
    if sys.argv[1] == "switches":
        switches(float(sys.argv[2]))
    elif sys.argv[1] == "buffers":
        buffers(int(sys.argv[2]))
    else:
        faults()


main()

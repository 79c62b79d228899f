# Workload for --mode exception (tests/e2e/test_sample_modes.c); runs on 3.x.
#   exceptions: prints "ready", then spins in wait_for_go(), handling an exception, until
#   SIGUSR1 comes (the test sends it once the profiler samples this process). Then, for ROUNDS
#   rounds, calls parse_a() three times and parse_b() once; each raises a ValueError, catches
#   it in the same function and, while handling it (in its except block), does the same work,
#   handle(). After each call, settle() does as much work with no exception in flight. Prints
#   the truth, "raised a=N b=M", and exits.
import resource
import signal
import sys

ROUNDS = 600
WORK_STEPS = 20000
go = []


def work():
    # A while loop on small ints: the same CPU in every caller.
    total = 0
    i = 0
    while i < WORK_STEPS:
        total += i % 7
        i += 1
    return total


def handle():
    return work()


def parse_a():
    try:
        raise ValueError("a")
    except ValueError:
        return handle()


def parse_b():
    try:
        raise ValueError("b")
    except ValueError:
        return handle()


def settle():
    return work()


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def wait_for_go():
    # Handling an exception while it waits: exception mode keeps these samples, which tell the
    # test that the profiler samples this thread.
    while not go:
        try:
            raise LookupError("not yet")
        except LookupError:
            end = cpu_seconds() + 0.01
            while cpu_seconds() < end:
                pass


def main():
    signal.signal(signal.SIGUSR1, lambda number, frame: go.append(number))
    raised_a = raised_b = 0
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    wait_for_go()
    for _ in range(ROUNDS):
        for _ in range(3):
            parse_a()
            raised_a += 1
            settle()
        parse_b()
        raised_b += 1
        settle()
    sys.stdout.write("raised a=%d b=%d\n" % (raised_a, raised_b))
    sys.stdout.flush()


if __name__ == "__main__" and sys.argv[1] == "exceptions":
    main()

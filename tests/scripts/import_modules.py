# Imports COUNT freshly written modules whose bodies each spin a few
# milliseconds of CPU at module level, as a program's startup does: a module body's
# code object is freed as soon as its import ends, so the profiler must read
# it while it runs. Like real modules, each defines a function, which keeps
# the module's file name string alive after the body is freed (a module with
# no function or class leaves nothing of itself: one shaped exactly like the
# module before it can take over its addresses and be given its name).
# With the argument "gated" it prints "ready", spins in wait_for_go until SIGUSR1, imports,
# prints "imported" and then sleeps until it is killed (the test ends the profiler first, while
# the strings its module bodies pointed at are still there to be read).
# Runs on 2.7 and 3.6-3.15.
import os
import shutil
import signal
import sys
import tempfile
import time

COUNT = 20
SECONDS = 0.008
# The spin is of the process's CPU time (time.clock on 2.7): on a busy host a body spun by
# the wall clock may get no CPU, and then no sample, however well the profiler does.
BODY = """import time


def version():
    return %d


_cpu = getattr(time, "process_time", None) or time.clock
_end = _cpu() + %f
while _cpu() < _end:
    pass
"""


go = []


def cpu_seconds():
    return (getattr(time, "process_time", None) or time.clock)()


def wait_for_go():
    while not go:
        end = cpu_seconds() + 0.01
        while cpu_seconds() < end:
            pass


def main(gated):
    directory = tempfile.mkdtemp(prefix="pybpfprof-imports-")
    sys.dont_write_bytecode = True
    try:
        for index in range(COUNT):
            with open(os.path.join(directory, "startup_mod_%d.py" % index), "w") as module:
                module.write(BODY % (index, SECONDS))
        sys.path.insert(0, directory)
        if gated:
            signal.signal(signal.SIGUSR1, lambda number, frame: go.append(number))
            sys.stdout.write("ready\n")
            sys.stdout.flush()
            wait_for_go()
        for index in range(COUNT):
            __import__("startup_mod_%d" % index)
    finally:
        shutil.rmtree(directory)
    if gated:
        sys.stdout.write("imported\n")
        sys.stdout.flush()
        while True:
            time.sleep(1)


main(sys.argv[1:] == ["gated"])

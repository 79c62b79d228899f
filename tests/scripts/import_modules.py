# Imports COUNT freshly written modules whose bodies each spin a few
# milliseconds of CPU at module level, as a program's startup does: a module body's
# code object is freed as soon as its import ends, so the profiler must read
# it while it runs. Like real modules, each defines a function, which keeps
# the module's file name string alive after the body is freed (a module with
# no function or class leaves nothing of itself: one shaped exactly like the
# module before it can take over its addresses and be given its name).
# Runs on 2.7 and 3.6-3.15.
import os
import shutil
import sys
import tempfile

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


def main():
    directory = tempfile.mkdtemp(prefix="pybpfprof-imports-")
    sys.dont_write_bytecode = True
    try:
        for index in range(COUNT):
            with open(os.path.join(directory, "startup_mod_%d.py" % index), "w") as module:
                module.write(BODY % (index, SECONDS))
        sys.path.insert(0, directory)
        for index in range(COUNT):
            __import__("startup_mod_%d" % index)
    finally:
        shutil.rmtree(directory)


main()

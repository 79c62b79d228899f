# Runs a static function of a stripped library whose only name for it is in its
# MiniDebugInfo (.gnu_debugdata), through its exported caller call_hidden.
# Usage: native_minidebuginfo.py LIBRARY [SECONDS]. Runs on 2.7 and 3.x.
import ctypes
import sys
import time

# CPU time: a loaded machine stretches the run instead of thinning its samples (2.7
# has no process_time; its clock() is CPU time on Linux).
cpu_seconds = getattr(time, "process_time", None) or time.clock


def spin_in_library(library, seconds):
    call_hidden = ctypes.CDLL(library).call_hidden
    call_hidden.restype = ctypes.c_ulong
    call_hidden.argtypes = [ctypes.c_ulong]
    end = cpu_seconds() + seconds
    while cpu_seconds() < end:
        call_hidden(200000)


if __name__ == "__main__":
    spin_in_library(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 2.0)

# Spends its time in C: zlib.compress runs in libz, below the Python frame
# that calls it. Runs on 2.7 and 3.6-3.15.
import sys
import time
import zlib

# CPU time: a loaded machine stretches the run instead of thinning its samples (2.7
# has no process_time; its clock() is CPU time on Linux).
cpu_seconds = getattr(time, "process_time", None) or time.clock

DATA = bytes(bytearray((i * 7 + (i >> 5)) & 0xFF for i in range(1 << 20)))


def compress_loop(seconds):
    end = cpu_seconds() + seconds
    while cpu_seconds() < end:
        zlib.compress(DATA, 9)


compress_loop(float(sys.argv[1]) if len(sys.argv) > 1 else 1.5)

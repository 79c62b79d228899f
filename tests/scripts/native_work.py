# Spends its time in C: zlib.compress runs in libz, below the Python frame
# that calls it. Runs on 2.7 and 3.6-3.15.
import sys
import time
import zlib

DATA = bytes(bytearray((i * 7 + (i >> 5)) & 0xFF for i in range(1 << 20)))


def compress_loop(seconds):
    end = time.time() + seconds
    while time.time() < end:
        zlib.compress(DATA, 9)


compress_loop(float(sys.argv[1]) if len(sys.argv) > 1 else 1.5)

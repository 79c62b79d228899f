# Spends its time in C from its first moments: zlib.compress runs in libz's deflate,
# below the Python function that calls it, right after the interpreter starts (the
# data is made in C). The unwind tables of the interpreter's files are built while
# the first of those samples come in. Runs on 2.7 and 3.6-3.15.
import sys
import time
import zlib

cpu_seconds = getattr(time, "process_time", None) or time.clock

DATA = b"".join(bytes(bytearray([i, (i * 7) & 0xFF, (i >> 3) & 0xFF])) for i in range(256)) * 1024


def compress_at_once(seconds):
    end = cpu_seconds() + seconds
    while cpu_seconds() < end:
        zlib.compress(DATA, 9)


compress_at_once(float(sys.argv[1]) if len(sys.argv) > 1 else 0.4)

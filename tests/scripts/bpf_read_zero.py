# Spends its time in the kernel: reads /dev/zero in a loop, for ever, or for
# SECONDS (argv[1]).
import os
import sys
import time


def bpf_read_zero(seconds):
    fd = os.open("/dev/zero", os.O_RDONLY)
    end = time.time() + seconds if seconds else None
    while end is None or time.time() < end:
        os.read(fd, 1 << 20)


sys.stdout.write("ready\n")
sys.stdout.flush()
bpf_read_zero(float(sys.argv[1]) if len(sys.argv) > 1 else 0)

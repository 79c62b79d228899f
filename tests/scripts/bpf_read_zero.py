# Spends its time in the kernel: reads /dev/zero in a loop.
import os
import sys


def bpf_read_zero():
    fd = os.open("/dev/zero", os.O_RDONLY)
    while True:
        os.read(fd, 1 << 20)


sys.stdout.write("ready\n")
sys.stdout.flush()
bpf_read_zero()

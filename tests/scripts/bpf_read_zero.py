# Spends its time in the kernel: reads /dev/zero in a loop, for ever, or for
# SECONDS (argv[1]).
import os
import sys
import time

# CPU time: a loaded machine stretches the run instead of thinning its samples (2.7
# has no process_time; its clock() is CPU time on Linux).
cpu_seconds = getattr(time, "process_time", None) or time.clock


def bpf_read_zero(seconds):
    fd = os.open("/dev/zero", os.O_RDONLY)
    end = cpu_seconds() + seconds if seconds else None
    while end is None or cpu_seconds() < end:
        os.read(fd, 1 << 20)


sys.stdout.write("ready\n")
sys.stdout.flush()
bpf_read_zero(float(sys.argv[1]) if len(sys.argv) > 1 else 0)

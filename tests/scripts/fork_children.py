# A parent that forks two children (no exec), each spinning in its own
# function while the parent spins too; runs on 2.7 and 3.6-3.15.
import os
import time

SECONDS = 1.2
# CPU time of this process (2.7's clock() is CPU time on Linux): each process spins for CPU
# time, so that its samples do not depend on how busy the machine is.
cpu_seconds = getattr(time, "process_time", None) or time.clock


def spin(seconds):
    end = cpu_seconds() + seconds
    while cpu_seconds() < end:
        pass


def child_spin():
    spin(SECONDS)


def parent_spin():
    spin(SECONDS)


def main():
    children = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            child_spin()
            os._exit(0)
        children.append(pid)
    parent_spin()
    for pid in children:
        os.waitpid(pid, 0)
    print(" ".join(str(pid) for pid in children))


main()

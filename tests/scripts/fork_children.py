# A parent that forks two children (no exec), each spinning in its own
# function while the parent spins too; runs on 2.7 and 3.6-3.15.
import os
import time

SECONDS = 1.2


def spin(seconds):
    end = time.time() + seconds
    while time.time() < end:
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

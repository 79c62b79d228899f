# A fixed amount of CPU-bound work (3:1 split), timed by itself, so that a
# profiled run can be compared with an unprofiled one. Prints the seconds.
import sys
import time


def heavy():
    total = 0
    i = 0
    while i < 30000:
        total += i
        i += 1
    return total


def light():
    total = 0
    i = 0
    while i < 10000:
        total += i
        i += 1
    return total


def main(rounds):
    start = time.time()
    for _ in range(rounds):
        heavy()
        light()
    print("%.3f" % (time.time() - start))


main(int(sys.argv[1]) if len(sys.argv) > 1 else 1500)

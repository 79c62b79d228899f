# Targets for tests/e2e/test_gil.c (Python 2.7 and 3.x alike).
#   contend   two threads spinning in Python code, contending for the GIL, while the
#             main thread waits in join: prints "ready" once both run
#   cycles    one thread creating reference cycles, so that the collector runs often
import sys
import threading
import time


def contend_spin():
    count = 0
    while True:
        count += 1


class Node(object):
    def __init__(self):
        self.me = self
        self.pad = [self] * 4


def make_cycles():
    for _ in range(200):
        Node()


def cycles_forever():
    while True:
        make_cycles()


def main():
    mode = sys.argv[1]
    if mode == "contend":
        threads = [threading.Thread(target=contend_spin) for _ in range(2)]
        for thread in threads:
            thread.daemon = True
            thread.start()
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        for thread in threads:
            thread.join()
    elif mode == "cycles":
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        cycles_forever()


main()

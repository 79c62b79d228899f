# Wall-mode bench (bench/bench.sh): N threads waiting in time.sleep three calls deep, for S seconds.
import sys
import threading
import time


def wait_here(seconds):
    time.sleep(seconds)


def middle(seconds):
    wait_here(seconds)


def outer(seconds):
    middle(seconds)


if __name__ == "__main__":
    count, seconds = int(sys.argv[1]), float(sys.argv[2])
    for _ in range(count):
        thread = threading.Thread(target=outer, args=(seconds + 5,))
        thread.daemon = True
        thread.start()
    time.sleep(seconds)

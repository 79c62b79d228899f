# Target for tests/e2e/test_children.c: a multiprocessing.Pool parent whose two workers spin in
# busy_worker (a task each: it never returns), the parent itself idle. Prints "ready PID,PID"
# (the workers') once both have started: they exist before any profiler attaches.
import multiprocessing
import sys
import time


def busy_worker():
    count = 0
    while True:
        count += 1


def main():
    pool = multiprocessing.Pool(2)
    for _ in range(2):
        pool.apply_async(busy_worker)
    pids = sorted(worker.pid for worker in pool._pool)
    time.sleep(0.5)
    sys.stdout.write("ready %d,%d\n" % tuple(pids))
    sys.stdout.flush()
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()

# Target for tests/e2e/test_services.c (Celery, prefork pool, Redis broker at SERVICE_BROKER):
# the task crunch spins; each run appends "PID CPU_NS START_NS END_NS" (its CPU time by
# time.thread_time, its span by time.monotonic, CLOCK_MONOTONIC) to SERVICE_TRUTH_DIR/celery.PID,
# where set: which children ran the task, and when, by their own account.
import os
import time

from celery import Celery

app = Celery("celery_app", broker=os.environ.get("SERVICE_BROKER", "redis://127.0.0.1:6379/0"))
app.conf.worker_prefetch_multiplier = 1
app.conf.task_acks_late = True


@app.task(ignore_result=True)
def crunch(rounds):
    began = time.monotonic_ns()
    start = time.thread_time_ns()
    total = 0
    for i in range(rounds):
        total += i * i % 7
    spent = time.thread_time_ns() - start
    directory = os.environ.get("SERVICE_TRUTH_DIR")
    if directory:
        with open(os.path.join(directory, "celery.%d" % os.getpid()), "a") as out:
            out.write("%d %d %d %d\n" % (os.getpid(), spent, began, time.monotonic_ns()))
    return total


if __name__ == "__main__":
    # python3 celery_app.py COUNT ROUNDS: queue COUNT tasks, then exit.
    import sys

    for _ in range(int(sys.argv[1])):
        crunch.delay(int(sys.argv[2]))

# Target for tests/e2e/test_services.c (gunicorn, sync workers) and `make bench`: a Flask app
# with two views of known cost, /report costing three times /lookup. Each worker measures
# the CPU time its own views took (time.thread_time) and, where SERVICE_TRUTH_DIR is set,
# writes "REPORT_NS LOOKUP_NS STARTED_NS ENDED_NS" to SERVICE_TRUTH_DIR/flask.PID at exit
# (gunicorn's hooks, gunicorn_conf.py; its span by time.monotonic, CLOCK_MONOTONIC): the
# truth the profile is checked against.
import os
import time

from flask import Flask

app = Flask(__name__)
view_ns = {"report": 0, "lookup": 0}
started_ns = 0
UNIT = 300000


def crunch(rounds):
    total = 0
    for i in range(rounds):
        total += i * i % 7
    return total


@app.route("/report")
def report():
    start = time.thread_time_ns()
    total = crunch(3 * UNIT)
    view_ns["report"] += time.thread_time_ns() - start
    return "report %d\n" % total


@app.route("/lookup")
def lookup():
    start = time.thread_time_ns()
    total = crunch(UNIT)
    view_ns["lookup"] += time.thread_time_ns() - start
    return "lookup %d\n" % total


def worker_started():
    global started_ns
    started_ns = time.monotonic_ns()


def write_truth():
    directory = os.environ.get("SERVICE_TRUTH_DIR")
    if not directory:
        return
    path = os.path.join(directory, "flask.%d" % os.getpid())
    with open(path + ".tmp", "w") as out:
        out.write("%d %d %d %d\n" % (view_ns["report"], view_ns["lookup"], started_ns, time.monotonic_ns()))
    os.rename(path + ".tmp", path)

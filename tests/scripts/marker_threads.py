# A target for tests/e2e/test_discover_live_interpreters.c: the main thread waits in marker_main,
# a second thread in marker_thread. Prints each thread's ident, then "ready".
# Runs on 2.7 and every 3.x; exits by itself after a minute if never killed.
import sys
import threading
import time

LIFETIME_TICKS = 1200
started = threading.Event()
idents = {}


def marker_thread(started_event):
    idents["thread"] = threading.current_thread().ident
    started_event.set()
    for _ in range(LIFETIME_TICKS):
        time.sleep(0.05)


def marker_main(worker, started_event):
    started_event.wait(30)
    sys.stdout.write("main %d\n" % threading.current_thread().ident)
    sys.stdout.write("thread %d\n" % idents["thread"])
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for _ in range(LIFETIME_TICKS):
        time.sleep(0.05)
    worker.join()


worker = threading.Thread(target=marker_thread, args=(started,))
worker.daemon = True
worker.start()
marker_main(worker, started)

# Threads for wall mode (tests/e2e/test_wall.c); runs on 2.7 and 3.x.
#   waits: a spinning thread, one in time.sleep, one blocked in os.read on a pipe,
#          one waiting on a threading.Lock; the main thread waits in main_wait.
#   duty:  one thread that sleeps 0.3 s and spins 0.1 s, over and over.
#   flicker: one thread that spins 1 ms and sleeps 1 ms, over and over (tests/e2e/test_stacks.c:
#          its state changes while it is read).
#   alternate: one thread that spins 0.05 ms at the end of one call chain, then of another, over
#          and over: frames of each chain take the other's places on the data stack, while a
#          wall-mode read from another CPU may be going on (tests/e2e/test_wall.c). The process
#          keeps to its last allowed CPU (3.3+).
# Prints "ready" once every thread runs, then lives until killed, or for SECONDS if given
# (the second argument); then duty prints on stderr the wall time its thread spent in
# duty_sleep and in the whole cycle ("duty-truth SLEEP TOTAL", seconds): the profile's truth.
import os
import sys
import threading
import time


def spin_forever():
    while True:
        pass


def sleep_forever():
    # One sleep for the whole run: a thread woken every second waits for a CPU on a busy machine,
    # and is rightly seen runnable then, not in its kernel wait.
    while True:
        time.sleep(3600)


def read_pipe_forever(read_end):
    os.read(read_end, 1)


def wait_on_lock(lock):
    lock.acquire()


def duty_sleep():
    time.sleep(0.3)


def duty_spin():
    end = time.time() + 0.1
    while time.time() < end:
        pass


def flicker():
    while True:
        end = time.time() + 0.001
        while time.time() < end:
            pass
        time.sleep(0.001)


def alternate_spin():
    end = time.time() + 0.00005
    while time.time() < end:
        pass


def chain_a_leaf():
    alternate_spin()


def chain_a_middle():
    chain_a_leaf()


def chain_a_root():
    chain_a_middle()


def chain_b_leaf():
    alternate_spin()


def chain_b_middle():
    chain_b_leaf()


def chain_b_root():
    chain_b_middle()


def alternate():
    while True:
        chain_a_root()
        chain_b_root()


duty_seconds = [0.0, 0.0]  # in duty_sleep, in complete cycles


def duty_cycle():
    while True:
        start = time.time()
        duty_sleep()
        slept = time.time()
        duty_spin()
        duty_seconds[0] += slept - start
        duty_seconds[1] += time.time() - start


def start(target, *args):
    thread = threading.Thread(target=target, args=args)
    thread.daemon = True
    thread.start()


def main_wait(seconds):
    end = time.time() + seconds
    while time.time() < end:
        time.sleep(min(1, max(0, end - time.time())))


if __name__ == "__main__":
    if sys.argv[1] == "waits":
        read_end, _write_end = os.pipe()
        held = threading.Lock()
        held.acquire()
        start(spin_forever)
        start(sleep_forever)
        start(read_pipe_forever, read_end)
        start(wait_on_lock, held)
    elif sys.argv[1] == "flicker":
        start(flicker)
    elif sys.argv[1] == "alternate":
        # On the last CPU, so that a profiler kept off it reads the thread while it runs.
        if hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) > 1:
            os.sched_setaffinity(0, [max(os.sched_getaffinity(0))])
        start(alternate)
    else:
        start(duty_cycle)
    time.sleep(0.2)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    main_wait(float(sys.argv[2]) if len(sys.argv) > 2 else float("inf"))
    if sys.argv[1] == "duty":
        sys.stderr.write("duty-truth %.6f %.6f\n" % (duty_seconds[0], duty_seconds[1]))

# Workload for --event off-cpu (tests/e2e/test_offcpu.c, bench/offcpu.sh); runs on 3.x.
#   blocks ROUNDS: a worker thread, ROUNDS times, calls f(), which sleeps 7 ms (time.sleep), then
#            g(), which waits about 3 ms on a lock a second thread holds; then calls tiny_block(),
#            which sleeps 1 ms at a time, ROUNDS times. Each function measures the time spent in
#            its wait (time.perf_counter around it): at the end the truth, in nanoseconds,
#            "blocked f=N g=N tiny_block=N tiny_calls=N".
#   gated_blocks ROUNDS: prints "ready", then sleeps 5 ms at a time in wait_for_go() until SIGUSR1
#            comes (the test sends it once the profiler, attached or on the whole host, has these
#            blocks), then does what blocks does.
#   switches SECONDS: two threads hand a token back and forth through two pipes for SECONDS (each
#            thread blocking in read while the other has it), then print
#            "handovers N cpu_s S" (S: the process's user+system CPU seconds, which include the
#            BPF time of its own switches): bench/offcpu.sh's context-switch-heavy load.
import os
import signal
import sys
import threading
import time

F_SLEEP_S = 0.007
G_HOLD_S = 0.003
TINY_SLEEP_S = 0.001


def f(totals):
    start = time.perf_counter()
    time.sleep(F_SLEEP_S)
    totals["f"] += time.perf_counter() - start


def g(lock, totals):
    start = time.perf_counter()
    lock.acquire()
    totals["g"] += time.perf_counter() - start
    lock.release()


def tiny_block(totals):
    start = time.perf_counter()
    time.sleep(TINY_SLEEP_S)
    totals["tiny_block"] += time.perf_counter() - start


def hold(lock, request, taken, done):
    """Takes the lock whenever the worker asks, says so, keeps it G_HOLD_S and lets it go."""
    while True:
        request.wait()
        request.clear()
        if done.is_set():
            return
        lock.acquire()
        taken.set()
        time.sleep(G_HOLD_S)
        lock.release()


def work(rounds, totals):
    lock = threading.Lock()
    request, taken, done = threading.Event(), threading.Event(), threading.Event()
    holder = threading.Thread(target=hold, args=(lock, request, taken, done))
    holder.start()
    for _ in range(rounds):
        f(totals)
        request.set()
        taken.wait()
        taken.clear()
        g(lock, totals)
    done.set()
    request.set()
    holder.join()
    for _ in range(rounds):
        tiny_block(totals)


def blocks(rounds):
    totals = {"f": 0.0, "g": 0.0, "tiny_block": 0.0}
    worker = threading.Thread(target=work, args=(rounds, totals))
    worker.start()
    worker.join()
    sys.stdout.write("blocked f=%d g=%d tiny_block=%d tiny_calls=%d\n" % (
        totals["f"] * 1e9, totals["g"] * 1e9, totals["tiny_block"] * 1e9, rounds))
    sys.stdout.flush()


def wait_for_go():
    go = []
    signal.signal(signal.SIGUSR1, lambda number, frame: go.append(number))
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while not go:
        time.sleep(0.005)


def pass_token(read_fd, write_fd, end, counts):
    handovers = 0
    while True:
        token = os.read(read_fd, 1)
        if token == b"x" or time.time() >= end:
            os.write(write_fd, b"x")
            break
        os.write(write_fd, b".")
        handovers += 1
    counts.append(handovers)


def switches(seconds):
    a_read, a_write = os.pipe()
    b_read, b_write = os.pipe()
    end = time.time() + seconds
    counts = []
    peer = threading.Thread(target=pass_token, args=(b_read, a_write, end, counts))
    peer.start()
    os.write(b_write, b".")
    pass_token(a_read, b_write, end, counts)
    peer.join()
    used = os.times()
    sys.stdout.write("handovers %d cpu_s %.6f\n" % (sum(counts), used.user + used.system))
    sys.stdout.flush()


def main():
    mode, amount = sys.argv[1], sys.argv[2]
    if mode == "blocks":
        blocks(int(amount))
    elif mode == "gated_blocks":
        wait_for_go()
        blocks(int(amount))
    elif mode == "switches":
        switches(float(amount))
    else:
        raise SystemExit("usage: offcpu_work.py blocks|gated_blocks ROUNDS | switches SECONDS")


if __name__ == "__main__":
    main()

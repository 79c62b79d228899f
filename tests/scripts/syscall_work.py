# Workload for --event syscall:... and block-io (tests/test_syscalls.c, bench/syscalls.sh); runs
# on 2.7 and 3.x. Each mode measures its own truth and prints it on stdout at the end.
#   counts ROUNDS [PAUSE_S]: ROUNDS times, write_three() writes 1 byte to /dev/null three times
#            and write_one() once (a sleep of PAUSE_S, 1 ms unless given, between rounds keeps the
#            rate modest; 0: none); "writes three=N one=N". ROUNDS 0: "ready" after the first
#            round, then on until killed.
#   bytes ROUNDS [PAUSE_S]: ROUNDS times, big_writes() writes 8192 bytes once and small_writes()
#            1024 bytes three times (3:1 calls the other way round), PAUSE_S as counts';
#            "bytes big=N small=N" (what os.write returned).
#   latency ROUNDS: ROUNDS times, slow_writes() writes 64 KiB into a full pipe that a reader
#            thread drains every 2 ms, and fast_writes() 64 KiB to /dev/null; each call timed:
#            "latency slow=NS fast=NS".
#   blockio ROUNDS DIR: ROUNDS times, fsync_writes() rewrites 256 KiB of DIR/syscall_work.data and
#            fsyncs it (the caller's own writeback); "wrote N" (bytes). ROUNDS 0: "ready" after the
#            first round, then on until killed, 20 ms between rounds.
#   spin SECONDS: write_one() as fast as it can for SECONDS: "calls N cpu_s S" (S: user+system
#            CPU seconds of the process): bench/syscalls.sh's syscall-heavy load.
#   futex SECONDS: hand_over() passes a turn to a partner thread and waits for it back, through
#            two locks, for SECONDS: each hand-over is futex(2) calls in both threads (the locks'
#            and the GIL's); "calls N cpu_s S" (N: hand-overs): bench/syscalls.sh's futex-heavy
#            load.
import os
import sys
import threading
import time

try:
    clock = time.perf_counter
except AttributeError:
    clock = time.time

DEVNULL = os.open(os.devnull, os.O_WRONLY)
ONE = b"x"


def write_three():
    os.write(DEVNULL, ONE)
    os.write(DEVNULL, ONE)
    os.write(DEVNULL, ONE)


def write_one():
    os.write(DEVNULL, ONE)


def pause(seconds):
    if seconds > 0:
        time.sleep(seconds)


def counts(rounds, pause_s):
    done = 0
    while rounds == 0 or done < rounds:
        write_three()
        write_one()
        done += 1
        if done == 1 and rounds == 0:
            sys.stdout.write("ready\n")
            sys.stdout.flush()
        pause(pause_s)
    sys.stdout.write("writes three=%d one=%d\n" % (3 * done, done))


def big_writes(data, totals):
    totals["big"] += os.write(DEVNULL, data)


def small_writes(data, totals):
    for _ in range(3):
        totals["small"] += os.write(DEVNULL, data)


def byte_counts(rounds, pause_s):
    big, small = b"b" * 8192, b"s" * 1024
    totals = {"big": 0, "small": 0}
    for _ in range(rounds):
        big_writes(big, totals)
        small_writes(small, totals)
        pause(pause_s)
    sys.stdout.write("bytes big=%d small=%d\n" % (totals["big"], totals["small"]))


def drain(read_fd, stop):
    while not stop.is_set():
        time.sleep(0.002)
        os.read(read_fd, 65536)


def slow_writes(write_fd, data, totals):
    start = clock()
    os.write(write_fd, data)
    totals["slow"] += clock() - start


def fast_writes(data, totals):
    start = clock()
    os.write(DEVNULL, data)
    totals["fast"] += clock() - start


def latency(rounds):
    read_fd, write_fd = os.pipe()
    data = b"l" * 65536
    totals = {"slow": 0.0, "fast": 0.0}
    stop = threading.Event()
    reader = threading.Thread(target=drain, args=(read_fd, stop))
    reader.daemon = True
    reader.start()
    for _ in range(rounds):
        slow_writes(write_fd, data, totals)
        fast_writes(data, totals)
    stop.set()
    sys.stdout.write("latency slow=%d fast=%d\n" % (int(totals["slow"] * 1e9), int(totals["fast"] * 1e9)))


def fsync_writes(fd, data):
    os.lseek(fd, 0, os.SEEK_SET)
    written = os.write(fd, data)
    os.fsync(fd)
    return written


def blockio(rounds, directory):
    path = os.path.join(directory, "syscall_work.data")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    data = b"d" * (256 * 1024)
    written = done = 0
    while rounds == 0 or done < rounds:
        written += fsync_writes(fd, data)
        done += 1
        if rounds == 0:
            # on until killed: at most some 12 MB/s of a disk the host shares
            time.sleep(0.02)
        if done == 1 and rounds == 0:
            sys.stdout.write("ready\n")
            sys.stdout.flush()
    os.close(fd)
    os.unlink(path)
    sys.stdout.write("wrote %d\n" % written)


def spin(seconds):
    calls = 0
    end = clock() + seconds
    while clock() < end:
        for _ in range(1000):
            write_one()
        calls += 1000
    times = os.times()
    sys.stdout.write("calls %d cpu_s %.3f\n" % (calls, times[0] + times[1]))


def hand_over(ping, pong):
    ping.release()
    pong.acquire()


def futex(seconds):
    ping, pong = threading.Lock(), threading.Lock()
    ping.acquire()
    pong.acquire()

    def partner():
        while True:
            ping.acquire()
            pong.release()

    thread = threading.Thread(target=partner)
    thread.daemon = True
    thread.start()
    calls = 0
    end = clock() + seconds
    while clock() < end:
        for _ in range(100):
            hand_over(ping, pong)
        calls += 100
    times = os.times()
    sys.stdout.write("calls %d cpu_s %.3f\n" % (calls, times[0] + times[1]))


def main():
    mode = sys.argv[1]
    pause_s = float(sys.argv[3]) if mode in ("counts", "bytes") and len(sys.argv) > 3 else 0.001
    if mode == "counts":
        counts(int(sys.argv[2]), pause_s)
    elif mode == "bytes":
        byte_counts(int(sys.argv[2]), pause_s)
    elif mode == "latency":
        latency(int(sys.argv[2]))
    elif mode == "blockio":
        blockio(int(sys.argv[2]), sys.argv[3])
    elif mode == "spin":
        spin(float(sys.argv[2]))
    elif mode == "futex":
        futex(float(sys.argv[2]))
    else:
        sys.exit("usage: syscall_work.py counts|bytes|latency|blockio|spin|futex ...")


if __name__ == "__main__":
    main()

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
#   blockdirect WRITES DIR: direct_writes() writes WRITES blocks of 4 KiB with O_DIRECT to
#            DIR/syscall_work.direct (1 MiB, written and synced first, then rewritten in turn):
#            each write is one bio of 4 KiB queued by the caller; "direct N" (bytes written), or
#            "no direct io" where DIR's filesystem refuses O_DIRECT (Python 3).
#   spin SECONDS: write_one() as fast as it can for SECONDS: "calls N cpu_s S" (S: user+system
#            CPU seconds of the process): bench/syscalls.sh's syscall-heavy load.
#   compat ROUNDS: ROUNDS times, compat_writes() writes 1 byte to /dev/null three times through
#            int $0x80 (i386's write, number 4: x86_64's stat) and native_writes() once through
#            os.write, 1 ms between rounds; "compat three=N native=N" (calls that wrote their
#            byte), or "no ia32" where this kernel runs no i386 call (x86_64 only, Python 3).
#   compatonly ROUNDS LIBRARY: ROUNDS times, compat_socketcalls() makes 3 socketcalls through
#            int $0x80 (i386's 102, which is x86_64's getuid) in LIBRARY, tests/scripts/compat_calls.c
#            built by the test, and native_getuids() calls getuid once (x86_64's 102), 1 ms between
#            rounds; "compatonly socketcall=N getuid=N" (socketcalls answered as i386's are).
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


DIRECT_BLOCK = 4096
DIRECT_FILE_BLOCKS = 256


def direct_writes(fd, block, writes):
    written = 0
    for done in range(writes):
        if done % DIRECT_FILE_BLOCKS == 0:
            os.lseek(fd, 0, os.SEEK_SET)
        written += os.write(fd, block)
    return written


def blockdirect(writes, directory):
    import mmap
    path = os.path.join(directory, "syscall_work.direct")
    # Its blocks allocated and on disk before: the direct writes rewrite them, nothing else.
    with open(path, "wb") as setup:
        setup.write(b"d" * (DIRECT_BLOCK * DIRECT_FILE_BLOCKS))
        setup.flush()
        os.fsync(setup.fileno())
    try:
        fd = os.open(path, os.O_WRONLY | os.O_DIRECT)
    except OSError:
        os.unlink(path)
        sys.stdout.write("no direct io\n")
        return
    # O_DIRECT takes a buffer aligned to the device's blocks: an anonymous page is.
    block = mmap.mmap(-1, DIRECT_BLOCK)
    block.write(b"D" * DIRECT_BLOCK)
    written = direct_writes(fd, block, writes)
    os.close(fd)
    os.unlink(path)
    sys.stdout.write("direct %d\n" % written)


def spin(seconds):
    calls = 0
    end = clock() + seconds
    while clock() < end:
        for _ in range(1000):
            write_one()
        calls += 1000
    times = os.times()
    sys.stdout.write("calls %d cpu_s %.3f\n" % (calls, times[0] + times[1]))


# push rbx; mov eax, 4 (i386 write); mov ebx, edi; mov ecx, esi; (edx: the count already)
# int 0x80; pop rbx; ret: write(fd, buf, count) as a 32-bit call, its result in eax.
INT80_WRITE = bytes(bytearray([0x53, 0xB8, 4, 0, 0, 0, 0x89, 0xFB, 0x89, 0xF1, 0xCD, 0x80, 0x5B, 0xC3]))
MAP_32BIT = 0x40  # i386 calls take 32-bit pointers: the code and its byte below 4 GB


def int80_write():
    import ctypes
    import mmap
    page = mmap.mmap(-1, mmap.PAGESIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_32BIT,
                     prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page[0:len(INT80_WRITE)] = INT80_WRITE
    page[256:257] = ONE
    base = ctypes.addressof(ctypes.c_char.from_buffer(page))
    call = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint32)(base)
    return page, call, base + 256


def ia32_runs(write, buf):
    # A kernel without i386 emulation kills the caller: try it in a child first.
    pid = os.fork()
    if pid == 0:
        os._exit(0 if write(DEVNULL, buf, 1) == 1 else 1)
    return os.waitpid(pid, 0)[1] == 0


def compat_writes(write, buf):
    return write(DEVNULL, buf, 1) + write(DEVNULL, buf, 1) + write(DEVNULL, buf, 1)


def native_writes():
    return os.write(DEVNULL, ONE)


def compat(rounds):
    import platform
    if platform.machine() != "x86_64":
        sys.stdout.write("no ia32\n")
        return
    page, write, buf = int80_write()
    if not ia32_runs(write, buf):
        sys.stdout.write("no ia32\n")
        return
    three = one = 0
    for _ in range(rounds):
        three += compat_writes(write, buf)
        one += native_writes()
        time.sleep(0.001)
    sys.stdout.write("compat three=%d native=%d\n" % (three, one))


def compat_socketcalls(library):
    return library.compat_socketcalls(3)


def native_getuids():
    os.getuid()
    return 1


def compatonly(rounds, library_path):
    import ctypes
    library = ctypes.CDLL(library_path)
    socketcalls = getuids = 0
    for _ in range(rounds):
        socketcalls += compat_socketcalls(library)
        getuids += native_getuids()
        time.sleep(0.001)
    sys.stdout.write("compatonly socketcall=%d getuid=%d\n" % (socketcalls, getuids))


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
    elif mode == "blockdirect":
        blockdirect(int(sys.argv[2]), sys.argv[3])
    elif mode == "spin":
        spin(float(sys.argv[2]))
    elif mode == "compat":
        compat(int(sys.argv[2]))
    elif mode == "compatonly":
        compatonly(int(sys.argv[2]), sys.argv[3])
    elif mode == "futex":
        futex(float(sys.argv[2]))
    else:
        sys.exit("usage: syscall_work.py counts|bytes|latency|blockio|blockdirect|spin|compat|compatonly|futex ...")


if __name__ == "__main__":
    main()

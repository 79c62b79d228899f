# Code objects created and freed by the thousand (tests/e2e/test_code_identity.c); runs on 2.7 and 3.x.
# With one shared globals dict, over and over: compile `def gen_N(): <spin ~3 ms>` (N counting
# up, every function the same shape, so that the allocator hands a freed function's memory to
# the next one), exec it, call it between two CLOCK_MONOTONIC readings, then drop the function
# and its code so they are freed. Prints "ready", churns for SECONDS (the first argument, default
# 7), then prints one line "N START_US END_US" per function, then "end"; on stderr how many
# distinct code addresses (and code, name, file address triples) the functions had: the proof
# that addresses really were reused.
import sys
import time

GEN_SOURCE = "def gen_%d():\n    i = 0\n    while i < SPIN:\n        i += 1\n"
SPIN_SECONDS = 0.003


def monotonic_clock():
    """CLOCK_MONOTONIC in seconds: the clock BPF stamps samples with (bpf_ktime_get_ns)."""
    if hasattr(time, "monotonic"):
        return time.monotonic  # CLOCK_MONOTONIC on Linux
    import ctypes

    class Timespec(ctypes.Structure):
        _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]

    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    now = Timespec()

    def monotonic():
        if libc.clock_gettime(1, ctypes.byref(now)) != 0:  # 1: CLOCK_MONOTONIC
            raise OSError(ctypes.get_errno(), "clock_gettime")
        return now.tv_sec + now.tv_nsec * 1e-9

    return monotonic


monotonic = monotonic_clock()


def calibrate(shared):
    """Sets SPIN so that one generated function spins for about SPIN_SECONDS."""
    shared["SPIN"] = 10000
    exec(compile(GEN_SOURCE % 0, "<gen>", "exec"), shared)
    probe = shared.pop("gen_0")
    best = None
    for _ in range(5):
        start = monotonic()
        probe()
        took = monotonic() - start
        best = took if best is None else min(best, took)
    shared["SPIN"] = max(1000, int(10000 * SPIN_SECONDS / max(best, 1e-6)))


def churn(shared, seconds, log, identities):
    end = monotonic() + seconds
    number = 1000
    while monotonic() < end:
        name = "gen_%d" % number
        code = compile(GEN_SOURCE % number, "<gen>", "exec")
        exec(code, shared)
        function = shared.pop(name)
        body = function.__code__ if hasattr(function, "__code__") else function.func_code
        identities.append((id(body), id(body.co_name), id(body.co_filename)))
        start = monotonic()
        function()
        finish = monotonic()
        log.append("%d %d %d" % (number, int(start * 1e6), int(finish * 1e6)))
        del function, body, code
        number += 1


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 7.0
    shared = {"__name__": "code_churn_generated", "__builtins__": __builtins__}
    log, identities = [], []
    calibrate(shared)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    churn(shared, seconds, log, identities)
    sys.stderr.write("code_churn: %d functions, %d distinct code addresses, %d distinct "
                     "(code, name, file) address triples\n"
                     % (len(identities), len(set(i[0] for i in identities)), len(set(identities))))
    sys.stdout.write("\n".join(log) + "\nend\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()

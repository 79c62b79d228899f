# A stack DEPTH frames deep (argv[1]) whose every frame runs its own code
# object, as in real programs (recursion would let a walker reuse the last
# frame's code lookup); the innermost frame spins for SECONDS (argv[2]).
# With SECONDS given as "cpu=S", it spins for S seconds of its own CPU time from
# when it is reached instead: on a loaded machine wall time leaves few samples,
# most of them taken while the stack was still being built.
# With "recursive" as argv[3], one function recurses to the same depth instead.
# With SECONDS given as "work=N", the innermost frame does N rounds of fixed work
# instead and the script prints the CPU seconds they took (time.process_time):
# the target's own cost of being profiled, BPF's time in its context included.
import sys
import time


def make_level(index, callee):
    namespace = {"callee": callee}
    exec("def level_%d(end):\n    return callee(end)\n" % index, namespace)
    return namespace["level_%d" % index]


def leaf(end):
    count = 0
    if isinstance(end, str):  # "work=N"
        rounds = int(end[5:])
        started = time.process_time()
        while count < rounds:
            count += 1
        print("%.4f" % (time.process_time() - started))
        return count
    if isinstance(end, tuple):  # ("cpu", S)
        end = time.process_time() + end[1]
        while count % 4096 != 0 or time.process_time() < end:
            count += 1
        return count
    while time.time() < end:
        count += 1
    return count


def recurse(levels, end):
    if levels == 0:
        return leaf(end)
    return recurse(levels - 1, end)


def main(depth, until, shape):
    if shape == "recursive":  # <module>, main(), the last recurse() and leaf() are frames too
        recurse(depth - 4, until)
        return
    call = leaf
    for index in range(depth - 3):  # <module>, main() and leaf() are frames too
        call = make_level(index, call)
    call(until)


if sys.argv[2].startswith("work="):
    until = sys.argv[2]
elif sys.argv[2].startswith("cpu="):
    until = ("cpu", float(sys.argv[2][4:]))
else:
    until = time.time() + float(sys.argv[2])
main(int(sys.argv[1]), until, sys.argv[3] if len(sys.argv) > 3 else "distinct")

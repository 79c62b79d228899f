# The peers bench's target: a stack DEPTH frames deep (argv[1]), its lower half
# distinct code objects (as in real programs) and its upper half one function
# recursing; there it spins WAIT seconds (argv[2]) for the profiler to attach,
# then runs ROUNDS rounds (argv[3]) of a 3:1 split: heavy() does three times
# light()'s iterations. It times itself and prints on stdout
#   elapsed <wall s> cpu <cpu s> heavy <cpu s> light <cpu s>
# (its CPU time is the slowdown's measure: wall time on a loaded host is noise), the CPU each side really took being the truth a profile's share is held to.
import random
import sys
import time


def heavy(n):
    total = 0
    i = 0
    while i < 3 * n:
        total += i
        i += 1
    return total


def light(n):
    total = 0
    i = 0
    while i < n:
        total += i
        i += 1
    return total


def work(wait, rounds):
    # Spinning, not sleeping, while the profiler attaches: a sampler that keeps
    # idle samples (CPython's, even in --mode cpu) then records the same stacks
    # as the others, and bytes per sample compare like with like.
    end = time.time() + wait
    while time.time() < end:
        pass
    # Rounds of random length: rounds as long as the sampling period would be
    # sampled at the same point every time and skew the split.
    rng = random.Random(1234)
    heavy_cpu = light_cpu = 0.0
    start = time.time()
    start_cpu = time.process_time()
    for _ in range(rounds):
        n = rng.randint(700, 4000)
        before = time.process_time()
        heavy(n)
        middle = time.process_time()
        light(n)
        heavy_cpu += middle - before
        light_cpu += time.process_time() - middle
    elapsed = time.time() - start
    cpu = time.process_time() - start_cpu
    print("elapsed %.4f cpu %.4f heavy %.4f light %.4f" % (elapsed, cpu, heavy_cpu, light_cpu))
    sys.stdout.flush()


def recurse(levels, wait, rounds):
    if levels > 0:
        return recurse(levels - 1, wait, rounds)
    return work(wait, rounds)


def make_level(index, callee):
    namespace = {"callee": callee}
    exec("def level_%d(a, b, c):\n    return callee(a, b, c)\n" % index, namespace)
    return namespace["level_%d" % index]


def main(depth, wait, rounds):
    sys.setrecursionlimit(depth + 100)
    # <module>, main(), work() and heavy()/light() are frames too.
    frames = max(depth - 4, 0)
    distinct = frames // 2
    call = recurse
    for index in range(distinct):
        call = make_level(index, call)
    call(frames - distinct - 1, wait, rounds)


main(int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]))

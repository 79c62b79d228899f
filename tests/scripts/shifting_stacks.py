# Stacks that change every few milliseconds, of code objects that come and go
# (tests/e2e/test_stack_fast_path.c). FAMILIES families of LEVELS distinct functions
# g<G>_f<F>_<k>, each calling the next level of its own family and generation; each
# step calls one family's level 0 to a depth that changes from step to step, and
# the innermost level spins for about STEP_SECONDS. Every REBUILD_EVERY steps one
# family is compiled anew as generation G+1 and the old one dropped, so that its
# code objects are freed and the new ones often land where they were.
# Prints "ready", runs until it has used CPU_SECONDS of CPU (the first argument: on
# a loaded machine it gets as many samples, only later), then one line
# "G F BORN_US DROPPED_US" per generation (CLOCK_MONOTONIC, the clock BPF stamps
# samples with), then "end".
import sys
import time

FAMILIES = 4
LEVELS = 48
STEP_SECONDS = 0.004
REBUILD_EVERY = 3
LEVEL_SOURCE = ("def g{g}_f{f}_{k}(n, end):\n"
                "    if n == 0:\n"
                "        return spin(end)\n"
                "    return g{g}_f{f}_{n1}(n - 1, end)\n")


def spin(end):
    count = 0
    while time.monotonic() < end:
        count += 1
    return count


def build(generation, family):
    source = "".join(LEVEL_SOURCE.format(g=generation, f=family, k=k, n1=k + 1) for k in range(LEVELS))
    namespace = {"spin": spin}
    exec(compile(source, "<family>", "exec"), namespace)
    return namespace


def main():
    cpu_seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    now = time.monotonic
    generations = [0] * FAMILIES
    namespaces = [build(0, family) for family in range(FAMILIES)]
    born = [now()] * FAMILIES
    log = []
    next_generation = 1
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    end = time.process_time() + cpu_seconds
    step = 0
    while time.process_time() < end:
        family = step % FAMILIES
        depth = (step * 7919) % LEVELS  # levels below level 0: 0 .. LEVELS - 1
        namespaces[family]["g%d_f%d_0" % (generations[family], family)](depth, now() + STEP_SECONDS)
        step += 1
        if step % REBUILD_EVERY == 0:
            old = (step // REBUILD_EVERY) % FAMILIES
            # The functions and their namespace hold each other: clearing it frees the old
            # generation's code objects now, before the new ones are made.
            namespaces[old].clear()
            log.append("%d %d %d %d" % (generations[old], old, int(born[old] * 1e6), int(now() * 1e6)))
            generations[old] = next_generation
            next_generation += 1
            namespaces[old] = build(generations[old], old)
            born[old] = now()
    for family in range(FAMILIES):
        log.append("%d %d %d %d" % (generations[family], family, int(born[family] * 1e6), int(now() * 1e6)))
    sys.stdout.write("\n".join(log) + "\nend\n")
    sys.stdout.flush()


main()

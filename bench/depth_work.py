# A stack DEPTH frames deep (argv[1]) whose every frame runs its own code
# object, as in real programs (recursion would let a walker reuse the last
# frame's code lookup); the innermost frame spins for SECONDS (argv[2]).
import sys
import time


def make_level(index, callee):
    namespace = {"callee": callee}
    exec("def level_%d(end):\n    return callee(end)\n" % index, namespace)
    return namespace["level_%d" % index]


def leaf(end):
    count = 0
    while time.time() < end:
        count += 1
    return count


def main(depth, seconds):
    call = leaf
    for index in range(depth - 3):  # <module>, main() and leaf() are frames too
        call = make_level(index, call)
    call(time.time() + seconds)


main(int(sys.argv[1]), float(sys.argv[2]))

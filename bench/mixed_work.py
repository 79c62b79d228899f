# A mixed stack: PYTHON_DEPTH Python frames (argv[1]), each its own code
# object as in depth_work.py, over C recursing NESTING levels (argv[2]):
# repr() of a list nested NESTING deep whose innermost list holds 3000 ints,
# so that nearly every sample lands in the innermost list_repr -> PyObject_Repr
# pair (two native frames a level) under the interpreter's own C frames.
# Runs for SECONDS (argv[3]).
import sys
import time


def make_level(index, callee):
    namespace = {"callee": callee}
    exec("def level_%d(end, data):\n    return callee(end, data)\n" % index, namespace)
    return namespace["level_%d" % index]


def leaf(end, data):
    count = 0
    while time.time() < end:
        repr(data)
        count += 1
    return count


def main(python_depth, nesting, seconds):
    data = list(range(3000))
    for _ in range(nesting):
        data = [data]
    call = leaf
    for index in range(python_depth - 3):  # <module>, main() and leaf() are frames too
        call = make_level(index, call)
    call(time.time() + seconds, data)


main(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]))

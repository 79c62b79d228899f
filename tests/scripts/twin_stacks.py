# A stack of DEPTH distinct functions, all named PREFIX_level_N (argv[1], argv[2]), whose
# innermost frame, PREFIX_leaf, spins until the process is killed. Two launches with prefixes
# of one length, ASLR off (setarch -R) and one hash seed make the same allocations, so their
# code objects sit at the same addresses while being different code (their names differ).
# Says "ready" and the addresses of the leaf's and the outermost level's code objects once the
# stack is built.
import sys

PREFIX = sys.argv[1]
DEPTH = int(sys.argv[2])


def make(source, name, namespace):
    exec(compile(source, "<twin>", "exec"), namespace)
    return namespace[name]


def spin_source(name):
    return (
        "def %s(ready):\n"
        "    ready()\n"
        "    count = 0\n"
        "    while True:\n"
        "        count += 1\n" % name
    )


def level_source(name):
    return "def %s(ready):\n    return callee(ready)\n" % name


def say_ready(leaf, outermost):
    sys.stdout.write("ready %x %x\n" % (id(leaf.__code__), id(outermost.__code__)))
    sys.stdout.flush()


def main():
    leaf = make(spin_source(PREFIX + "_leaf"), PREFIX + "_leaf", {})
    call = leaf
    for index in range(DEPTH):
        name = "%s_level_%d" % (PREFIX, index)
        call = make(level_source(name), name, {"callee": call})
    call(lambda: say_ready(leaf, call))


main()

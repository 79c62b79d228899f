# A workload for instruction-level profiles (record --opcodes): attrs() spends its time on one
# line of attribute loads from an instance (which 3.11+ specialises to LOAD_ATTR_INSTANCE_VALUE
# or its version's equivalent), arith() on one line of binary operations (BINARY_OP's
# specialisations). Prints "ready" once both have run warm, then runs until killed or for
# argv[1] seconds.
import sys
import time


class Point:
    def __init__(self):
        self.x = 1
        self.y = 2
        self.z = 3


def attrs(point, rounds):
    total = 0
    for _ in range(rounds):
        total += point.x + point.y + point.z + point.x + point.y + point.z  # ATTR LINE
    return total


def arith(a, b, rounds):
    total = 0
    for _ in range(rounds):
        total = (a * b + a - b) * (a + b) - (a - b) * b + a  # ARITH LINE
    return total


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3600.0
    point = Point()
    attrs(point, 1000)
    arith(3, 5, 1000)
    print("ready", flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        attrs(point, 20000)
        arith(3, 5, 20000)


main()

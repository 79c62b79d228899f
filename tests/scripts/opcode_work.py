# A workload for instruction-level profiles (record --opcodes): attrs() spends its time on one
# line of attribute loads from instances (which 3.11+ specialises to LOAD_ATTR_INSTANCE_VALUE
# or its version's equivalent), arith() on one line of integer binary operations (BINARY_OP's
# specialisations). Prints "ready" once both have run warm (specialised), then runs for
# argv[1] seconds of CPU (default: until killed).
import sys
import time


class Node:
    def __init__(self):
        self.next = self
        self.value = 1


def attrs(node, rounds):
    total = 0
    for _ in range(rounds):
        total = node.next.next.next.next.next.next.next.next.next.next.next.next.value  # ATTR
    return total


def arith(a, b, rounds):
    total = 0
    for _ in range(rounds):
        total = a * b + a * b - a * b + a * b - a * b + a * b - a * b + a  # ARITH
    return total


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else float("inf")
    node = Node()
    attrs(node, 1000)
    arith(1003, 997, 1000)
    print("ready", flush=True)
    while time.process_time() < seconds:
        attrs(node, 100000)
        arith(1003, 997, 100000)


main()

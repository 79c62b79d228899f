# Recurses DEPTH calls deep (argv[1]), then spins in the innermost call.
import sys


def bpf_recurse_leaf():
    count = 0
    while True:
        count += 1


def bpf_recurse(depth):
    if depth <= 1:
        bpf_recurse_leaf()
    else:
        bpf_recurse(depth - 1)


DEPTH = int(sys.argv[1])
sys.setrecursionlimit(DEPTH + 100)
sys.stdout.write("ready\n")
sys.stdout.flush()
bpf_recurse(DEPTH)

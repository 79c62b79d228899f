# Spins forever on the main thread in one known function (for the BPF sampler test).
import sys


def bpf_spin_here():
    count = 0
    while True:
        count += 1


sys.stdout.write("ready\n")
sys.stdout.flush()
bpf_spin_here()

# Runs a new function every millisecond, each with its own name (fault_name_N), on the CPU:
# every sample brings new strings and frames, so any format's file keeps growing
# (test_faults fills a small disk with it).
import sys
import time


def fault_names(count):
    for n in range(count):
        namespace = {}
        exec("def fault_name_%d(until):\n    while until > clock():\n        pass\n" % n,
             {"clock": time.perf_counter}, namespace)
        namespace["fault_name_%d" % n](time.perf_counter() + 0.001)


sys.stdout.write("ready\n")
sys.stdout.flush()
fault_names(10 ** 9)

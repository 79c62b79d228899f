# Code made and freed without end, as exec'd templates or a long import make it: every loop
# compiles DEPTH new functions calling one another and runs the chain once, its leaf spinning,
# so that nearly every sample's stack holds code objects no CPU has sent before (each one a
# note BPF saves, at most 8 a walk: bpf/maps.h, code_notes), freed once the loop moves on.
# Usage: code_churn.py CPU_SECONDS [DEPTH]
import sys
import time

cpu = getattr(time, "process_time", None) or time.clock
seconds = float(sys.argv[1])
depth = int(sys.argv[2]) if len(sys.argv) > 2 else 40
end = cpu() + seconds
n = 0
while cpu() < end:
    n += 1
    source = []
    for i in range(depth):
        callee = "f%d_%d(x)" % (n, i + 1) if i + 1 < depth else "spin()"
        source.append("def f%d_%d(x):\n    return %s\n" % (n, i, callee))
    space = {"spin": lambda: [None for _ in range(20000)]}
    exec("".join(source), space)
    space["f%d_0" % n](0)

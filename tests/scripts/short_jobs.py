# Runs N short Python processes one after another, each spinning in a function whose name is its
# own (job_<i>_...), and prints "<pid> <i>" per child: a whole host's stream of short processes.
# Then it waits linger seconds, alone.
import subprocess
import sys
import time

CHILD = """
import time
namespace = {"time": time}
exec("def job_%d_" + "x" * 160 + "(until):\\n    while time.perf_counter() < until:\\n        pass\\n", namespace)
function = [value for key, value in namespace.items() if key.startswith("job_")][0]
function(time.perf_counter() + %f)
"""

count = int(sys.argv[1])
spin_seconds = float(sys.argv[2])
linger_seconds = float(sys.argv[3])
for i in range(count):
    child = subprocess.Popen([sys.executable, "-c", CHILD % (i, spin_seconds)])
    print(child.pid, i, flush=True)
    child.wait()
time.sleep(linger_seconds)

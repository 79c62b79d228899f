# A process whose thread name is hostile (tests/e2e/test_stacks.c): its comm holds an escape
# sequence, a bell, a quote, a backslash and a byte that is not UTF-8. Prints "ready", then
# sleeps until killed.
import sys
import time

with open("/proc/self/comm", "wb") as comm:
    comm.write(b'\x1b[31m"\\\x07\xff')
sys.stdout.write("ready\n")
sys.stdout.flush()
while True:
    time.sleep(1)

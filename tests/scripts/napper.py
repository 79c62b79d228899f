# A spin on the main thread and a thread that naps 400 ms and spins 5 ms, for test_cli's
# tachyon_and_mojo_read_back_alike, which attaches once it says ready. Its collector is off
# before then, and it ends without finalization: a collection is a GC sample, which MOJO
# records by its status and Tachyon by a "<GC>" leaf frame, so `top` ranks the two apart by
# design (doc/modes.md); start-up's imports collect before any script can turn it off.
# Usage: napper.py SECONDS
import gc

gc.disable()

import os
import sys
import threading
import time


def nap_spin():
    t = time.time()
    while time.time() - t < 0.005:
        pass


def napper():
    while True:
        time.sleep(0.4)
        nap_spin()


def spin(seconds):
    t = time.time()
    while time.time() - t < seconds:
        pass


thread = threading.Thread(target=napper)
thread.daemon = True
thread.start()
sys.stdout.write("ready\n")
sys.stdout.flush()
spin(float(sys.argv[1]))
os._exit(0)

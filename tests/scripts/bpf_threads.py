# Four threads, each spinning in its own function; the main thread only waits.
import sys
import threading


def bpf_thread_a():
    count = 0
    while True:
        count += 1


def bpf_thread_b():
    count = 0
    while True:
        count += 1


def bpf_thread_c():
    count = 0
    while True:
        count += 1


def bpf_thread_d():
    count = 0
    while True:
        count += 1


threads = [threading.Thread(target=f) for f in (bpf_thread_a, bpf_thread_b, bpf_thread_c, bpf_thread_d)]
for thread in threads:
    thread.daemon = True
    thread.start()
sys.stdout.write("ready\n")
sys.stdout.flush()
for thread in threads:
    thread.join()

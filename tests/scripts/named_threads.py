# Target for tests/e2e/test_thread_names.c (Python 2.7 and 3.x alike): three threads named
# by threading, "hasher" and "contender-1" busy in Python code, "sleeper" asleep, while
# the main thread waits. Prints "ready" once all three run. With "hostile", the sleeper's
# name holds an escape sequence, a quote, a backslash and a bell.
import hashlib
import sys
import threading
import time


def hash_forever():
    data = b"x" * 64
    while True:
        data = hashlib.sha1(data).digest() * 3


def spin_forever():
    count = 0
    while True:
        count += 1


def sleep_forever():
    while True:
        time.sleep(0.05)


def main():
    started = []
    sleeper = '\x1b[31m"\\\x07sleeper' if sys.argv[1:] == ["hostile"] else "sleeper"
    threads = [threading.Thread(target=hash_forever, name="hasher"),
               threading.Thread(target=spin_forever, name="contender-1"),
               threading.Thread(target=sleep_forever, name=sleeper)]
    for thread in threads:
        thread.daemon = True
        thread.start()
        started.append(thread.name)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()

"""A small program with something for every kind of frame pybpfprof shows.

- word_counts: pure Python dict and string work
- primes_below: a CPU-bound loop (the hot spot)
- checksum_chunks: reads /dev/urandom (kernel frames) and hashes in C (hashlib)
Runs about four seconds.
"""
import hashlib
import os
import random
import time


def make_text(words=20000):
    vocabulary = ["profile", "python", "kernel", "frame", "stack", "sample", "tachyon", "mojo"]
    rng = random.Random(42)
    return " ".join(rng.choice(vocabulary) for _ in range(words))


def word_counts(text):
    counts = {}
    for word in text.split():
        counts[word] = counts.get(word, 0) + 1
    return counts


def primes_below(limit):
    found = []
    for candidate in range(2, limit):
        for divisor in found:
            if divisor * divisor > candidate:
                found.append(candidate)
                break
            if candidate % divisor == 0:
                break
        else:
            found.append(candidate)
    return found


def checksum_chunks(chunks=12, size=256 * 1024):
    digest = hashlib.sha256()
    with open("/dev/urandom", "rb") as source:
        for _ in range(chunks):
            digest.update(source.read(size))
    return digest.hexdigest()


def main(seconds=4.0):
    end = time.time() + seconds
    rounds = 0
    while time.time() < end:
        word_counts(make_text())
        primes_below(30000)
        checksum_chunks()
        rounds += 1
    print("demo_app: %d rounds in pid %d" % (rounds, os.getpid()))


if __name__ == "__main__":
    main()

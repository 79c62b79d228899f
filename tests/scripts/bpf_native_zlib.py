# Spends its time in C below a Python frame: zlib.compress runs in libz's
# deflate, called from a Python function that map() calls from C, so the
# stack holds two activations of the interpreter's evaluation function.
# Runs until killed; on 2.7 and 3.6+.
import sys
import zlib

DATA = bytes(bytearray((i * 7 + (i >> 5)) & 0xFF for i in range(1 << 18)))


def compress_once(_):
    return zlib.compress(DATA, 9)


def bpf_native_compress():
    while True:
        for _ in map(compress_once, range(8)):
            pass


sys.stdout.write("ready\n")
sys.stdout.flush()
bpf_native_compress()

# Spends its time in C below a Python frame: zlib.compress runs in libz's
# deflate, called from the interpreter's C code. Runs until killed; on 2.7
# and 3.6+.
import sys
import zlib

DATA = bytes(bytearray((i * 7 + (i >> 5)) & 0xFF for i in range(1 << 18)))


def bpf_native_compress():
    while True:
        zlib.compress(DATA, 9)


sys.stdout.write("ready\n")
sys.stdout.flush()
bpf_native_compress()

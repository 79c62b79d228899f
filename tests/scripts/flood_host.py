# A busy host for a whole-host profiler: many Python processes spending their time in libraries
# no other process maps, so that each of their files needs a table of its own. The libraries are
# copies of libz with their build-ids rewritten (a table is kept per build-id), loaded through
# ctypes from a temporary directory.
#
#   flood_host.py DIR SECONDS [LONG [SHORT]]
#
# LONG processes run for SECONDS, each cycling through FILES_PER_PROCESS copies; SHORT processes
# at a time run for a fraction of a second each, on copies of their own, one replacing another
# as it exits. The copies are made in DIR (left for the caller to remove). Prints "ready" once
# every long-lived process has loaded its copies. Python 3.
import ctypes
import ctypes.util
import os
import random
import struct
import subprocess
import sys
import time

FILES_PER_PROCESS = 8
SHORT_SECONDS = 0.4


def build_id_span(image):
    """Where the GNU build-id note's descriptor lies in an ELF64 image: (offset, length)."""
    phoff, = struct.unpack_from("<Q", image, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", image, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", image, phoff + i * phentsize)
        if p_type != 4:  # PT_NOTE
            continue
        at, end = p_offset, p_offset + p_filesz
        while at + 12 <= end:
            namesz, descsz, kind = struct.unpack_from("<III", image, at)
            desc = at + 12 + ((namesz + 3) & ~3)
            if kind == 3 and image[at + 12:at + 12 + namesz].rstrip(b"\0") == b"GNU":
                return desc, descsz
            at = desc + ((descsz + 3) & ~3)
    raise SystemExit("flood_host: no build-id in libz")


def make_copies(directory, count):
    source = ctypes.util.find_library("z")
    path = None
    for folder in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"):
        if source and os.path.exists(os.path.join(folder, source)):
            path = os.path.join(folder, source)
    with open(path or "/lib/x86_64-linux-gnu/libz.so.1", "rb") as f:
        image = bytearray(f.read())
    offset, length = build_id_span(image)
    paths = []
    for i in range(count):
        image[offset:offset + length] = struct.pack("<I", i + 1) + os.urandom(length - 4)
        copy = os.path.join(directory, "libflood%d.so" % i)
        with open(copy, "wb") as f:
            f.write(image)
        paths.append(copy)
    return paths


def spin(paths, seconds):
    """Calls into each copy in turn: the samples land in files of this process's own."""
    libraries = [ctypes.CDLL(p) for p in paths]
    for library in libraries:
        library.crc32.restype = ctypes.c_ulong
        library.crc32.argtypes = [ctypes.c_ulong, ctypes.c_char_p, ctypes.c_uint]
    data = os.urandom(1 << 16)
    sys.stdout.write("loaded\n")
    sys.stdout.flush()
    end = time.time() + seconds
    while time.time() < end:
        for library in libraries:
            library.crc32(0, data, len(data))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--spin":
        spin(sys.argv[3:], float(sys.argv[2]))
        return
    directory, seconds = sys.argv[1], float(sys.argv[2])
    long_count = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    short_count = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    # The short-lived draw from a pool four times their number of files at once.
    paths = make_copies(directory, (long_count + 4 * short_count) * FILES_PER_PROCESS)
    me = os.path.abspath(__file__)

    def start(files, run_seconds):
        return subprocess.Popen([sys.executable, me, "--spin", str(run_seconds)] + files, stdout=subprocess.PIPE)

    long_lived = [start(paths[i * FILES_PER_PROCESS:(i + 1) * FILES_PER_PROCESS], seconds)
                  for i in range(long_count)]
    for process in long_lived:
        process.stdout.readline()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    pool = paths[long_count * FILES_PER_PROCESS:]
    short_lived = []
    end = time.time() + seconds
    while time.time() < end:
        short_lived = [p for p in short_lived if p.poll() is None]
        while len(short_lived) < short_count:
            short_lived.append(start(random.sample(pool, FILES_PER_PROCESS), SHORT_SECONDS))
        time.sleep(0.05)
    for process in long_lived + short_lived:
        process.wait()


main()

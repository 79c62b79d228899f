# Native code the unwinder cannot follow, called from Python through ctypes:
#   anonymous  machine code in an anonymous executable mapping (as a JIT makes)
#   deleted    a copy of libz, loaded, then unlinked while mapped
# Usage: native_odd_code.py PHASE [SECONDS]. Runs on 2.7 and 3.x.
import ctypes
import os
import shutil
import sys
import tempfile
import time
import zlib

# CPU time: a loaded machine stretches the run instead of thinning its samples (2.7
# has no process_time; its clock() is CPU time on Linux).
cpu_seconds = getattr(time, "process_time", None) or time.clock

PROT_READ, PROT_WRITE, PROT_EXEC = 1, 2, 4
MAP_PRIVATE, MAP_ANONYMOUS = 0x02, 0x20
# A countdown that enters the kernel on every turn (getpid), so that samples
# land in the kernel too:
#   mov ecx, 0x20000; loop: mov eax, 39; push rcx; syscall; pop rcx; dec rcx; jnz loop; ret
COUNTDOWN = (b"\xb9\x00\x00\x02\x00" b"\xb8\x27\x00\x00\x00" b"\x51" b"\x0f\x05" b"\x59"
             b"\x48\xff\xc9" b"\x75\xf2" b"\xc3")


def spin_in_anonymous_code(seconds):
    libc = ctypes.CDLL(None)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                          ctypes.c_long]
    page = libc.mmap(None, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
    if not page or page == ctypes.c_void_p(-1).value:
        sys.exit("mmap PROT_EXEC refused")
    ctypes.memmove(page, COUNTDOWN, len(COUNTDOWN))
    countdown = ctypes.CFUNCTYPE(None)(page)
    end = cpu_seconds() + seconds
    while cpu_seconds() < end:
        countdown()


def mapped_libz():
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split()
                if len(fields) >= 6 and "/libz.so" in fields[5]:
                    return fields[5]
    except (IOError, OSError):
        pass  # a chroot without /proc
    for path in ("/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1"):
        if os.path.exists(path):
            return path
    sys.exit("no libz found")


def spin_in_deleted_library(seconds):
    directory = tempfile.mkdtemp()
    copy = os.path.join(directory, "libz-deleted.so.1")
    shutil.copy(mapped_libz(), copy)
    # Unlinked before it is mapped (loaded through an open descriptor), so that no reader of
    # the maps ever sees it undeleted: one that read them while dlopen was still at work
    # would build a real table for it, and the walk would rightly go through it.
    if os.path.isdir("/proc/self/fd"):
        fd = os.open(copy, os.O_RDONLY)
        os.unlink(copy)
        libz = ctypes.CDLL("/proc/self/fd/%d" % fd)
    else:  # a chroot without /proc: loaded, then unlinked (a reader may, rarely, see it whole)
        libz = ctypes.CDLL(copy)
        os.unlink(copy)
    os.rmdir(directory)
    source = bytes(bytearray((i * 7 + (i >> 5)) & 0xFF for i in range(1 << 18)))
    destination = ctypes.create_string_buffer(len(source) + 1024)
    end = cpu_seconds() + seconds
    while cpu_seconds() < end:
        length = ctypes.c_ulong(len(destination))
        libz.compress2(destination, ctypes.byref(length), source, ctypes.c_ulong(len(source)), 9)


zlib.compress(b"libz is mapped")
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
{"anonymous": spin_in_anonymous_code, "deleted": spin_in_deleted_library}[sys.argv[1]](seconds)

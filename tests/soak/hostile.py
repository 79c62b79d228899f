# A hostile local user's Python process, for the soak (tests/soak/soak.sh runs it as nobody).
# The profiler runs as root and reads what this process maps and holds; each mode is one of
# the attacks tests/e2e/test_hardening*.c check piece by piece, here as a running process:
#   truncate  a copy of an ELF mapped executable as libpython3.99.so, cut to 4 KiB the moment
#             anyone opens it (inotify): a reader that mapped it would take SIGBUS
#   fifo      the mapped copy deleted and replaced by a FIFO (an open would block)
#   symlink   the mapped copy deleted and replaced by a symlink to a root-only file
#   names     an ELF whose 16384 symbols all share one 32 KiB name, mapped executable
#   linetable 200 code objects sharing one 1 MiB (garbage) line table, all run
#   notes     an ELF of 1.2 MB whose 2,000 note sections of 1 MiB all overlap, mapped executable
#   sparse    five sparse 510 MiB ELFs (a few KiB on disk) whose sections all span the file,
#             mapped executable, and touched every second (a verdict keyed by mtime re-arms)
#   debuglink a library (ZOO_LIBRARY, a copy of zlib whose .gnu_debuglink names
#             libzoo.debug and which has no build id) loaded and run: beside it libzoo.debug
#             is a symlink to /dev/ptmx, and .debug/libzoo.debug a FIFO (the debug file
#             lookup's candidates: a root that opened either would take a terminal or hang)
#   tinyelfs  20,000 tiny ELFs, each a file of its own, mapped executable by one process
#   execstorm a process that execs itself (in turn directly and through /bin/sh) as fast as
#             it can: every exec is a new runtime to find and new mappings to read
# linetable runs in 8 processes at once. Each other mode but execstorm forks a child every
# half second: the profiler opens a new target's mapped files when it attaches to it.
# Usage: hostile.py MODE DIR SECONDS (DIR: writable by this user).
import ctypes
import mmap
import os
import shutil
import struct
import sys
import time

MODE, DIR, SECONDS = sys.argv[1], sys.argv[2], float(sys.argv[3])
FAKE = os.path.join(DIR, "libpython3.99.so")
ZOO_LIBRARY = os.environ.get("ZOO_LIBRARY", "")
LINETABLE_PROCESSES = 8
TINY_ELFS = 20000


def map_executable(path):
    fd = os.open(path, os.O_RDONLY)
    mapping = mmap.mmap(fd, 4096, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_EXEC)
    os.close(fd)
    return mapping


def map_executable_page(libc, path):
    """A page of path mapped executable, its descriptor closed (Python's mmap keeps one open)."""
    fd = os.open(path, os.O_RDONLY)
    address = libc.mmap(None, 4096, mmap.PROT_READ | mmap.PROT_EXEC, mmap.MAP_PRIVATE, fd, 0)
    os.close(fd)
    if address in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "mmap " + path)


def shared_name_elf(path, symbols=16384, name_len=32 << 10):
    """Sections: null, .symtab, .strtab (one name for every symbol), .shstrtab."""
    shstrtab = b"\0.symtab\0.strtab\0.shstrtab\0"
    strtab = b"\0" + b"f" * name_len + b"\0"
    symtab = b"\0" * 24 + b"".join(
        struct.pack("<IBBHQQ", 1, 0x12, 0, 1, 0x1000 + 16 * i, 16) for i in range(1, symbols + 1))
    symtab_off = 64
    strtab_off = symtab_off + len(symtab)
    shstrtab_off = strtab_off + len(strtab)
    shdr_off = (shstrtab_off + len(shstrtab) + 7) & ~7
    ident = b"\x7fELF\x02\x01\x01" + b"\0" * 9
    header = ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shdr_off, 0, 64, 0, 0, 64, 4, 3)

    def section(name, kind, offset, size, link=0, info=0, align=1, entsize=0):
        return struct.pack("<IIQQQQIIQQ", name, kind, 0, 0, offset, size, link, info, align, entsize)

    sections = (b"\0" * 64 + section(1, 2, symtab_off, len(symtab), 2, 1, 8, 24) +
                section(9, 3, strtab_off, len(strtab)) + section(17, 3, shstrtab_off, len(shstrtab)))
    image = header + symtab + strtab + shstrtab
    image += b"\0" * (shdr_off - len(image)) + sections
    image += b"\0" * (-len(image) % 4096)
    with open(path, "wb") as out:
        out.write(image)


def elf_header(shdr_off, shnum, shstrndx):
    ident = b"\x7fELF\x02\x01\x01" + b"\0" * 9
    return ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 64, shdr_off, 0, 64, 56, 1, 64, shnum, shstrndx)


def whole_file_segment(size):
    """One PT_LOAD of the whole file, readable and executable."""
    return struct.pack("<IIQQQQQQ", 1, 5, 0, 0, 0, size, size, 4096)


def section(name, kind, offset, size, link=0, info=0, align=1, entsize=0):
    return struct.pack("<IIQQQQIIQQ", name, kind, 0, 0, offset, size, link, info, align, entsize)


def note_bomb_elf(path, sections=2000, size=1200 << 10):
    """2,000 note sections of just under 1 MiB, all at offset 0."""
    headers = b"\0" * 64 + section(0, 7, 0, (1 << 20) - 4096, align=4) * (sections - 1)
    with open(path, "wb") as out:
        out.write(elf_header(4096, sections, 0) + whole_file_segment(size))
        out.seek(4096)
        out.write(headers)
        out.truncate(size)


def sparse_spanning_elf(path, size=510 << 20):
    """.dynsym, .dynstr, .symtab, .strtab, .rodata, .dynamic, a note and .eh_frame: each spans
    the file, which is sparse (a few KiB on disk)."""
    names = b"\0.dynsym\0.dynstr\0.symtab\0.strtab\0.rodata\0.dynamic\0.note\0.eh_frame\0.shstrtab\0"
    at = 16384
    span = (size - at) // 48 * 48  # whole symbols (24 bytes) and dynamic entries (16): libelf reads them
    headers = (b"\0" * 64 + section(1, 11, at, span, 2, 0, 8, 24) + section(9, 3, at, span) +
               section(17, 2, at, span, 4, 0, 8, 24) + section(25, 3, at, span) + section(33, 1, at, span) +
               section(41, 6, at, span, 2, 0, 8, 16) + section(50, 7, at, span, align=4) +
               section(56, 1, at, span) + section(66, 3, 4096, len(names)))
    with open(path, "wb") as out:
        out.write(elf_header(8192, 10, 9) + whole_file_segment(size))
        out.seek(4096)
        out.write(names)
        out.seek(8192)
        out.write(headers)
        out.truncate(size)


def map_whole_executable(path):
    fd = os.open(path, os.O_RDONLY)
    mapping = mmap.mmap(fd, 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_EXEC)
    os.close(fd)
    return mapping


def section_attack(until):
    if MODE == "notes":
        paths = [os.path.join(DIR, "libnotes.so")]
        note_bomb_elf(paths[0])
    else:
        paths = [os.path.join(DIR, "libsparse%d.so" % i) for i in range(5)]
        for path in paths:
            sparse_spanning_elf(path)
    mappings = [map_whole_executable(path) for path in paths]
    last_touch = [time.time()]

    def tick():
        if time.time() - last_touch[0] >= 1:
            last_touch[0] = time.time()
            for path in paths:
                os.utime(path)
    fork_children(until, tick)
    del mappings


def watch_opens(path):
    """An inotify descriptor that becomes readable when anyone opens path."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_NONBLOCK)
    if fd < 0 or libc.inotify_add_watch(fd, path.encode(), 0x20) < 0:  # IN_OPEN
        raise OSError(ctypes.get_errno(), "inotify")
    return fd


def hostile_spin(until):
    while time.time() < until:
        pass


def fork_children(until, on_tick=None):
    """A child every half second (each a new target to attach to), spinning a little, then gone."""
    while time.time() < until:
        child = os.fork()
        if child == 0:
            hostile_spin(time.time() + 0.2)
            time.sleep(0.3)
            os._exit(0)
        if on_tick:
            on_tick()
        hostile_spin(time.time() + 0.05)
        time.sleep(0.45)
        os.waitpid(child, 0)


def linetable_attack(until):
    table = b"\xff" * (1 << 20)

    def hostile_linetable():
        for _ in range(1000):  # long enough to be sampled: its line table is then read
            pass

    code = hostile_linetable.__code__.replace(co_linetable=table)
    functions = [type(hostile_linetable)(code.replace(co_firstlineno=i + 1), {}) for i in range(200)]
    children = []
    for _ in range(LINETABLE_PROCESSES - 1):
        child = os.fork()
        if child == 0:
            break
        children.append(child)
    while time.time() < until:
        for function in functions:
            function()
        time.sleep(0.05)
    if len(children) < LINETABLE_PROCESSES - 1:
        os._exit(0)
    for child in children:
        os.waitpid(child, 0)


def debuglink_attack(until):
    """ZOO_LIBRARY copied beside its planted debug link candidates, loaded, and run."""
    library = os.path.join(DIR, "libzoo.so")
    shutil.copyfile(ZOO_LIBRARY, library)
    os.symlink("/dev/ptmx", os.path.join(DIR, "libzoo.debug"))
    os.mkdir(os.path.join(DIR, ".debug"))
    os.mkfifo(os.path.join(DIR, ".debug", "libzoo.debug"))
    # its own symbols first: else its crc32 calls on into the zlib Python already loaded
    zlib = ctypes.CDLL(library, mode=os.RTLD_NOW | os.RTLD_DEEPBIND)
    data = b"z" * (1 << 20)

    def run_library(seconds):
        end = time.time() + seconds
        while time.time() < end:
            zlib.crc32_z(0, data, len(data))

    while time.time() < until:
        child = os.fork()
        if child == 0:
            run_library(0.2)
            os._exit(0)
        run_library(0.3)
        time.sleep(0.2)
        os.waitpid(child, 0)


def tiny_elf(index):
    """One page: an ELF header and one PT_LOAD of the page, its bytes its own (a distinct file)."""
    image = elf_header(0, 0, 0) + whole_file_segment(4096) + struct.pack("<Q", index)
    return image + b"\0" * (4096 - len(image))


def tinyelfs_attack(until):
    folder = os.path.join(DIR, "tiny")
    os.mkdir(folder)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
    for index in range(TINY_ELFS):
        path = os.path.join(folder, "lib%d.so" % index)
        with open(path, "wb") as out:
            out.write(tiny_elf(index))
        map_executable_page(libc, path)
    # children however long the mapping took: each is a new target whose 20,000 mappings are
    # read (the parent may have been read before it mapped them, and is not read again)
    fork_children(max(until, time.time() + 2))
    shutil.rmtree(folder, ignore_errors=True)  # 80 MB a run: the soak runs this one often


def execstorm(until):
    """Spins a moment (to be sampled), then becomes the next generation: Python directly, or
    through a shell, in turn."""
    generation = int(os.environ.get("ZOO_GENERATION", "0"))
    until = float(os.environ.setdefault("ZOO_UNTIL", str(until)))  # the first generation's
    hostile_spin(time.time() + 0.002)
    if time.time() >= until:
        return
    os.environ["ZOO_GENERATION"] = str(generation + 1)
    args = [sys.argv[0], MODE, DIR, str(SECONDS)]
    if generation % 2:
        os.execv("/bin/sh", ["sh", "-c", 'exec "$0" "$@"', sys.executable] + args)
    os.execv(sys.executable, [sys.executable] + args)


def main():
    until = time.time() + SECONDS
    if MODE == "linetable":
        linetable_attack(until)
        return
    if MODE == "debuglink":
        debuglink_attack(until)
        return
    if MODE == "tinyelfs":
        tinyelfs_attack(until)
        return
    if MODE == "execstorm":
        execstorm(until)
        return
    if MODE in ("notes", "sparse"):
        section_attack(until)
        return
    if MODE == "names":
        shared_name_elf(FAKE)
    else:
        shutil.copyfile(sys.executable, FAKE)
    mapping = map_executable(FAKE)
    tick = None
    if MODE == "truncate":
        watch = watch_opens(FAKE)

        def tick():
            try:
                os.read(watch, 4096)
            except BlockingIOError:
                return
            os.truncate(FAKE, 4096)
    elif MODE == "fifo":
        os.unlink(FAKE)
        os.mkfifo(FAKE)
    elif MODE == "symlink":
        os.unlink(FAKE)
        os.symlink("/etc/shadow", FAKE)
    fork_children(until, tick)
    del mapping


main()

#!/usr/bin/env python3
"""Writes the seed corpora of fuzz/corpus/ (fuzz/README.md says where each comes from).

Run from the checkout after `make` (it uses ./pybpfprof to find event boundaries and to
convert): python3 fuzz/make-corpus.py [CORPUS_DIR]. It needs the machine's interpreters
(tests/pythons/list-pythons.sh: pyenv's 2.7 and 3.6-3.13, the sid chroot's 3.14 and 3.15),
gcc, objcopy and zstd. Every file is rewritten; inputs libFuzzer found are added by hand.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(CHECKOUT, "fuzz", "corpus")
DATA = os.path.join(CHECKOUT, "tests", "data")
PYBPFPROF = os.path.join(CHECKOUT, "pybpfprof")
SEED_LIMIT = 4096  # real files are cut at the first sample that starts past this many bytes
SID_ROOT = os.environ.get("PYBPFPROF_SID_DIR", "/var/cache/pybpfprof/sid")
PYENV_VERSIONS = subprocess.run([os.path.join(CHECKOUT, "tools", "pyenv-versions.sh")],
                                capture_output=True, text=True, check=True).stdout.strip()


def write(harness, name, data):
    directory = os.path.join(CORPUS, "fuzz_" + harness)
    os.makedirs(directory, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(directory, name), "wb") as out:
        out.write(data)


def run(*argv, **kwargs):
    return subprocess.run(argv, check=True, capture_output=True, **kwargs).stdout


def pythons():
    """(label, command list) of every interpreter tests/pythons/list-pythons.sh finds."""
    listing = run("bash", os.path.join(CHECKOUT, "tests", "pythons", "list-pythons.sh")).decode()
    for line in listing.splitlines():
        label, _version, kind, command = line.split("\t")
        if kind != "static":
            yield label, command.split()


# ---- profiles: real files, cut at a sample boundary --------------------------------------

def mojo_cut(path, limit=SEED_LIMIT):
    """The file up to the first STACK event at or past limit: whole samples only."""
    data = open(path, "rb").read()
    if len(data) <= limit:
        return data
    for line in run(PYBPFPROF, "dump", path).decode(errors="replace").splitlines():
        fields = line.split()
        if len(fields) > 1 and fields[0] == "Stack" and int(fields[1][3:]) >= limit:
            return data[:int(fields[1][3:])]
    return data


def profile_seeds(tmp):
    for name in ("mode_xm", "out39", "out313", "mode_xfgP", "outp_sleep", "mp"):
        write("mojo_reader", "austin-" + name + ".mojo",
              mojo_cut(os.path.join(DATA, "mojo", name + ".mojo")))
    for name in ("t1", "att315", "mt", "gcnat"):
        shutil.copy(os.path.join(DATA, "tachyon", name + ".bin"),
                    os.path.join(CORPUS, "fuzz_tachyon_reader", "cpython-" + name + ".bin"))
        shutil.copy(os.path.join(DATA, "tachyon", name + ".expected-collapsed.txt"),
                    os.path.join(CORPUS, "fuzz_collapsed_reader", "cpython-" + name + ".collapsed"))
    # our own writers, from a reference file each: MOJO, Tachyon (zstd and not), collapsed
    small_mojo = os.path.join(tmp, "small.mojo")
    open(small_mojo, "wb").write(mojo_cut(os.path.join(DATA, "mojo", "outp_sleep.mojo")))
    for source, out, options in (
            (os.path.join(DATA, "tachyon", "t1.bin"), "ours-from-t1.mojo", []),
            (small_mojo, "ours-native-kernel.bin", ["-c", "none"]),
            (os.path.join(DATA, "mojo", "mode_xm.mojo"), "ours-memory.bin", []),
            (small_mojo, "ours-native-kernel.collapsed", []),
            (os.path.join(DATA, "mojo", "mode_xm.mojo"), "ours-memory.collapsed", [])):
        converted = os.path.join(tmp, out)
        run(PYBPFPROF, "convert", source, "-o", converted, *options)
        harness = {"mojo": "mojo_reader", "bin": "tachyon_reader",
                   "collapsed": "collapsed_reader"}[out.rsplit(".", 1)[1]]
        write(harness, out, open(converted, "rb").read())


# ---- crafted profiles: a few bytes that claim much (the readers' size budgets) -----------

def mojo_varint(value):
    magnitude = -value if value < 0 else value
    first = (magnitude & 0x3F) | (0x40 if value < 0 else 0)
    magnitude >>= 6
    out = bytearray([first | (0x80 if magnitude else 0)])
    while magnitude:
        group = magnitude & 0x7F
        magnitude >>= 7
        out.append(group | (0x80 if magnitude else 0))
    return bytes(out)


def mojo_event(event_id, *fields):
    out = bytearray([event_id])
    for field in fields:
        out += field + b"\0" if isinstance(field, bytes) else mojo_varint(field)
    return bytes(out)


MOJO_HEAD = b"MOJ" + mojo_varint(3) + mojo_event(1, b"mode", b"wall")
STRING, STACK, FRAME, FRAME_REF, TIME = 11, 2, 3, 5, 9


def mojo_crafted():
    key = 2**64 - 1  # Austin writes keys as 64-bit patterns: all ones is a real one
    names = mojo_event(STRING, 2, b"crafted.py") + mojo_event(STRING, 3, b"deep")
    frame = mojo_event(FRAME, key, 2, 3, 2**31, 2**62, 2**63 - 1, 0)
    stack = mojo_event(STACK, 1, 0, b"1a2b")
    # 30000 references to one frame: a 60 KB sample 30000 frames deep
    write("mojo_reader", "crafted-deep-references.mojo",
          MOJO_HEAD + stack + names + mojo_event(FRAME, 5, 2, 3, 7, 7, 1, 2) +
          mojo_event(FRAME_REF, 5) * 30000 + mojo_event(TIME, 1000))
    # every varint at its longest (10 bytes) or beyond 64 bits (11 bytes: refused)
    write("mojo_reader", "crafted-huge-varints.mojo",
          MOJO_HEAD + mojo_event(STACK, 2**32 - 1, 2**32 - 1, b"f" * 16) + names + frame +
          mojo_event(FRAME_REF, key) + mojo_event(TIME, 2**64 - 1) +
          bytes([FRAME_REF]) + b"\xff" * 10 + b"\x01")
    # a string without its NUL: the stream buffer grows past its first 64 KiB, then ends
    write("mojo_reader", "crafted-unterminated-string.mojo",
          MOJO_HEAD + bytes([STRING]) + mojo_varint(2) + b"x" * 70000)


TACHYON_MAGIC = 0x54414348


def tachyon_file(raw, threads, samples, compress=True, order="<"):
    """raw sample records around one string ("a") and one frame (a, line 1), as
    tests/e2e/test_tachyon_crafted_floods.c's write_crafted lays them out."""
    data = run("zstd", "-3", "-c", input=raw) if compress else raw
    strings = bytes([1, ord("a")])
    frames = bytes([0, 0, 2, 0, 0, 0, 255])
    tables = 64 + len(data)
    frame_table = tables + len(strings)
    size = frame_table + len(frames) + 32
    header = struct.pack(order + "IIBBBBQQQIQQII", TACHYON_MAGIC, 1, 3, 15, 0, 0, 1, 1000, samples,
                         threads, tables, frame_table, 1 if compress else 0, 2)
    footer = struct.pack(order + "IIQ16x", 1, 1, size)
    return header + data + strings + frames + footer


def leb128(value):
    out = bytearray()
    while True:
        group = value & 0x7F
        value >>= 7
        out.append(group | (0x80 if value else 0))
        if not value:
            return bytes(out)


def full_record(tid, depth, order="<"):
    return struct.pack(order + "QIB", tid, 0, 1) + bytes([1, 0]) + leb128(depth) + bytes(depth)


def repeat_flood(depth, count):
    return full_record(1000, depth) + struct.pack("<QIB", 1000, 0, 0) + leb128(count) + \
        bytes([1, 0]) * count


def tachyon_crafted():
    threads = b"".join(full_record(1000 + i, 0) for i in range(4000))
    # 4000 threads, one record each: compressed a byte or two a thread
    write("tachyon_reader", "crafted-4000-threads.bin", tachyon_file(threads, 4000, 4000))
    # the same records behind a header that claims 4 billion threads: refused up front
    write("tachyon_reader", "crafted-claims-4g-threads.bin",
          tachyon_file(threads, 2**32 - 1, 4000))
    # REPEAT floods a few KiB of zstd stand for: past the sample budget (empty stacks),
    # past the frame budget (256-frame stacks)
    write("tachyon_reader", "crafted-repeat-samples.bin",
          tachyon_file(repeat_flood(0, 32000000), 1, 32000001))
    write("tachyon_reader", "crafted-repeat-frames.bin",
          tachyon_file(repeat_flood(256, 1000000), 1, 1000001))
    # uncompressed: one REPEAT whose count is 2^63
    write("tachyon_reader", "crafted-repeat-count.bin",
          tachyon_file(full_record(7, 3) + struct.pack("<QIB", 7, 0, 0) + leb128(2**63) +
                       bytes([1, 0]), 1, 2**64 - 1, compress=False))
    # a big-endian writer's file: three threads of two frames, one REPEAT of the last
    records = b"".join(full_record(tid, 2, ">") for tid in (5, 6, 7))
    write("tachyon_reader", "crafted-big-endian.bin",
          tachyon_file(records + struct.pack(">QIB", 7, 0, 0) + leb128(3) + bytes([1, 0]) * 3,
                       3, 6, compress=False, order=">"))


def collapsed_crafted():
    # 4096 frames (the most a line may hold), then 4097; kernel, native and cut frames
    deep = ";".join(["a:b"] * 4097)
    write("collapsed_reader", "crafted-deepest.collapsed",
          deep.rsplit(";", 1)[0] + " 1\n" + deep + " 1\n")
    write("collapsed_reader", "crafted-kinds.collapsed",
          "[truncated];_[k];x_[n];a:b:99999999999;::;:x: 7\r\n")
    write("collapsed_reader", "crafted-odd-counts.collapsed",
          ";; 1\nx 1 2\n\n a 0\na;b 9223372036854775807\na;b 18446744073709551616\n")


# ---- line tables of real code objects -------------------------------------------------

LINETABLE_SCRIPT = r'''
import struct, sys
def sample(items, limit=3):
    total = 0
    for index, item in enumerate(items):
        if (index % 2 and
                item > limit):
            total += [item * 2 for _ in range(2)][0]
        else:
            try:
                total -= int(
                    str(item))
            except ValueError:
                pass
    return (total,
            len(items))
code = sample.__code__
major, minor = sys.version_info[:2]
if (major, minor) >= (3, 10):
    table = code.co_linetable
else:
    table = code.co_lnotab
offset = (len(code.co_code) // 2) & ~1
head = struct.pack("<BBiI", major, minor, code.co_firstlineno, offset)
out = getattr(sys.stdout, "buffer", sys.stdout)
out.write(head + table)
'''


def linetable_seeds(tmp):
    script = os.path.join(tmp, "linetable.py")
    open(script, "w").write(LINETABLE_SCRIPT)
    for label, command in pythons():
        if label in ("3.7", "3.8"):  # the same co_lnotab as 3.6 and 3.9
            continue
        seed = run(*command, script)
        write("py_linetable", "python" + label + ".linetable", seed)
    # a 3.11+ table of long entries (line deltas of 2^31) and an offset far past its end
    write("py_linetable", "crafted-long-entries.linetable",
          struct.pack("<BBiI", 3, 12, 2**31 - 1, 2**32 - 2) +
          bytes([0xF0 | 7, 0x7F, 0xFF, 0xFF, 0xFF, 0x0F]) * 4 + bytes([0xE8, 0x01]))


# ---- /proc/PID/maps of real processes ---------------------------------------------------

MAPS_SCRIPT = r'''
import mmap, os, sys, tempfile
path = tempfile.mktemp(prefix="replaced lib ")
with open(path, "wb") as f:
    f.write(b"\0" * 4096)
f = open(path, "rb")
m = mmap.mmap(f.fileno(), 4096, prot=mmap.PROT_READ)
os.unlink(path)
sys.stdout.write("ready\n")
sys.stdout.flush()
sys.stdin.read()
'''


def maps_of(command, script):
    """/proc/PID/maps of the interpreter running script (read from outside: the chroot has
    no /proc), once it has mapped a file and deleted it."""
    process = subprocess.Popen(command + [script], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE)
    process.stdout.readline()
    maps = open("/proc/%d/maps" % process.pid, "rb").read()
    process.communicate(b"")
    return maps


def maps_seeds(tmp):
    script = os.path.join(tmp, "maps.py")
    open(script, "w").write(MAPS_SCRIPT)
    for label, command in pythons():
        if label not in ("2.7", "3.12", "3.15"):
            continue
        maps = maps_of(command, script)
        lines = maps.splitlines(keepends=True)
        # the deleted file's line and the interpreter's own, within a few KB
        kept = [line for line in lines if b"(deleted)" in line or b"python" in line]
        kept += [line for line in lines if line not in kept][:24 - len(kept)]
        kept.sort(key=lambda line: int(line.split(b"-")[0], 16))
        write("proc_maps", "python" + label + ".maps", b"".join(kept))
    write("proc_maps", "crafted-long-path.maps",
          "7f0000000000-7f0000001000 r-xp 00000000 fe:01 12 /" + "a/" * 3000 + "lib.so\n"
          "ffffffffffff0000-ffffffffffffffff ---p ffffffffffffffff ffffffff:ffffffff "
          "18446744073709551615  (deleted)\n")


# ---- _Py_DebugOffsets from real interpreters ---------------------------------------------

def debug_offsets_seeds(tmp):
    for label, binary in (("3.13", PYENV_VERSIONS + "/3.13.0/lib/libpython3.13.so.1.0"),
                          ("3.14", SID_ROOT + "/usr/bin/python3.14"),
                          ("3.15", SID_ROOT + "/usr/bin/python3.15")):
        if not os.path.exists(binary):
            print("skipped (missing): " + binary, file=sys.stderr)
            continue
        section = os.path.join(tmp, "runtime")
        run("objcopy", "-O", "binary", "--only-section=.PyRuntime", binary, section)
        blob = open(section, "rb").read()[:1024]  # PY_DEBUG_OFFSETS_MAX_SIZE
        write("py_debug_offsets", "python" + label + ".debug-offsets", blob)
        if label == "3.13":
            # the interpreter state's size beyond DEBUG_OFFSET_LIMIT; the blob cut short
            write("py_debug_offsets", "crafted-huge-size.debug-offsets",
                  blob[:24] + struct.pack("<Q", 2**40) + blob[32:])
            write("py_debug_offsets", "crafted-cut.debug-offsets", blob[:100])


# ---- small ELF files -----------------------------------------------------------------

ELF_SOURCE = r'''
__attribute__((section(".PyRuntime"), used)) char _PyRuntime[64] = "xdebugpy";
const unsigned Py_Version = 0x030d00f0;
const char *version_text = "/usr/lib/python3.13.0";
void *gil_last_holder, *interp_head;
int gil_locked;
__attribute__((noinline)) int leaf(int x) { return x * 3 + gil_locked; }
__attribute__((noinline)) int middle(int x) { int a[16]; for (int i = 0; i < 16; i++) a[i] = leaf(x + i); return a[x & 15]; }
int entry(int x) { return middle(x) + leaf(x); }
static int hidden(int x) { return x ? hidden(x - 1) + 1 : 0; }
int (*use_hidden)(int) = hidden;
'''


def elf_seeds(tmp):
    source = os.path.join(tmp, "tiny.c")
    open(source, "w").write(ELF_SOURCE)
    small = ["-shared", "-fPIC", "-nostdlib", "-Wl,-z,noseparate-code", "-Wl,--build-id"]
    builds = {
        "tiny-eh-frame.so": ["-O2"],
        "tiny-frame-pointer.so": ["-O0", "-fno-omit-frame-pointer"],
        "tiny-debug-frame.so": ["-O2", "-g1", "-fno-asynchronous-unwind-tables"],
    }
    for name, flags in builds.items():
        out = os.path.join(tmp, name)
        run("gcc", *flags, *small, "-fdebug-prefix-map=%s=." % tmp, source, "-o", out)
        if name == "tiny-eh-frame.so":
            # stripped: only .dynsym names the functions
            stripped = os.path.join(tmp, "tiny-stripped.so")
            run("strip", "-o", stripped, out)
            write_elf("tiny-stripped.so", open(stripped, "rb").read())
            elf_crafted(open(out, "rb").read())
        write_elf(name, open(out, "rb").read())


# CFA instructions compilers rarely emit (written raw with .cfi_escape): expressions for the
# CFA and for registers, remembered states, registers in registers and as values, factored
# and negative offsets, long advances, a signal frame, another return column, an unknown opcode.
CFA_SOURCE = r'''
	.text
f_state: .cfi_startproc
	pushq %rbp; .cfi_def_cfa_offset 16; .cfi_offset %rbp, -16; movq %rsp, %rbp; .cfi_def_cfa_register %rbp
	nop; .cfi_remember_state; popq %rbp; .cfi_restore %rbp; .cfi_def_cfa %rsp, 8; ret; .cfi_restore_state
	.skip 300, 0x90; .cfi_escape 0x06, 0x06; nop; .cfi_same_value %rbp
	.cfi_undefined %rip; nop; ret; .cfi_endproc
f_expressions: .cfi_startproc
	nop; .cfi_escape 0x0f, 0x02, 0x77, 0x10; nop
	.cfi_escape 0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22; nop
	.cfi_escape 0x0f, 0x03, 0x76, 0x08, 0x06; nop; .cfi_def_cfa_offset 24; nop; .cfi_def_cfa %rbp, 16; nop
	.cfi_escape 0x0f, 0x03, 0x92, 0x06, 0x20; nop; .cfi_escape 0x0e, 0x18; nop; .cfi_def_cfa %rsp, 8; ret
	.cfi_endproc
f_registers: .cfi_startproc
	nop; .cfi_register %rbp, %rbx; nop; .cfi_escape 0x14, 0x06, 0x02; nop; .cfi_escape 0x10, 0x06, 0x02, 0x91, 0x70
	nop; .cfi_escape 0x16, 0x06, 0x02, 0x91, 0x70; nop; .cfi_escape 0x11, 0x06, 0x03; nop; .cfi_escape 0x2f, 0x06, 0x02
	nop; .cfi_escape 0x12, 0x07, 0x7e; nop; .cfi_escape 0x13, 0x7c; nop; .cfi_escape 0x2e, 0x10; nop
	.cfi_escape 0x10, 0x10, 0x00; nop; .cfi_escape 0x2d; nop; .cfi_escape 0x16, 0x10, 0x00; nop
	.cfi_escape 0x10, 0x10, 0x02, 0x23, 0x08; nop; ret; .cfi_endproc
f_signal: .cfi_startproc; .cfi_signal_frame; nop; .cfi_def_cfa_offset 16; ret; .cfi_endproc
f_column: .cfi_startproc; .cfi_return_column %rbx; nop; .cfi_def_cfa_offset 16; ret; .cfi_endproc
f_unknown: .cfi_startproc
	pushq %rbx; .cfi_def_cfa_offset 16; nop; .cfi_escape 0x3f; nop; .cfi_def_cfa_offset 8; ret; .cfi_endproc
f_unbalanced: .cfi_startproc; nop; .cfi_def_cfa_offset 16; nop; .cfi_escape 0x0b; nop; ret; .cfi_endproc
'''


def cfa_seed(tmp):
    source = os.path.join(tmp, "cfa.s")
    out = os.path.join(tmp, "crafted-cfa-program.so")
    open(source, "w").write(CFA_SOURCE)
    run("gcc", "-shared", "-nostdlib", "-Wl,-z,noseparate-code", "-Wl,--build-id", source, "-o", out)
    write("unwind_table", "crafted-cfa-program.so", open(out, "rb").read())


def write_elf(name, data):
    write("elf_file", name, data)
    write("unwind_table", name, data)


def elf_crafted(data):
    """Headers that claim what the file cannot hold, patched into a real small ELF."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    patched = bytearray(data)
    struct.pack_into("<H", patched, 0x38, 0xFFFF)  # e_phnum: PN_XNUM, the count in section 0
    struct.pack_into("<I", patched, shoff + 0x2C, 0xFFFFFFFF)  # its sh_info: that count
    write_elf("crafted-phnum-xnum.so", bytes(patched))
    patched = bytearray(data)
    struct.pack_into("<H", patched, 0x3C, 0)  # e_shnum 0: the count in section 0
    struct.pack_into("<Q", patched, shoff + 0x20, 2**40)  # its sh_size: that count
    write_elf("crafted-shnum-zero.so", bytes(patched))
    patched = bytearray(data)
    for index in range(shnum):
        at = shoff + index * shentsize
        kind, = struct.unpack_from("<I", patched, at + 4)
        if kind in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM: entries of 1 byte, names anywhere
            struct.pack_into("<Q", patched, at + 0x38, 1)
            struct.pack_into("<I", patched, at + 0x28, 0xFFFF)
    write_elf("crafted-symbol-tables.so", bytes(patched))
    names_at, = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)
    for index in range(shnum):
        at = shoff + index * shentsize
        name_at, = struct.unpack_from("<I", data, at)
        offset, size = struct.unpack_from("<QQ", data, at + 0x18)
        name = data[names_at + name_at:data.index(b"\0", names_at + name_at)]
        if name in (b".eh_frame", b".eh_frame_hdr"):
            # the CFI's bytes reversed: lengths, pointers and opcodes all garbled
            patched = bytearray(data)
            patched[offset:offset + size] = data[offset:offset + size][::-1]
            write_elf("crafted-reversed%s.so" % name.decode().replace(".", "-"), bytes(patched))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        profile_seeds(tmp)
        mojo_crafted()
        tachyon_crafted()
        collapsed_crafted()
        linetable_seeds(tmp)
        maps_seeds(tmp)
        debug_offsets_seeds(tmp)
        elf_seeds(tmp)
        cfa_seed(tmp)


if __name__ == "__main__":
    main()

# Prints one interpreter's opcode names as C, for tests/scripts/gen_py_opcodes.sh: the name of
# each instruction byte 0-255 as the running interpreter's dis module knows it (specialised
# variants included, from 3.11), and, for a specialised one, the instruction it specialises
# (opcode._specializations), which is what CPython 3.15's profiling.sampling.opcode_utils shows;
# and the inline cache entries (2-byte units) that follow each instruction, its base's, so that
# an offset inside a cache finds its instruction; 255 where the following units are not known
# (INSTRUMENTED_LINE and INSTRUMENTED_INSTRUCTION keep the real opcode elsewhere,
# ENTER_EXECUTOR runs another tier).
import dis
import opcode
import sys

major, minor, micro = sys.version_info[:3]
names = getattr(dis, "_all_opname", opcode.opname)
specialized = dict(getattr(opcode, "_specialized_opmap", {}))
for number, name in enumerate(names[:256]):
    if not name.startswith("<"):
        specialized.setdefault(name, number)
base_of = {}
for base, variants in getattr(opcode, "_specializations", {}).items():
    for variant in variants:
        if variant in specialized and specialized[variant] < 256:
            base_of[specialized[variant]] = base

by_number = {}
for number, name in enumerate(names[:256]):
    if not name.startswith("<"):
        by_number[number] = name
for name, number in specialized.items():
    if number < 256:
        by_number.setdefault(number, name)

caches = opcode._inline_cache_entries


def cache_count(name):
    try:
        if hasattr(caches, "keys"):
            return caches.get(name, 0) if hasattr(caches, "get") else caches[name]
        return caches[opcode.opmap[name]]
    except (KeyError, IndexError):
        return 0


cache_of = {}
for number, name in by_number.items():
    if name in ("INSTRUMENTED_LINE", "INSTRUMENTED_INSTRUCTION", "ENTER_EXECUTOR"):
        cache_of[number] = 255
        continue
    base = base_of.get(number, name)
    if name.startswith("INSTRUMENTED_") and name[len("INSTRUMENTED_"):] in opcode.opmap:
        base = name[len("INSTRUMENTED_"):]
    count = cache_count(base)
    if count:
        cache_of[number] = count

tag = f"{major}_{minor}"
print(f"/* {major}.{minor}.{micro} */")
print(f"static const char *const py_opcode_names_{tag}[256] = {{")
for number in sorted(by_number):
    print(f'\t[{number}] = "{by_number[number]}",')
print("};")
print(f"static const char *const py_opcode_bases_{tag}[256] = {{")
for number in sorted(base_of):
    print(f'\t[{number}] = "{base_of[number]}",')
print("};")
print(f"static const uint8_t py_opcode_caches_{tag}[256] = {{")
for number in sorted(cache_of):
    print(f"\t[{number}] = {cache_of[number]},")
print("};")

# Dumps, for every code object compiled from a sample module, its raw line
# table and the location CPython itself gives each instruction offset, so
# that tests/e2e/test_py_linetable.c can check the C decoder against the running
# interpreter. Runs unchanged on 2.7 and 3.6+.
#
# Output, one record a line:
#   version MAJOR MINOR
#   code NAME FIRSTLINENO TABLE_HEX CODE_BYTES
#   loc BYTE_OFFSET LINE END_LINE COLUMN END_COLUMN     (-1 = unknown)
#   end COUNT_OF_CODE_OBJECTS
import binascii
import ctypes
import dis
import sys
import types


def gap(lines):
    return "\n" * lines


def long_line_expression():
    # Hundreds of bytecode bytes on one line: address increments > 255.
    return "    x = " + " + ".join("a%d * 2" % (i % 7) for i in range(120)) + "\n"


def sample_source():
    parts = []
    parts.append('''
import os

GLOBAL = [x * 2 for x in range(10)]


def simple(a, b):
    total = a + b
    return total


def loops(n):
    total = 0
    for i in range(n):
        if i % 2:
            total += i
        else:
            total -= 1
    while n > 0:
        n -= 1
    return total


def multi_line(a, b,
               c=3):
    value = (a +
             b *
             c)
    result = simple(
        a,
        b,
    )
    return [value,
            result]


class Outer(object):
    def method(self):
        def inner(x):
            return lambda y: x + y
        return inner(1)(2)

    class Nested(object):
        def deep(self):
            return {k: v for k, v in zip("ab", "cd")}


def generator(n):
    for i in range(n):
        yield i * i


def with_try(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError) as error:
        return str(error)
    finally:
        pass


def comprehensions(items):
    a = [i for i in items if i]
    b = set(i for i in items)
    c = dict((i, i) for i in items)
    return a, b, c
''')
    # Forward line jumps > 127 and > 255.
    parts.append("\ndef jumps_forward(a0, a1, a2, a3, a4, a5, a6):\n    x = a0\n")
    parts.append(gap(130) + "    x += a1\n" + gap(300) + "    x += a2\n" + gap(70000 // 100) + "    return x\n")
    # Backward line jumps: a statement spanning hundreds of lines whose
    # last instructions are attributed to its first line again.
    parts.append("\ndef jumps_backward(a0, a1, a2, a3, a4, a5, a6):\n    result = simple(\n")
    parts.append("        a0,\n" + gap(200) + "        a1,\n" + gap(300) + "        a2)\n")
    parts.append("    value = [\n" + gap(140) + "        a3,\n" + gap(280) + "        a4]\n")
    parts.append("    for i in range(a5):\n" + gap(300) + "        result += i\n")
    parts.append("    while a6 > 0:\n" + gap(150) + "        a6 -= 1\n")
    parts.append("    return result, value\n")
    # Long lines: many bytecode bytes on one line.
    parts.append("\ndef long_lines(a0, a1, a2, a3, a4, a5, a6):\n")
    parts.append(long_line_expression())
    parts.append("    y = x\n" + long_line_expression() + "    return x + y\n")
    # A long function: thousands of instructions.
    parts.append("\ndef long_function(a0, a1, a2, a3, a4, a5, a6):\n    t = 0\n")
    for i in range(400):
        parts.append("    t += a%d * %d%s\n" % (i % 7, i, gap(i % 3)))
    parts.append("    return t\n")
    # Wide columns (> 127 and > 255): long form entries.
    parts.append("\ndef wide_columns(a0):\n")
    parts.append("    x = " + "(" * 1 + " " * 300 + "a0 + 1)" + " " * 40 + "; y = x * " + " " * 200 + "a0\n")
    parts.append("    return x, y\n")
    return "".join(parts)


def all_code_objects(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            for nested in all_code_objects(const):
                yield nested


def line_table(code):
    if sys.version_info >= (3, 10):
        return code.co_linetable
    return code.co_lnotab


def code_bytes(code):
    if sys.version_info >= (3, 11):
        return code._co_code_adaptive
    return code.co_code


def code_name(code):
    return getattr(code, "co_qualname", code.co_name)


addr2line = ctypes.pythonapi.PyCode_Addr2Line
addr2line.restype = ctypes.c_int
addr2line.argtypes = [ctypes.py_object, ctypes.c_int]


def none_to_minus_one(value):
    return -1 if value is None else value


def expected_locations(code):
    """(byte offset, line, end line, column, end column) for every offset."""
    size = len(code_bytes(code))
    if sys.version_info >= (3, 11):
        for unit, position in enumerate(code.co_positions()):
            line, end_line, column, end_column = [none_to_minus_one(v) for v in position]
            yield (2 * unit, line, end_line, column, end_column)
        return
    lines = [None] * size
    if sys.version_info >= (3, 10):
        for start, end, line in code.co_lines():
            for offset in range(start, min(end, size)):
                lines[offset] = line
    else:
        starts = list(dis.findlinestarts(code))
        for index, (start, line) in enumerate(starts):
            end = starts[index + 1][0] if index + 1 < len(starts) else size
            for offset in range(start, min(end, size)):
                lines[offset] = line
        first = starts[0][0] if starts else size
        for offset in range(first):
            lines[offset] = code.co_firstlineno
    for offset in range(size):
        line = none_to_minus_one(lines[offset])
        # Two CPython sources must agree, or the fixture itself is wrong.
        from_c = addr2line(code, offset)
        if from_c != line:
            raise SystemExit("%s offset %d: findlinestarts/co_lines say %d, PyCode_Addr2Line %d"
                             % (code.co_name, offset, line, from_c))
        yield (offset, line, line, -1, -1)


def main():
    module = compile(sample_source(), "linetable_sample.py", "exec")
    out = sys.stdout
    out.write("version %d %d\n" % sys.version_info[:2])
    count = 0
    for code in all_code_objects(module):
        table = binascii.hexlify(line_table(code)).decode("ascii") or "-"
        out.write("code %s %d %s %d\n" % (code_name(code).replace(" ", "_"), code.co_firstlineno,
                                          table, len(code_bytes(code))))
        for location in expected_locations(code):
            out.write("loc %d %d %d %d %d\n" % location)
        count += 1
    out.write("end %d\n" % count)


main()

# -*- coding: utf-8 -*-
# A process for tests/e2e/test_symbolize_py_live.c: its main thread parks in
# Outer.inner, called through three functions whose names need each PEP 393
# width (1, 2 and 4 bytes a character) on Python 3. It prints
# "ready <id of inner's code object>" and waits for a line on stdin.
import sys


class Outer(object):
    def inner(self):
        sys.stdout.write("ready %d\n" % id(sys._getframe().f_code))
        sys.stdout.flush()
        sys.stdin.readline()  # parked here
        return 0


if sys.version_info[0] >= 3:
    NAMES = [u"level_\u00e9", u"level_\u540d", u"level_\U00020000"]
else:
    NAMES = ["level_a", "level_b", "level_c"]

CHAIN = (
    "def %s():\n    return Outer().inner()\n"
    "def %s():\n    return %s()\n"
    "def %s():\n    return %s()\n"
) % (NAMES[0], NAMES[1], NAMES[0], NAMES[2], NAMES[1])
exec(CHAIN, globals())
globals()[NAMES[2]]()

# Spins in C on a stack of its own that ends at an unmapped page (tests/scripts/stack_top.c,
# built by the test; argv[1] is the library), for ever.
import ctypes
import sys

library = ctypes.CDLL(sys.argv[1])
library.spin_at_stack_top.argtypes = [ctypes.c_double]
sys.stdout.write("ready\n")
sys.stdout.flush()
while library.spin_at_stack_top(60.0) == 0:
    pass

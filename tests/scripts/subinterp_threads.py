# Target for tests/e2e/test_subinterp.c (CPython 3.12+): threads running code in subinterpreters.
#   python subinterp_threads.py all|alone
# - the main thread alternates, 0.3 s each, between main_spin in the main interpreter and
#   sub_spin in subinterpreter A (a new thread state of A at every exec, as CPython makes one)
# - a second thread spins in sub_thread_spin in subinterpreter B the whole time
# - a third thread sleeps in sub_sleep in subinterpreter C the whole time
# It prints "ready A B C" (the interpreter ids) once the threads are in their interpreters.
# alone: the main thread only ("ready A"). 3.12's _xxsubinterpreters runs every thread's code
# on the thread state its interpreter's creator made, which carries the creator's thread id.
import sys
import threading
import time

PHASE_SECONDS = 0.3

SUB_SPIN = """
import time
def sub_spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
sub_spin(%r)
""" % PHASE_SECONDS

SUB_THREAD_SPIN = """
def sub_thread_spin():
    count = 0
    while True:
        count += 1
sub_thread_spin()
"""

SUB_SLEEP = """
import time
def sub_sleep():
    while True:
        time.sleep(0.05)
sub_sleep()
"""


def interpreter_api():
    """(create, exec_code, id_of) for whichever module this version has."""
    try:
        import concurrent.interpreters as interpreters  # 3.14+

        return interpreters.create, lambda interp, code: interp.exec(code), lambda interp: interp.id
    except ImportError:
        pass
    try:
        import _interpreters  # 3.13

        def exec_13(interp, code):
            failure = _interpreters.exec(interp, code)
            if failure is not None:
                raise RuntimeError("subinterpreter failed: %r" % (failure,))

        return _interpreters.create, exec_13, int
    except ImportError:
        import _xxsubinterpreters  # 3.12

        return _xxsubinterpreters.create, _xxsubinterpreters.run_string, int


def main_spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def main():
    create, exec_code, id_of = interpreter_api()
    interps = [create()]
    if sys.argv[1] == "all":
        interps += [create(), create()]
        for interp, code in zip(interps[1:], (SUB_THREAD_SPIN, SUB_SLEEP)):
            thread = threading.Thread(target=exec_code, args=(interp, code))
            thread.daemon = True
            thread.start()
        time.sleep(0.2)
    sys.stdout.write("ready %s\n" % " ".join(str(id_of(interp)) for interp in interps))
    sys.stdout.flush()
    while True:
        main_spin(PHASE_SECONDS)
        exec_code(interps[0], SUB_SPIN)


main()

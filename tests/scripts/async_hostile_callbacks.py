"""A hostile asyncio target for the task-aware stack tests on 3.11-3.13 (run as nobody), where
the task awaiting a task is found through its done callbacks: tasks that spin while those
callbacks claim cycles (two tasks awaiting each other, a task awaiting itself, one at the end of
a chain of 100 tasks awaiting one another) through objects whose _parent_task says so, as a
TaskGroup's does; a gather-like closure whose future names the task itself; one whose first
callback points at unmapped memory; and one whose name's length field claims 2**40
characters. Where a thread's tasks are listed from: the set of all tasks holds 20000 futures
of the loop besides them, (3.12+) the module's _eager_tasks is a set whose size and table
fields claim 2**40 slots in unmapped memory, and the thread's dict holds 5000 threading.local
values before the loop's entry (3.11, 3.12 keep the loop there). Prints "ready" once they all run; runs until
killed."""
import _asyncio
import asyncio
import ctypes
import gc
import sys
import threading
import time

# FutureObj.fut_callback0 (TaskObj's task_callback0) in 3.11-3.13 (py_asyncio_table.inc)
CALLBACK0 = 24
# PyASCIIObject.length
STR_LENGTH = 16
# PySetObject.mask, .table
SET_MASK = 32
SET_TABLE = 40


def spin(seconds):
    end = time.perf_counter() + seconds
    total = 0
    while time.perf_counter() < end:
        for i in range(2000):
            total += i * i
    return total


async def spin_forever():
    while True:
        spin(0.05)
        await asyncio.sleep(0)


async def wait_forever(event):
    await event.wait()


class ClaimsParent:
    """Done callbacks as a TaskGroup's: the task they name awaits the one they are added to."""

    def __init__(self, parent):
        self._parent_task = parent

    def on_done(self, future):
        pass


def claim(task, parent):
    task.add_done_callback(ClaimsParent(parent).on_done)


def closure_over(future):
    def on_done(done):
        return future
    return on_done


async def main():
    # the collector would follow the planted callback pointer itself
    gc.disable()
    never = asyncio.Event()
    cyclic_a = asyncio.create_task(spin_forever(), name="cyclic-a")
    cyclic_b = asyncio.create_task(wait_forever(never), name="cyclic-b")
    claim(cyclic_a, cyclic_b)
    claim(cyclic_b, cyclic_a)
    itself = asyncio.create_task(spin_forever(), name="itself")
    claim(itself, itself)
    # gather's way, its future's callback being a claim that the task awaits itself
    closed = asyncio.create_task(spin_forever(), name="closed")
    looped = asyncio.get_running_loop().create_future()
    claim(looped, closed)
    closed.add_done_callback(closure_over(looped))
    not_a_task = asyncio.create_task(spin_forever(), name="not-a-task")
    claim(not_a_task, 12345)
    unmapped = asyncio.create_task(spin_forever(), name="unmapped")
    ctypes.c_uint64.from_address(id(unmapped) + CALLBACK0).value = 0xDEAD0000000
    # a name no one else will read: its length field says 2**40
    huge = "huge" * 300
    ctypes.c_int64.from_address(id(huge) + STR_LENGTH).value = 1 << 40
    long_named = asyncio.create_task(spin_forever(), name=huge)
    deepest = asyncio.create_task(spin_forever(), name="deep-0")
    below = deepest
    for depth in range(1, 100):
        above = asyncio.create_task(wait_forever(never), name="deep-%d" % depth)
        claim(below, above)
        below = above
    # the set of all tasks, weak references to 20000 futures of the loop among them
    futures = [asyncio.get_running_loop().create_future() for _ in range(20000)]
    all_tasks = _asyncio._all_tasks if sys.version_info < (3, 12) else _asyncio._scheduled_tasks
    for future in futures:
        all_tasks.add(future)
    # only the profiler reads the module's attribute (the C code keeps its own reference)
    if sys.version_info >= (3, 12):
        planted = {1, 2, 3}
        ctypes.c_int64.from_address(id(planted) + SET_MASK).value = 1 << 40
        ctypes.c_uint64.from_address(id(planted) + SET_TABLE).value = 0xDEAD0000000
        _asyncio._eager_tasks = planted
    await asyncio.sleep(0)
    print("ready", flush=True)
    await never.wait()
    del long_named, futures


if __name__ == "__main__":
    # each value is an entry of the thread-state dict, ahead of the running loop's
    local_values = [threading.local() for _ in range(5000)]
    for value in local_values:
        value.here = True
    asyncio.run(main())

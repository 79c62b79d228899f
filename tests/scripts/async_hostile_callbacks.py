"""A hostile asyncio target for the task-aware stack tests on 3.11-3.13 (run as nobody), where
the task awaiting a task is found through its done callbacks: tasks that spin while those
callbacks claim cycles (two tasks awaiting each other, a task awaiting itself, one at the end of
a chain of 100 tasks awaiting one another) through objects whose _parent_task says so, as a
TaskGroup's does; a gather-like closure whose future names the task itself; one whose first
callback points at unmapped memory; and one whose name's length field claims 2**40
characters. Prints "ready" once they all run; runs until killed."""
import asyncio
import ctypes
import gc
import time

# FutureObj.fut_callback0 (TaskObj's task_callback0) in 3.11-3.13 (py_asyncio_table.inc)
CALLBACK0 = 24
# PyASCIIObject.length
STR_LENGTH = 16


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
    await asyncio.sleep(0)
    print("ready", flush=True)
    await never.wait()
    del long_named


if __name__ == "__main__":
    asyncio.run(main())

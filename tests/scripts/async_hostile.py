"""A hostile asyncio target for the task-aware stack tests (run as nobody): tasks that spin
while their awaited_by links form cycles (two tasks awaiting each other, a task awaiting
itself, one at the end of a chain of 100 tasks awaiting one another), one whose awaited_by
points at unmapped memory, and one whose name's length field claims 2**40 characters. Prints "ready" once they all run; runs until killed."""
import asyncio
import ctypes
import gc
import time

# TaskObj.task_awaited_by in 3.14 and 3.15 (their _asyncio AsyncioDebug sections say so)
AWAITED_BY = 96
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


async def main():
    # the collector would follow the planted awaited_by pointer itself
    gc.disable()
    never = asyncio.Event()
    cyclic_a = asyncio.create_task(spin_forever(), name="cyclic-a")
    cyclic_b = asyncio.create_task(wait_forever(never), name="cyclic-b")
    asyncio.future_add_to_awaited_by(cyclic_a, cyclic_b)
    asyncio.future_add_to_awaited_by(cyclic_b, cyclic_a)
    itself = asyncio.create_task(spin_forever(), name="itself")
    asyncio.future_add_to_awaited_by(itself, itself)
    unmapped = asyncio.create_task(spin_forever(), name="unmapped")
    ctypes.c_uint64.from_address(id(unmapped) + AWAITED_BY).value = 0xDEAD0000000
    # a name no one else will read: its length field says 2**40
    huge = "huge" * 300
    ctypes.c_int64.from_address(id(huge) + STR_LENGTH).value = 1 << 40
    long_named = asyncio.create_task(spin_forever(), name=huge)
    deepest = asyncio.create_task(spin_forever(), name="deep-0")
    below = deepest
    for depth in range(1, 100):
        above = asyncio.create_task(wait_forever(never), name="deep-%d" % depth)
        asyncio.future_add_to_awaited_by(below, above)
        below = above
    await asyncio.sleep(0)
    print("ready", flush=True)
    await never.wait()
    del long_named


if __name__ == "__main__":
    asyncio.run(main())

"""asyncio tasks for the task-aware stack tests: named tasks from gather and from a TaskGroup,
a plain await chain and a task awaited as such, each CPU-bound in a coroutine of its own for
argv[2] seconds (0.25) a round. Prints "ready" as the first round starts; runs until killed (or argv[1] seconds).
With argv[3] "uvloop", on uvloop's event loop."""
import asyncio
import sys
import time


def spin(seconds):
    end = time.perf_counter() + seconds
    total = 0
    while time.perf_counter() < end:
        for i in range(2000):
            total += i * i
    return total


async def crunch_gathered(seconds):
    spin(seconds)


async def gathered_worker(seconds):
    await crunch_gathered(seconds)
    await asyncio.sleep(0)


async def crunch_grouped(seconds):
    spin(seconds)


async def grouped_worker(seconds):
    await crunch_grouped(seconds)
    await asyncio.sleep(0)


async def chain_leaf(seconds):
    spin(seconds)


async def chain_middle(seconds):
    await chain_leaf(seconds)


async def chain_top(seconds):
    await chain_middle(seconds)
    await asyncio.sleep(0)


async def crunch_awaited(seconds):
    spin(seconds)


async def awaited_worker(seconds):
    await crunch_awaited(seconds)
    await asyncio.sleep(0)


async def await_round(seconds):
    await asyncio.create_task(awaited_worker(seconds), name="awaited")


async def gather_round(seconds):
    await asyncio.gather(
        asyncio.create_task(gathered_worker(seconds), name="gathered-a"),
        asyncio.create_task(gathered_worker(seconds), name="gathered-b"),
    )


async def group_round(seconds):
    async with asyncio.TaskGroup() as group:
        group.create_task(grouped_worker(seconds), name="grouped-a")
        group.create_task(grouped_worker(seconds), name="grouped-b")


async def main(duration, seconds):
    end = time.monotonic() + duration
    print("ready", flush=True)
    while time.monotonic() < end:
        await gather_round(seconds)
        await group_round(seconds)
        await chain_top(seconds)
        await await_round(seconds)


if __name__ == "__main__":
    run = asyncio.run
    if len(sys.argv) > 3 and sys.argv[3] == "uvloop":
        import uvloop
        run = uvloop.run
    run(main(float(sys.argv[1]) if len(sys.argv) > 1 else 3600.0,
             float(sys.argv[2]) if len(sys.argv) > 2 else 0.25))

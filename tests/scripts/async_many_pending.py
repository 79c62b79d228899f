"""asyncio tasks for the task-chain budget test: argv[2] tasks (400) each suspended in
asyncio.sleep under argv[3] (60) coroutines of its own, their chains as large as a chain may be
kept. The main task spins. Prints "ready" once every task is suspended; runs until killed (or
argv[1] seconds)."""
import asyncio
import sys
import time


async def nested(depth):
    if depth == 0:
        await asyncio.sleep(3600)
    else:
        await nested(depth - 1)


def spin(seconds):
    end = time.perf_counter() + seconds
    total = 0
    while time.perf_counter() < end:
        for i in range(2000):
            total += i * i
    return total


async def main(seconds, tasks, depth):
    waiting = [asyncio.create_task(nested(depth), name=f"many-{i}") for i in range(tasks)]
    await asyncio.sleep(0.2)
    print("ready", flush=True)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        spin(0.05)
        await asyncio.sleep(0)
    for task in waiting:
        task.cancel()


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60
    tasks = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    depth = int(sys.argv[3]) if len(sys.argv) > 3 else 60
    asyncio.run(main(seconds, tasks, depth))

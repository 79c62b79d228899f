"""Waiting tasks that move (bench/async_drift.sh): 8 tasks each await point_a then point_b, each a
sleep of 2-6 ms, logging (CLOCK_MONOTONIC ns, task, point) as each begins to wait. After argv[1]
seconds the log goes to argv[2]. Prints "ready" once the tasks run."""
import asyncio
import random
import sys
import time

log = []


async def point_a():
    await asyncio.sleep(random.uniform(0.002, 0.006))


async def point_b():
    await asyncio.sleep(random.uniform(0.002, 0.006))


async def worker(name):
    while True:
        log.append((time.monotonic_ns(), name, "point_a"))
        await point_a()
        log.append((time.monotonic_ns(), name, "point_b"))
        await point_b()


async def main(duration, path):
    tasks = [asyncio.create_task(worker("w%d" % i), name="w%d" % i) for i in range(8)]
    print("ready", flush=True)
    await asyncio.sleep(duration)
    with open(path, "w") as out:
        for at, name, point in log:
            out.write("%d %s %s\n" % (at, name, point))
    for task in tasks:
        task.cancel()


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[1]), sys.argv[2]))

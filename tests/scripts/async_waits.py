"""Waiting asyncio tasks for tests/e2e/test_async_tasks.c (wall mode, every waiting task): 16 tasks
named client-N, each awaiting one request task after another (request-M, as a server makes one
per request), which awaits db_call (an asyncio.sleep of 5-15 ms) then render (20-40 ms, another
sleep); the requests measure their wall time and db_call's in them. The times are drawn at
random: requests of a fixed length would be sampled at the same few phases of theirs at every
interval. Prints "ready" once they run; on SIGUSR1 prints "DB_NS REQUESTS_NS", what the requests
measured so far. Runs until killed."""
import asyncio
import itertools
import random
import signal
import time

spent_ns = {"db_call": 0, "request": 0}
numbers = itertools.count()


async def db_call():
    start = time.perf_counter_ns()
    await asyncio.sleep(random.uniform(0.005, 0.015))
    spent_ns["db_call"] += time.perf_counter_ns() - start


async def render():
    await asyncio.sleep(random.uniform(0.02, 0.04))


async def handle_request():
    start = time.perf_counter_ns()
    await db_call()
    await render()
    spent_ns["request"] += time.perf_counter_ns() - start


async def client():
    # spread the requests' phases
    await asyncio.sleep(random.uniform(0, 0.04))
    while True:
        await asyncio.create_task(handle_request(), name="request-%d" % next(numbers))


def report_truth():
    print("%d %d" % (spent_ns["db_call"], spent_ns["request"]), flush=True)


async def main():
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, report_truth)
    clients = [asyncio.create_task(client(), name="client-%d" % i) for i in range(16)]
    await asyncio.sleep(0.1)
    print("ready", flush=True)
    await asyncio.gather(*clients)


if __name__ == "__main__":
    asyncio.run(main())

"""One task awaited by two, for the `stacks` task tree tests (tests/test_async_tasks.c): tasks
waiter-1 and waiter-2 each `await` the task shared, which waits in sleeps. Prints "ready" once
both wait; runs until killed."""
import asyncio


async def shared_work():
    while True:
        await asyncio.sleep(0.05)


async def waiter(shared):
    await shared


async def main():
    shared = asyncio.create_task(shared_work(), name="shared")
    waiters = [asyncio.create_task(waiter(shared), name="waiter-1"),
               asyncio.create_task(waiter(shared), name="waiter-2")]
    await asyncio.sleep(0.2)
    print("ready", flush=True)
    await asyncio.gather(*waiters)


if __name__ == "__main__":
    asyncio.run(main())

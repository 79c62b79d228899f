"""Event loops in threads for the `stacks` task tree tests (tests/test_async_tasks.c): thread
"gone" runs a loop whose tasks gone-a and gone-b it leaves pending (kept alive) and exits; threads
live-1 and live-2 each run a loop whose task live-N-main gathers live-N-a and live-N-b, which wait
in sleeps. Prints "ready TID1 TID2" (the live threads' ids) once the gone thread has exited and
both live loops run their tasks; runs until killed."""
import asyncio
import threading
import time

kept = []


async def wait_forever():
    while True:
        await asyncio.sleep(0.05)


async def live_main(prefix, started):
    children = [asyncio.create_task(wait_forever(), name=prefix + "-a"),
                asyncio.create_task(wait_forever(), name=prefix + "-b")]
    started.set()
    await asyncio.gather(*children)


def live(prefix, started, tids):
    tids[prefix] = threading.get_native_id()
    loop = asyncio.new_event_loop()
    loop.run_until_complete(loop.create_task(live_main(prefix, started), name=prefix + "-main"))


async def gone_main():
    kept.append(asyncio.create_task(wait_forever(), name="gone-a"))
    kept.append(asyncio.create_task(wait_forever(), name="gone-b"))
    await asyncio.sleep(0.1)


def gone():
    loop = asyncio.new_event_loop()
    loop.run_until_complete(loop.create_task(gone_main(), name="gone-main"))
    # the loop and its pending tasks outlive the thread
    kept.append(loop)


if __name__ == "__main__":
    thread = threading.Thread(target=gone, name="gone")
    thread.start()
    thread.join()
    tids = {}
    for prefix in ("live-1", "live-2"):
        started = threading.Event()
        threading.Thread(target=live, args=(prefix, started, tids), name=prefix, daemon=True).start()
        started.wait()
    time.sleep(0.2)
    print("ready %d %d" % (tids["live-1"], tids["live-2"]), flush=True)
    while True:
        time.sleep(1)

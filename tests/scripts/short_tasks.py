"""Short asyncio tasks of known names, for the test of tasks that end before their record is
drained: rounds of a task named "alpha-N" spinning in crunch_alpha, then one named "beta-N"
spinning in crunch_beta, argv[2] seconds (0.003) each, each awaited to its end before the next
starts (so the next is often made where the last one lay). Each task's spin is written to the
file argv[3] as a line "NAME START_US END_US" (CLOCK_MONOTONIC, the profile's clock), flushed
every round. Prints "ready" as the first round starts; runs until killed (or argv[1] seconds)."""
import asyncio
import sys
import time


def spin(seconds):
    end = time.perf_counter() + seconds
    total = 0
    while time.perf_counter() < end:
        for i in range(200):
            total += i * i
    return total


def timed_spin(seconds, log):
    start = time.monotonic_ns() // 1000
    spin(seconds)
    log.append((asyncio.current_task().get_name(), start, time.monotonic_ns() // 1000))


async def crunch_alpha(seconds, log):
    timed_spin(seconds, log)


async def crunch_beta(seconds, log):
    timed_spin(seconds, log)


async def main(duration, seconds, truth):
    print("ready", flush=True)
    end = time.monotonic() + duration
    round_number = 0
    log = []
    while time.monotonic() < end:
        round_number += 1
        await asyncio.create_task(crunch_alpha(seconds, log), name=f"alpha-{round_number}")
        await asyncio.create_task(crunch_beta(seconds, log), name=f"beta-{round_number}")
        truth.write("".join(f"{name} {start} {finish}\n" for name, start, finish in log))
        truth.flush()
        log.clear()


with open(sys.argv[3], "w") as truth_file:
    asyncio.run(main(float(sys.argv[1]), float(sys.argv[2]), truth_file))

# Target for tests/e2e/test_services.c (uvicorn): a FastAPI app whose endpoint /orders goes through
# handler -> service -> query, coroutines awaiting one another, the CPU spent in query.
# handler measures its own CPU time and query's (time.thread_time: nothing in the chain
# suspends, so the handler's span is its own). /report waits: report awaits db_query (an
# asyncio.sleep "database" call of 5-15 ms) then render_page (20-40 ms, another asyncio.sleep),
# and measures the wall time of the request and of its database call (drawn at random: requests
# of a fixed length would be sampled at the same few phases of theirs at every interval). Where SERVICE_TRUTH_DIR is set, the app writes
# "HANDLER_CPU QUERY_CPU REPORT_WALL DB_WALL" (ns) to SERVICE_TRUTH_DIR/fastapi.PID at shutdown:
# the truth the profile is checked against.
import asyncio
import os
import random
import time

from fastapi import FastAPI

app = FastAPI()
spent_ns = {"handler": 0, "query": 0, "report": 0, "db_query": 0}


async def query(rounds):
    start = time.thread_time_ns()
    total = 0
    for i in range(rounds):
        total += i * i % 7
    spent_ns["query"] += time.thread_time_ns() - start
    return total


async def service(rounds):
    return await query(rounds)


@app.get("/orders")
async def handler():
    start = time.thread_time_ns()
    total = await service(200000)
    spent_ns["handler"] += time.thread_time_ns() - start
    return {"total": total}


async def db_query():
    start = time.perf_counter_ns()
    await asyncio.sleep(random.uniform(0.005, 0.015))
    spent_ns["db_query"] += time.perf_counter_ns() - start


async def render_page():
    await asyncio.sleep(random.uniform(0.02, 0.04))


@app.get("/report")
async def report():
    start = time.perf_counter_ns()
    await db_query()
    await render_page()
    spent_ns["report"] += time.perf_counter_ns() - start
    return {"rows": 1}


@app.on_event("shutdown")
def write_truth():
    directory = os.environ.get("SERVICE_TRUTH_DIR")
    if not directory:
        return
    path = os.path.join(directory, "fastapi.%d" % os.getpid())
    with open(path + ".tmp", "w") as out:
        out.write("%d %d %d %d\n" % (spent_ns["handler"], spent_ns["query"], spent_ns["report"],
                                     spent_ns["db_query"]))
    os.rename(path + ".tmp", path)

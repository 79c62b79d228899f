# Target for tests/test_services.c (uvicorn): a FastAPI app whose endpoint goes through
# handler -> service -> query, coroutines awaiting one another, the CPU spent in query.
# handler measures its own CPU time and query's (time.thread_time: nothing in the chain
# suspends, so the handler's span is its own) and, where SERVICE_TRUTH_DIR is set, writes
# them to SERVICE_TRUTH_DIR/fastapi.PID at shutdown: the truth the profile is checked against.
import os
import time

from fastapi import FastAPI

app = FastAPI()
spent_ns = {"handler": 0, "query": 0}


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


@app.on_event("shutdown")
def write_truth():
    directory = os.environ.get("SERVICE_TRUTH_DIR")
    if not directory:
        return
    path = os.path.join(directory, "fastapi.%d" % os.getpid())
    with open(path + ".tmp", "w") as out:
        out.write("%d %d\n" % (spent_ns["handler"], spent_ns["query"]))
    os.rename(path + ".tmp", path)

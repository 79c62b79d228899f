# `pybpfprof stacks --json` of tests/scripts/async_shared.py (tests/test_async_tasks.c): prints
# "shared" when the task shared lists both waiter-1 and waiter-2 as awaiting it (awaited_by the
# first of awaited_by_all), else "other: why".
# Usage: python3 async_shared_check.py FILE
import json
import sys

tasks = json.load(open(sys.argv[1]))["tasks"]
by_name = {task["name"]: task for task in tasks}
for name in ("shared", "waiter-1", "waiter-2"):
    if name not in by_name:
        print("other: no task %s in %s" % (name, sorted(by_name)))
        sys.exit(0)
shared = by_name["shared"]
awaiting = shared["awaited_by_all"]
assert all(isinstance(address, str) for address in awaiting), "awaited_by_all"
wanted = sorted([by_name["waiter-1"]["address"], by_name["waiter-2"]["address"]])
if sorted(awaiting) != wanted or shared["awaited_by"] != awaiting[0]:
    print("other: shared awaited by %s (%s), waiters %s" % (awaiting, shared["awaited_by"], wanted))
    sys.exit(0)
print("shared")

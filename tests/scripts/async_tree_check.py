# `pybpfprof stacks --json` of tests/scripts/async_tasks.py (tests/e2e/test_async_tasks.c): reads
# the document strictly, then prints "tree" when its tasks form the script's tree at a moment
# when the main task awaits its gathered or grouped tasks: Task-1 awaited by none, suspended in
# main and the round's function (3.11-3.13's TaskGroup waits in __aexit__ itself), each child
# awaited by it under its name; else "other: why".
# Usage: python3 async_tree_check.py FILE
import json
import sys

with open(sys.argv[1]) as document:
    tasks = json.load(document)["tasks"]
for task in tasks:
    assert isinstance(task["name"], str) and isinstance(task["running"], bool), "task"
    assert task["awaited_by"] is None or isinstance(task["awaited_by"], str), "awaited_by"
    assert all(frame["kind"] == "python" for frame in task["frames"]), "frames"
roots = [task for task in tasks if task["name"] == "Task-1" and task["awaited_by"] is None]
if len(roots) != 1:
    print("other: no Task-1 root in %s" % [task["name"] for task in tasks])
    sys.exit(0)
root = roots[0]
where = [frame["name"] for frame in root["frames"]]
children = sorted(task["name"] for task in tasks if task["awaited_by"] == root["address"])
if children == ["gathered-a", "gathered-b"] and where[:2] == ["main", "gather_round"]:
    print("tree")
elif children == ["grouped-a", "grouped-b"] and where[:2] == ["main", "group_round"] and \
        ("TaskGroup._aexit" in where or "TaskGroup.__aexit__" in where):
    print("tree")
else:
    print("other: Task-1 in %s awaits %s" % (where, children))

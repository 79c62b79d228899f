# `pybpfprof stacks --json` as the text form shows it (tests/e2e/test_stacks.c): reads the
# document strictly (json.load), checks its fields' types, then prints every thread as
# the text printer does (a "Thread TID ..." line with its state, its frames leaf first),
# so that one check reads both forms.  Usage: python3 stacks_json_view.py FILE
import json
import sys

with open(sys.argv[1]) as document:
    stacks = json.load(document)
assert isinstance(stacks["pid"], int), "pid"
assert isinstance(stacks["python"], str), "python"
print("Process %d: Python %s" % (stacks["pid"], stacks["python"]))
for thread in stacks["threads"]:
    assert isinstance(thread["tid"], int) and isinstance(thread["name"], str), "thread"
    assert thread["state"] in ("running", "idle"), thread["state"]
    assert isinstance(thread["on_cpu"], bool), "on_cpu"
    if thread["state"] == "running":
        state = "running" if thread["on_cpu"] else "runnable, waiting for a CPU"
    else:
        state = "idle: %s" % thread["kernel_state"]
    print("\nThread %d \"%s\" (%s)" % (thread["tid"], thread["name"], state))
    for frame in thread["frames"]:
        assert frame["line"] is None or isinstance(frame["line"], int), "line"
        if frame["kind"] == "kernel":
            print("    %s [kernel]" % frame["name"])
        elif frame["kind"] == "python":
            print("    %s (%s:%s)" % (frame["name"], frame["file"], frame["line"]))
        else:
            print("    %s (%s)" % (frame["name"], frame["file"]))

#!/usr/bin/env python3
"""Checks a Firefox Profiler processed profile (.gecko.json, or .gecko.json.gz) structurally,
the checks doc/formats.md lists: every table's columns as long as its length, every index into
another table in range, stack prefixes pointing back, sample and marker times in order, thread
and process names present. Exits 1 with the first fault; else prints per thread
"thread NAME|PROCESS|PID|TID|SAMPLES|WEIGHT", then "categories" with the categories frames use
and "marker NAME COUNT" for each marker name.

Usage: gecko_check.py FILE
"""
import gzip
import json
import sys

TABLES = {
    "samples": ["stack", "time"],
    "stackTable": ["frame", "prefix", "category", "subcategory"],
    "frameTable": ["func", "line", "category", "subcategory", "address", "inlineDepth",
                   "nativeSymbol", "innerWindowID", "implementation", "column"],
    "funcTable": ["name", "isJS", "relevantForJS", "resource", "fileName", "lineNumber",
                  "columnNumber"],
    "resourceTable": ["lib", "name", "host", "type"],
    "nativeSymbols": ["libIndex", "address", "name", "functionSize"],
    "markers": ["name", "startTime", "endTime", "phase", "category", "data"],
}
META = ["version", "preprocessedProfileVersion", "interval", "startTime", "categories",
        "markerSchema", "product", "processType"]
THREAD = ["name", "processName", "pid", "tid", "isMainThread", "processType", "registerTime",
          "pausedRanges", "processStartupTime"]


def fail(message):
    print("gecko_check: " + message, file=sys.stderr)
    sys.exit(1)


def index_ok(value, limit, nullable=False):
    if value is None:
        return nullable
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < limit


def check_columns(where, name, table):
    if not isinstance(table, dict) or not isinstance(table.get("length"), int):
        fail(f"{where}: {name} has no length")
    for column in TABLES[name]:
        values = table.get(column)
        if not isinstance(values, list) or len(values) != table["length"]:
            fail(f"{where}: {name}.{column} is not a list of {table['length']}")


def check_thread(where, thread, strings, categories):
    for key in THREAD:
        if key not in thread:
            fail(f"{where}: no {key}")
    for key in ("name", "processName"):
        if not isinstance(thread[key], str) or not thread[key]:
            fail(f"{where}: empty {key}")
    if not isinstance(thread["pid"], str):
        fail(f"{where}: pid is not a string")
    for name in TABLES:
        check_columns(where, name, thread.get(name))
    stacks, frames, funcs = thread["stackTable"], thread["frameTable"], thread["funcTable"]
    for i in range(stacks["length"]):
        prefix = stacks["prefix"][i]
        if prefix is not None and not index_ok(prefix, i):
            fail(f"{where}: stack {i} prefix {prefix} is not an earlier stack")
        if not index_ok(stacks["frame"][i], frames["length"]):
            fail(f"{where}: stack {i} frame out of range")
        if not index_ok(stacks["category"][i], categories):
            fail(f"{where}: stack {i} category out of range")
    for i in range(frames["length"]):
        if not index_ok(frames["func"][i], funcs["length"]):
            fail(f"{where}: frame {i} func out of range")
        if not index_ok(frames["category"][i], categories):
            fail(f"{where}: frame {i} category out of range")
    for i in range(funcs["length"]):
        if not index_ok(funcs["name"][i], len(strings)):
            fail(f"{where}: func {i} name out of range")
        if not index_ok(funcs["fileName"][i], len(strings), nullable=True):
            fail(f"{where}: func {i} fileName out of range")
        if not isinstance(funcs["isJS"][i], bool):
            fail(f"{where}: func {i} isJS not a boolean")
    samples = thread["samples"]
    if samples.get("weightType") not in ("samples", "tracing-ms", "bytes"):
        fail(f"{where}: bad weightType")
    weight = samples.get("weight")
    if weight is not None and (not isinstance(weight, list) or len(weight) != samples["length"]):
        fail(f"{where}: samples.weight is neither null nor a column")
    last = None
    for i in range(samples["length"]):
        if not index_ok(samples["stack"][i], stacks["length"], nullable=True):
            fail(f"{where}: sample {i} stack out of range")
        time = samples["time"][i]
        if not isinstance(time, (int, float)) or (last is not None and time < last):
            fail(f"{where}: sample {i} time {time} is not in order")
        last = time
    markers = thread["markers"]
    for i in range(markers["length"]):
        if not index_ok(markers["name"][i], len(strings)):
            fail(f"{where}: marker {i} name out of range")
        if markers["phase"][i] not in (0, 1, 2, 3):
            fail(f"{where}: marker {i} bad phase")
        start, end = markers["startTime"][i], markers["endTime"][i]
        if markers["phase"][i] == 1 and not (isinstance(start, (int, float)) and isinstance(end, (int, float))
                                            and start <= end):
            fail(f"{where}: interval marker {i} from {start} to {end}")
        if not index_ok(markers["category"][i], categories):
            fail(f"{where}: marker {i} category out of range")


def main():
    path = sys.argv[1]
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        profile = json.loads(f.read().decode("utf-8"))
    meta = profile.get("meta")
    if not isinstance(meta, dict):
        fail("no meta")
    for key in META:
        if key not in meta:
            fail(f"meta: no {key}")
    if not (isinstance(meta["interval"], (int, float)) and meta["interval"] > 0):
        fail("meta.interval is not positive")
    categories = meta["categories"]
    for category in categories:
        if not category.get("name") or not category.get("color") or not category.get("subcategories"):
            fail(f"category {category} lacks a name, a colour or subcategories")
    strings = profile.get("shared", {}).get("stringArray")
    if not isinstance(strings, list) or not all(isinstance(s, str) for s in strings):
        fail("shared.stringArray is not a list of strings")
    if not isinstance(profile.get("threads"), list) or not isinstance(profile.get("libs"), list):
        fail("no threads or libs")
    used = set()
    marker_counts = {}
    for index, thread in enumerate(profile["threads"]):
        check_thread(f"thread {index}", thread, strings, len(categories))
        used.update(categories[c]["name"] for c in thread["frameTable"]["category"])
        for name in thread["markers"]["name"]:
            marker_counts[strings[name]] = marker_counts.get(strings[name], 0) + 1
        samples = thread["samples"]
        weight = sum(samples["weight"]) if samples["weight"] else samples["length"]
        print(f"thread {thread['name']}|{thread['processName']}|{thread['pid']}|{thread['tid']}|"
              f"{samples['length']}|{weight}")
    print("categories " + ",".join(sorted(used)))
    for name, count in sorted(marker_counts.items()):
        print(f"marker {name} {count}")


main()

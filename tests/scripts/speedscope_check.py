#!/usr/bin/python3
"""Checks a speedscope file as a user would: it is valid against speedscope's schema
(tests/data/speedscope/file-format-schema.json), then prints each frame name's self
share of all weight, the heaviest first: "<percent> <name>" per line.

Usage: speedscope_check.py SCHEMA FILE [N]
"""
import json
import sys

import jsonschema


def main():
    schema_path, path = sys.argv[1], sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    with open(path, encoding="utf-8") as f:
        document = json.load(f)
    jsonschema.validate(document, schema)
    frames = document["shared"]["frames"]
    self_weight, total = {}, 0
    for profile in document["profiles"]:
        if len(profile["samples"]) != len(profile["weights"]):
            sys.exit("samples and weights differ in length")
        for stack, weight in zip(profile["samples"], profile["weights"]):
            total += weight
            if stack:
                name = frames[stack[-1]]["name"]
                self_weight[name] = self_weight.get(name, 0) + weight
    for name, weight in sorted(self_weight.items(), key=lambda item: -item[1])[:count]:
        print("%.2f %s" % (100.0 * weight / total, name))


main()

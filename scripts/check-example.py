#!/usr/bin/env python3
"""Runs `flowrt run EXAMPLE --format json` and checks its document against the example's
expected.json: the contexts of each flow by status, every log line (sorted), the skipped starts, the
records of each table, and that no error was reported. Exits 1, saying what differs, when anything does.

usage: check-example.py FLOWRT EXAMPLE_DIR
"""
import collections
import json
import subprocess
import sys


def summary(doc):
    contexts = collections.defaultdict(collections.Counter)
    for c in doc["contexts"]:
        contexts[c["flow"]][c["status"]] += 1
    logs = sorted(line["message"] for c in doc["contexts"] for line in c["logs"])
    return {
        "contexts": {flow: dict(sorted(counts.items())) for flow, counts in sorted(contexts.items())},
        "logs": logs,
        "skipped": len(doc["skipped"]),
        "records": {table: len(rows) for table, rows in sorted(doc["records"].items())},
        "errors": doc["errors"],
    }


def main():
    flowrt, example = sys.argv[1], sys.argv[2]
    run = subprocess.run([flowrt, "run", example, "--format", "json"], capture_output=True, text=True)
    if run.returncode != 0:
        print(f"flowrt run {example} exited {run.returncode}: {run.stderr}", file=sys.stderr)
        return 1
    got = summary(json.loads(run.stdout))
    with open(f"{example}/expected.json") as f:
        want = json.load(f)
    want.setdefault("errors", [])
    if got != want:
        print(f"{example}: the run differs from expected.json\n got: {json.dumps(got, sort_keys=True)}\n"
              f"want: {json.dumps(want, sort_keys=True)}", file=sys.stderr)
        return 1
    print(f"{example}: as expected ({sum(sum(s.values()) for s in got['contexts'].values())} contexts)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

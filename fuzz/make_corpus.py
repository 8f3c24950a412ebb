#!/usr/bin/env python3
"""Writes the fuzz seeds that come from the project's own inputs, so that the corpus covers
every compiler case and every example:

  fuzz/corpus/definitions/case_NAME.json         tests/compiler/cases/NAME.json: its "text",
                                                 or its "definitions" as one file
  fuzz/corpus/definitions/example_EX_FILE.json   examples/EX/flows/FILE.json, as it is
  fuzz/corpus/definitions/example_EX_all.json    every flow file of examples/EX, as one array
  fuzz/corpus/events/example_EX.txt              examples/EX in events_fuzz's input format:
                                                 line 1 {"definitions": [...], "config": {...}}
                                                 (config only when EX has config.json), then
                                                 examples/EX/events.jsonl as it is

Files named case_* and example_* in those directories belong to this script: it rewrites
them and removes those whose source is gone. Other seeds (hand-written) are left alone.

  fuzz/make_corpus.py           regenerate
  fuzz/make_corpus.py --check   change nothing; exit 1 naming every entry that is missing,
                                out of date or without a source (scripts/fuzz.sh --regress
                                and the test suite run this)
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = os.path.join(ROOT, "tests", "compiler", "cases")
EXAMPLES = os.path.join(ROOT, "examples")
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
OWNED_PREFIXES = ("case_", "example_")


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def examples():
    """(name, [flow file paths], config path or None, events path) per example, sorted."""
    out = []
    for name in sorted(os.listdir(EXAMPLES)):
        flows_dir = os.path.join(EXAMPLES, name, "flows")
        if not os.path.isdir(flows_dir):
            continue
        flows = sorted(os.path.join(flows_dir, f) for f in os.listdir(flows_dir) if f.endswith(".json"))
        config = os.path.join(EXAMPLES, name, "config.json")
        events = os.path.join(EXAMPLES, name, "events.jsonl")
        out.append((name, flows, config if os.path.exists(config) else None, events))
    return out


def all_definitions(flow_files):
    defs = []
    for path in flow_files:
        value = json.loads(read_text(path))
        defs.extend(value if isinstance(value, list) else [value])
    return defs


def wanted():
    """{(target, file name): content} of every entry this script owns."""
    entries = {}
    for case in sorted(f for f in os.listdir(CASES) if f.endswith(".json")):
        spec = json.loads(read_text(os.path.join(CASES, case)))
        if "text" in spec:
            content = spec["text"]
        elif "definitions" in spec:
            content = compact(spec["definitions"])
        else:
            sys.exit(f"make_corpus: {case} has neither \"text\" nor \"definitions\"")
        entries[("definitions", "case_" + case)] = content
    for name, flows, config, events in examples():
        for path in flows:
            entries[("definitions", f"example_{name}_{os.path.basename(path)}")] = read_text(path)
        entries[("definitions", f"example_{name}_all.json")] = compact(all_definitions(flows))
        setup = {"definitions": all_definitions(flows)}
        if config:
            setup["config"] = json.loads(read_text(config))
        body = read_text(events) if os.path.exists(events) else ""
        entries[("events", f"example_{name}.txt")] = compact(setup) + "\n" + body
    return entries


def owned_files():
    """(target, file name) of every file now in the corpus that this script owns."""
    found = set()
    for target in ("definitions", "events"):
        d = os.path.join(CORPUS, target)
        for f in os.listdir(d):
            if f.startswith(OWNED_PREFIXES):
                found.add((target, f))
    return found


def main(argv):
    check = argv[1:] == ["--check"]
    if argv[1:] and not check:
        sys.exit(__doc__)
    entries = wanted()
    stale = sorted(owned_files() - set(entries))
    problems = []
    for (target, name), content in sorted(entries.items()):
        path = os.path.join(CORPUS, target, name)
        current = read_text(path) if os.path.exists(path) else None
        if current == content:
            continue
        if check:
            problems.append(f"{target}/{name}: " + ("missing" if current is None else "out of date"))
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(content)
    for target, name in stale:
        if check:
            problems.append(f"{target}/{name}: its source is gone")
        else:
            os.remove(os.path.join(CORPUS, target, name))
    if check:
        if problems:
            print("make_corpus: fuzz/corpus does not cover every compiler case and example "
                  "(run fuzz/make_corpus.py):", file=sys.stderr)
            for p in problems:
                print("  " + p, file=sys.stderr)
            return 1
        print(f"make_corpus: fuzz/corpus covers {len(entries)} entries from the compiler cases and examples")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

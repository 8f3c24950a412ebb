#!/usr/bin/env python3
"""Checks the JSON Schemas in schemas/ with a real validator (python3-jsonschema) and against
flowrt itself:

  1. each schema is a valid draft 2020-12 schema, and names every op, built-in action, action
     input and property that flowrt's sources define (so a new one cannot be left out);
  2. what flowrt accepts, the schemas accept: every example (flows, config.json, events.jsonl,
     each naming its schema by "$schema"), every compiler case that compiles
     (tests/compiler/cases with "errors": []), the fixtures in tests/schema/valid (which
     `flowrt run` also runs without an error), and the conformance scenarios in
     ../shared/conformance when that folder is there;
  3. what the schemas reject, flowrt rejects too: each case in tests/schema/invalid is
     rejected by its schema AND by flowrt (`flowrt validate` for a definition, `flowrt run`
     for an events line or a config), with an error that says what the case expects.

usage: check_schemas.py [-v] FLOWRT_BINARY
With -v, also prints for each invalid case why the schema and flowrt reject it. Prints each failure and closes with 'N passed, M failed'; exits 1 if any failed, and 77
(skipped) if python3-jsonschema is not installed.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks  # noqa: E402  (tests/support/checks.py)

try:
    import jsonschema
    from jsonschema import Draft202012Validator
except ImportError:
    # Exit 77: ctest reports the test as skipped (SKIP_RETURN_CODE), not passed.
    print(f"check_schemas: SKIPPED: {sys.executable} has no jsonschema module; install Debian's "
          "python3-jsonschema (scripts/setup-deps.sh does)", file=sys.stderr)
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMAS = os.path.join(ROOT, "schemas")
VERBOSE = "-v" in sys.argv[1:]
args = [a for a in sys.argv[1:] if a != "-v"]
if len(args) != 1:
    sys.exit(__doc__)
FLOWRT = os.path.abspath(args[0])
KINDS = {"definition": "definition.schema.json", "events": "events-line.schema.json", "config": "config.schema.json"}

checks = Checks("check_schemas")
ok = checks.check


def rel(path):
    return os.path.relpath(path, ROOT)


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


schemas = {name: read_json(os.path.join(SCHEMAS, name)) for name in KINDS.values()}


def make_validators():
    """One validator per schema, resolving the schemas' references to each other by $id
    (never over the network), with jsonschema 4.18+ (referencing) or older (RefResolver)."""
    try:
        from referencing import Registry
        from referencing.jsonschema import DRAFT202012
        registry = Registry().with_resources(
            [(s["$id"], DRAFT202012.create_resource(s)) for s in schemas.values()])
        return {n: Draft202012Validator(s, registry=registry) for n, s in schemas.items()}
    except ImportError:
        store = {s["$id"]: s for s in schemas.values()}
        return {n: Draft202012Validator(s, resolver=jsonschema.RefResolver.from_schema(s, store=store))
                for n, s in schemas.items()}


def problem(kind, value):
    """None when `value` is valid against the schema of `kind`, else the best error as text."""
    error = jsonschema.exceptions.best_match(validators[KINDS[kind]].iter_errors(value))
    if error is None:
        return None
    where = "/" + "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message[:300]}"


# ---- 1. the schemas themselves, and the names flowrt's sources define ------------------
for name, schema in schemas.items():
    try:
        Draft202012Validator.check_schema(schema)
        ok(True, "")
    except jsonschema.exceptions.SchemaError as e:
        ok(False, f"schemas/{name} is not a valid draft 2020-12 schema: {e.message}")
    ok(schema.get("$schema") == "https://json-schema.org/draft/2020-12/schema", f"schemas/{name}: $schema")
    ok(schema.get("$id", "").endswith("/" + name), f"schemas/{name}: $id should end with /{name}")
validators = make_validators()


def source(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


# Ops: the list in the harness's "unknown op" message.
ops_text = re.search(r"\(ops: ([a-z_, \"\n]+)\)", source("runtime/harness.cpp"))
ops = set(re.findall(r"[a-z_]+", ops_text.group(1))) if ops_text else set()
schema_ops = set(schemas["events-line.schema.json"]["properties"]["op"]["enum"])
ok(ops and ops == schema_ops, f"events ops: runtime/harness.cpp has {sorted(ops)}, the schema {sorted(schema_ops)}")

# Built-in actions and their inputs: compiler/signatures.cpp.
sigs = {}
for m in re.finditer(r'\{ActionKind::k\w+,\s*\{"(\w+)",\s*\{(.*?)\},\s*\{', source("compiler/signatures.cpp"), re.S):
    sigs[m.group(1)] = set(re.findall(r'in\("(\w+)"', m.group(2)))
defs = schemas["definition.schema.json"]["$defs"]
schema_actions = {n[len("inputs_"):]: set(d["properties"]) for n, d in defs.items() if n.startswith("inputs_")}
ok(len(sigs) >= 16 and sigs == schema_actions,
   f"built-in actions: compiler/signatures.cpp has {sigs}, the schema {schema_actions}")
ok(set(defs["action_step"]["properties"]["action"]["anyOf"][0]["enum"]) == set(sigs),
   "action_step's list of built-in actions differs from compiler/signatures.cpp")

# Properties: runtime/properties.cpp's property_names(), in config and in set_property.
names_text = re.search(r"property_names\(\) \{\s*return (.*?);", source("runtime/properties.cpp"), re.S)
props = set(re.findall(r"[a-z_]+", names_text.group(1).replace('"', " "))) - {"return"} if names_text else set()
config = schemas["config.schema.json"]
ok(props and props == set(config["properties"]["properties"]["properties"]),
   f"config properties: runtime/properties.cpp has {sorted(props)}, the schema "
   f"{sorted(config['properties']['properties']['properties'])}")
ok(props == set(schemas["events-line.schema.json"]["$defs"]["op_set_property"]["properties"]["name"]["enum"]),
   "set_property names differ from runtime/properties.cpp")

# Durations are spelt out in each schema that needs them, so that the common checks need
# no other file: the copies must stay the same.
ok(schemas["events-line.schema.json"]["$defs"]["duration"] == defs["duration"],
   "events-line.schema.json's duration differs from definition.schema.json's")
ok(config["$defs"]["positive_duration"] == defs["positive_duration"],
   "config.schema.json's positive_duration differs from definition.schema.json's")

# ---- 2. what flowrt accepts, the schemas accept ------------------------------------
def check_file(kind, path, want_schema_ref):
    try:
        value = read_json(path)
    except ValueError as e:
        return ok(False, f"{rel(path)}: not JSON: {e}")
    p = problem(kind, value)
    ok(p is None, f"{rel(path)}: the schema rejects it: {p}")
    if want_schema_ref and isinstance(value, dict):
        # Every example names its schema by a path an editor resolves from the file. (A file
        # holding an array of definitions has no place for it: editors map such files by name.)
        wanted = os.path.relpath(os.path.join(SCHEMAS, KINDS[kind]), os.path.dirname(path))
        got = value.get("$schema")
        ok(got == wanted, f"{rel(path)}: \"$schema\" should be \"{wanted}\", not {json.dumps(got)}")


def check_events(path):
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError as e:
                ok(False, f"{rel(path)}:{n}: not JSON: {e}")
                continue
            p = problem("events", value)
            ok(p is None, f"{rel(path)}:{n}: the schema rejects it: {p}")


def check_project(folder, want_schema_ref):
    """flows/*.json, config.json and events.jsonl of a project folder; returns how many files."""
    count = 0
    flows = os.path.join(folder, "flows")
    for dirpath, _, files in os.walk(flows):
        for f in sorted(files):
            if f.endswith(".json"):
                check_file("definition", os.path.join(dirpath, f), want_schema_ref)
                count += 1
    if os.path.exists(os.path.join(folder, "config.json")):
        check_file("config", os.path.join(folder, "config.json"), want_schema_ref)
        count += 1
    if os.path.exists(os.path.join(folder, "events.jsonl")):
        check_events(os.path.join(folder, "events.jsonl"))
        count += 1
    return count


def projects(top):
    """Every folder under `top` that holds a flows/ folder."""
    out = []
    for dirpath, dirs, _ in os.walk(top):
        if "flows" in dirs:
            out.append(dirpath)
            dirs.remove("flows")
        dirs.sort()
    return sorted(out)


examples = projects(os.path.join(ROOT, "examples"))
ok(len(examples) >= 4, f"expected the examples under examples/, found {examples}")
example_files = sum(check_project(e, True) for e in examples)

cases_dir = os.path.join(ROOT, "tests", "compiler", "cases")
compiling = 0
for f in sorted(os.listdir(cases_dir)):
    case = read_json(os.path.join(cases_dir, f))
    if case.get("errors") == [] and "definitions" in case:
        compiling += 1
        p = problem("definition", case["definitions"])
        ok(p is None, f"tests/compiler/cases/{f} compiles, but the schema rejects it: {p}")
ok(compiling >= 5, f"expected compiler cases that compile, found {compiling}")


def run(args):
    p = subprocess.run([FLOWRT, *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


valid_dir = os.path.join(ROOT, "tests", "schema", "valid")
fixtures = projects(valid_dir)
for folder in fixtures:
    check_project(folder, True)
    code, out = run(["run", folder, "--format", "json"])
    ok(code == 0, f"{rel(folder)}: flowrt run exited {code}: {out[-600:]}")

conformance = os.path.normpath(os.path.join(ROOT, "..", "shared", "conformance", "scenarios"))
if os.path.isdir(conformance):
    scenarios = projects(conformance)
    for folder in scenarios:
        check_project(folder, False)
    conformance_note = f"{len(scenarios)} conformance scenarios"
else:
    conformance_note = f"no conformance scenarios ({conformance} is not there: skipped)"

# ---- 3. what the schemas reject, flowrt rejects ------------------------------------
invalid_dir = os.path.join(ROOT, "tests", "schema", "invalid")
invalid = sorted(f for f in os.listdir(invalid_dir) if f.endswith(".json"))
with tempfile.TemporaryDirectory(prefix="flowrt-schema-") as tmp:
    os.makedirs(os.path.join(tmp, "flows"))
    empty_events = os.path.join(tmp, "empty.jsonl")
    open(empty_events, "w").close()
    for f in invalid:
        case = read_json(os.path.join(invalid_dir, f))
        kind, value, expect = case.get("kind"), case.get("input"), case.get("flowrt")
        expect = [expect] if isinstance(expect, str) else expect
        if not ok(kind in KINDS and "input" in case and isinstance(expect, list) and expect and case.get("description"),
                  f"tests/schema/invalid/{f}: needs description, kind (definition, events or config), input, and "
                  f"flowrt (what flowrt's error says: a string, or a list of strings it holds all of)"):
            continue
        rejected = problem(kind, value)
        ok(rejected is not None, f"tests/schema/invalid/{f}: the schema accepts it ({case['description']})")
        text = json.dumps(value, indent=1)
        if kind == "definition":
            path = os.path.join(tmp, "flows", "case.json")
            args = ["validate", path]
        elif kind == "events":
            path = os.path.join(tmp, "events.jsonl")
            args = ["run", "--flows", os.path.join(tmp, "flows"), "--events", path]
            text = json.dumps(value) + "\n"
        else:
            path = os.path.join(tmp, "config.json")
            args = ["run", "--flows", os.path.join(tmp, "flows"), "--events", empty_events, "--config", path]
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
        code, out = run(args)
        ok(code == 1 and all(e in out for e in expect),
           f"tests/schema/invalid/{f}: flowrt {args[0]} should exit 1 saying {expect}; it exited {code}: "
           f"{out.strip()[-400:]}")
        if VERBOSE:
            print(f"{f}\n  schema: {rejected}\n  flowrt: {out.strip().splitlines()[0] if out.strip() else ''}")
        os.remove(path)

sys.exit(checks.report(f"{len(examples)} examples ({example_files} files), {compiling} compiling compiler cases, "
                       f"{len(fixtures)} valid fixtures, {len(invalid)} invalid cases, {conformance_note}"))

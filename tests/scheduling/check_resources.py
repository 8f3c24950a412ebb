#!/usr/bin/env python3
"""Every test of a build takes a core when ctest allocates resources, but the ones that wait
on the PostgreSQL test server (tests/scheduling/scheduling.cmake): a test added without
RESOURCE_GROUPS would run beside the busy ones and overload the cores scripts/test.sh
counts.

usage: check_resources.py BUILD_DIR
Reads `ctest --show-only=json-v1` of BUILD_DIR; exits 1 naming each test that breaks the
rule, or when no test waits on the database (the rule would then hold for nothing).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

# The fixture's own tests start and stop the server.
FIXTURE_TESTS = {"postgres_server_start", "postgres_server_stop"}
# The longest of the waiting tests: 80 s of real time, 8 s of CPU.
MUST_WAIT = "ClusterPostgresProcessTest.ThreeNodes_SeededKillsAndFaults_LoseNothingAndWedgeNothing"
# Benchmarks on the database: they wait on it and keep the cores busy too, so they take one.
BUSY_ON_DATABASE_PREFIX = "Stores/BenchStoreTest."


def properties(test):
    return {p["name"]: p["value"] for p in test.get("properties", [])}


def cpus_of(groups):
    """The slots of `cpus` a RESOURCE_GROUPS value asks for in all."""
    total = 0
    for group in groups:
        for req in group.get("requirements", []):
            if req.get(".type") == "cpus":
                total += req.get("slots", 0)
    return total


def list_tests(build_dir):
    """`ctest --show-only=json-v1` of build_dir, run on a copy of its CTestTestfile.cmake
    files: ctest writes Testing/Temporary/ where it runs, and this runs inside the build's
    own ctest, whose log and costs are there."""
    with tempfile.TemporaryDirectory() as copy:
        for root, dirs, files in os.walk(build_dir):
            dirs[:] = [d for d in dirs if d != "Testing"]
            if "CTestTestfile.cmake" in files:
                into = os.path.join(copy, os.path.relpath(root, build_dir))
                os.makedirs(into, exist_ok=True)
                shutil.copy(os.path.join(root, "CTestTestfile.cmake"), into)
        return subprocess.run(["ctest", "--show-only=json-v1"], cwd=copy, check=True,
                              capture_output=True, text=True).stdout


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = list_tests(sys.argv[1])
    tests = json.loads(out)["tests"]
    problems = []
    waiting = []
    for test in tests:
        name = test["name"]
        props = properties(test)
        cpus = cpus_of(props.get("RESOURCE_GROUPS") or [])
        on_database = "postgres" in (props.get("FIXTURES_REQUIRED") or [])
        labels = props.get("LABELS") or []
        if name in FIXTURE_TESTS:
            continue
        if on_database and name.startswith(BUSY_ON_DATABASE_PREFIX):
            if cpus != 1:
                problems.append(f"{name}: a benchmark on the PostgreSQL test server, takes {cpus} of `cpus`, not 1")
        elif on_database and "browser" not in labels:
            if cpus:
                problems.append(f"{name}: waits on the PostgreSQL test server, yet takes {cpus} of `cpus`")
            waiting.append(name)
        elif cpus < 1:
            problems.append(f"{name}: takes no slot of `cpus` (RESOURCE_GROUPS cpus:1; tests/scheduling/scheduling.cmake)")
        elif cpus > 2:
            problems.append(f"{name}: takes {cpus} slots of `cpus`; scripts/test.sh gives at least 2")
    if MUST_WAIT not in waiting and any(t["name"] == MUST_WAIT for t in tests):
        problems.append(f"{MUST_WAIT}: should take no slot of `cpus`")
    if not any(t["name"].startswith(BUSY_ON_DATABASE_PREFIX) and "/Postgres" in t["name"] for t in tests):
        problems.append(f"no {BUSY_ON_DATABASE_PREFIX}*/Postgres test: the benchmark's rule checks nothing")
    if not waiting:
        problems.append("no test waits on the PostgreSQL test server: the rule checks nothing")
    for p in problems[:20]:
        print(p, file=sys.stderr)
    if len(problems) > 20:
        print(f"... and {len(problems) - 20} more", file=sys.stderr)
    print(f"{len(tests)} tests: {len(waiting)} wait on the database, the others take a core"
          + ("" if not problems else f"; {len(problems)} problems"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

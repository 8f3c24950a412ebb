#!/usr/bin/env python3
"""Every test a document names exists.

docs/*.md and README.md back their claims with the names of the tests that would fail if
the claim broke (`SuiteTest.TestName`, also with a parameter prefix or suffix,
`Stores/DurableEngineStoresTest.X/Postgres`, or a wildcard, `PostgresStoreTest.*`). This
reads every such name in backticks and checks that a test of that suite and name is
defined under tests/ (TEST, TEST_F, TEST_P, TYPED_TEST) or fuzz/. A name that no longer
exists (a test renamed or removed) is a claim with nothing behind it.

  tests/docs/check_test_names.py [ROOT]

Prints each failure and closes with 'N passed, M failed'; exits 1 if any failed."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks  # noqa: E402  (tests/support/checks.py)

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A test's name as the documents write it: Suite.Name where Suite ends in "Test", perhaps
# with "Prefix/" before and "/Param" after, Name perhaps "*" or ending in "*".
NAMED = re.compile(r"(?:[A-Za-z]+/)?([A-Z]\w*Test)(?:/\w+)?\.(\*|\w+\*?)(?:/[\w*]+)?")
DEFINED = re.compile(r"\b(?:TEST|TEST_F|TEST_P|TYPED_TEST|TYPED_TEST_P)\(\s*(\w+)\s*,\s*(\w+)\s*\)")


def defined_tests():
    tests = set()
    for top in ("tests", "fuzz", "bench", "examples"):
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith((".cpp", ".h", ".cc")):
                    with open(os.path.join(folder, f), encoding="utf-8", errors="replace") as text:
                        tests.update(DEFINED.findall(text.read()))
    return tests


def documents():
    docs = [os.path.join(ROOT, "README.md")]
    docs += sorted(os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    return [d for d in docs if os.path.exists(d)]


def main():
    checks = Checks("check_test_names")
    tests = defined_tests()
    checks.check(len(tests) > 100, f"found only {len(tests)} tests under tests/: the pattern no longer matches them")
    suites = {s for s, _ in tests}
    named = 0
    for doc in documents():
        rel = os.path.relpath(doc, ROOT)
        with open(doc, encoding="utf-8") as f:
            text = f.read()
        for span in re.findall(r"`([^`\n]+)`", text):
            for m in NAMED.finditer(span):
                suite, name = m.group(1), m.group(2)
                named += 1
                if name == "*":
                    checks.check(suite in suites, f"{rel}: `{m.group(0)}`: no test suite {suite}")
                elif name.endswith("*"):
                    checks.check(any(s == suite and n.startswith(name[:-1]) for s, n in tests),
                                 f"{rel}: `{m.group(0)}`: no test of {suite} starts with {name[:-1]}")
                else:
                    checks.check((suite, name) in tests, f"{rel}: `{m.group(0)}`: no test {suite}.{name} under tests/")
    return checks.report(f"{named} test names in {len(documents())} documents, {len(tests)} tests defined")


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The README's "Testing your flows from C++" shows examples/embedding as it is: every line
of its cmake block is a line of examples/embedding/CMakeLists.txt and every line of its cpp
block a line of examples/embedding/expense_test.cpp (leading spaces aside), so the README
can only show code that builds and passes (scripts/test-embedding.sh runs it).

usage: check_embedding_snippets.py REPOSITORY_ROOT
"""
import os
import re
import sys

SECTION = "## Testing your flows from C++"
FILES = {"cmake": "examples/embedding/CMakeLists.txt", "cpp": "examples/embedding/expense_test.cpp"}


def main():
    root = sys.argv[1]
    readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    if SECTION not in readme:
        print(f"README.md has no section '{SECTION}'")
        return 1
    section = readme.split(SECTION, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(\w+)\n(.*?)```", section, re.S)
    seen = set()
    problems = []
    for lang, body in blocks:
        if lang not in FILES:
            continue
        seen.add(lang)
        lines = {line.strip() for line in open(os.path.join(root, FILES[lang]), encoding="utf-8")}
        for line in body.splitlines():
            if line.strip() and line.strip() not in lines:
                problems.append(f"{FILES[lang]} has no line {line.strip()!r}")
    for lang in FILES:
        if lang not in seen:
            problems.append(f"the section has no {lang} block")
    for p in problems:
        print(p)
    if not problems:
        print(f"README's {', '.join(sorted(seen))} blocks are lines of examples/embedding")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Fails when docs/run_flow.md names a function that no longer exists in its file.

Every `path: Function` in backticks (path relative to the repository) must name a file that
exists and a function defined in it: `Function(` preceded by a space, `::`, `*` or `&` at the
start of a definition line (a return type, or `Class::`). Prints what is missing; exit 1 if any.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def main():
    doc = open(os.path.join(ROOT, "docs", "run_flow.md"), encoding="utf-8").read()
    refs = re.findall(r"`((?:src|tests)/[\w/.-]+\.(?:cc|h)): (\w+)`", doc)
    if not refs:
        print("check_run_flow: no `file: Function` references found")
        return 1
    missing = 0
    for path, fn in refs:
        full = os.path.join(ROOT, path)
        if not os.path.exists(full):
            print(f"docs/run_flow.md: {path} does not exist (named for {fn})")
            missing += 1
            continue
        text = open(full, encoding="utf-8").read()
        # A definition: at the start of a line, a return type or nothing, then the name
        # (possibly Class::Name), then '('; or a member defined inside a class body.
        pattern = re.compile(r"^[ \t]*(?:[\w:<>,*& \[\]]+[ \t*&])?(?:\w+::)*" + re.escape(fn) +
                             r"\((?:[^;]*$|.*\)[\w\s]*\{)", re.M)
        if not pattern.search(text):
            print(f"docs/run_flow.md: {path} has no function {fn}")
            missing += 1
    if missing:
        print(f"check_run_flow: {missing} of {len(refs)} reference(s) are stale")
        return 1
    print(f"check_run_flow: all {len(refs)} references exist")
    return 0


if __name__ == "__main__":
    sys.exit(main())

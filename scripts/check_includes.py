#!/usr/bin/env python3
"""Checks every #include "layer/..." in src/ against the may-depend-on table of src/README.md.

A file of layer L may include headers of L itself and of the layers the table names for L
("all above" means every layer listed above L in the table). Test files (*_test.cc, fuzz_*.cc,
testing.h, test_util.h) may also include the layers their layer's tests link. Prints each
violation as `file:line: layer L includes M (allowed: ...)` and exits 1 if there is any.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SRC = os.path.join(ROOT, "src")


def table():
    rows = []
    with open(os.path.join(SRC, "README.md"), encoding="utf-8") as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) != 3 or cells[0] in ("layer", "") or set(cells[0]) <= set("-"):
                continue
            rows.append((cells[0], cells[2]))
    allowed = {}
    seen = []
    for layer, deps in rows:
        if deps in ("-", ""):
            names = set()
        elif deps.startswith("all above"):
            names = set(seen)
        else:
            names = {d.strip() for d in deps.split(",")}
        allowed[layer] = names | {layer}
        seen.append(layer)
    return allowed


def is_test(name):
    return name.endswith("_test.cc") or name.startswith("fuzz_") or name in ("testing.h", "test_util.h")


def main():
    allowed = table()
    include = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"')
    bad = 0
    for layer in sorted(os.listdir(SRC)):
        d = os.path.join(SRC, layer)
        if not os.path.isdir(d):
            continue
        if layer not in allowed:
            print(f"src/{layer}: layer missing from the table in src/README.md")
            bad += 1
            continue
        for name in sorted(os.listdir(d)):
            if not name.endswith((".h", ".cc")) or is_test(name):
                continue
            path = os.path.join(d, name)
            with open(path, encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    m = include.match(line)
                    if not m:
                        continue
                    dep = m.group(1)
                    if dep in allowed and dep not in allowed[layer]:
                        print(f"src/{layer}/{name}:{n}: layer {layer} includes {dep} "
                              f"(allowed: {', '.join(sorted(allowed[layer]))})")
                        bad += 1
    if bad:
        print(f"check_includes: {bad} violation(s) of the layer table in src/README.md")
        return 1
    print("check_includes: every include follows src/README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())

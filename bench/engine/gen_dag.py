#!/usr/bin/env python3
"""Writes the same DAG as an AIWorkload (for seedctl run) and as a build.ninja (for ninja).

usage: gen_dag.py STEPS independent|tree|chain OUT_DIR
  independent: STEPS steps with no dependencies
  tree:        a build tree: step i needs its children 2i+1 and 2i+2 (leaves first)
  chain:       step i needs step i-1
Every step runs `true`.
"""
import os
import sys


def deps(i, n, dag):
    if dag == "tree":
        return [c for c in (2 * i + 1, 2 * i + 2) if c < n]
    if dag == "chain":
        return [i - 1] if i > 0 else []
    return []


def main():
    n, dag, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "workload.yaml"), "w") as f:
        f.write("apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n"
                "  name: bench-%s\nspec:\n  pipeline:\n" % dag)
        for i in range(n):
            d = deps(i, n, dag)
            f.write("    - {name: s%d, command: ['true']%s}\n" %
                    (i, (", dependsOn: [%s]" % ", ".join("s%d" % c for c in d)) if d else ""))
    with open(os.path.join(out, "build.ninja"), "w") as f:
        f.write("rule run\n  command = true\n  description = $out\n")
        for i in range(n):
            d = deps(i, n, dag)
            f.write("build s%d: run%s\n" % (i, (" || " + " ".join("s%d" % c for c in d)) if d else ""))
        f.write("default %s\n" % " ".join("s%d" % i for i in range(n)))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""The docs test: runs the command blocks the documentation marks and compares their output's
shape with the output the documentation shows, so the docs cannot drift from the software.

A runnable block is a ```sh block right after a `<!-- docs-test -->` line (`<!-- docs-test
exit=N -->` when the block's last command must exit N; 0 by default). The fenced block right
after it (blank lines between allowed), when it has no language or `text`, is the expected
output: stdout and stderr together, compared line by line after normalisation (runs of spaces
are one space; ids, digests, times, durations and sizes are placeholders; the temporary home
directory reads `~`). A line `...` stands for any number of lines; `...` inside a line for any
text. Without an output block only the exit code is checked.

Every document runs in a fresh HOME (so ~/.local/state/rsl and ~/.config are empty) with the
build's bin directory first on PATH, in the repository root, block after block: the
environment a block exports is seen by the next ones; whatever a block leaves running (a
controller started with `&`) is stopped when the document ends.

Also checked: no document cites SPEC.md or DESIGN.md (they are not in the repository).

Usage: run_docs_test.py --repo DIR --bin DIR FILE.md...   (exit 0 when every block matched)
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

MARKER = re.compile(r"^<!--\s*docs-test(?P<args>[^>]*)-->\s*$")
FENCE = re.compile(r"^```(?P<lang>[A-Za-z0-9_-]*)\s*$")
BLOCK_TIMEOUT_S = 60

# Volatile parts of an output line, replaced by placeholders in both the expected and the actual
# line (order matters: longer patterns first).
PLACEHOLDERS = [
    (re.compile(r"wl-\d{8}-[0-9a-f]{8}"), "wl-<id>"),
    (re.compile(r"run-\d{8}-[0-9a-f]{8}"), "run-<id>"),
    (re.compile(r"sha256:[0-9a-f]{6,64}"), "sha256:<hex>"),
    (re.compile(r"rsl_[0-9a-f]{48}"), "rsl_<token>"),
    (re.compile(r"\b\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?Z?"), "<time>"),
    (re.compile(r"\b\d\d:\d\d:\d\d\b"), "<clock>"),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:<port>"),
    (re.compile(r"\b\d+(\.\d+)?(B|KB|MB|GB|Ki|Mi|Gi)\b"), "<size>"),
    (re.compile(r"\b(\d+h)?(\d+m)?\d+(\.\d+)?(ms|s)\b"), "<duration>"),
    (re.compile(r"\b\d+h\d+m\b|\b\d+m\b"), "<duration>"),
    (re.compile(r"-[0-9a-f]{8}\b"), "-<hex>"),  # generated token subjects
]


def normalise(line, home):
    line = line.replace(home, "~")
    for pattern, placeholder in PLACEHOLDERS:
        line = pattern.sub(placeholder, line)
    return " ".join(line.split())


def blocks_of(path):
    """Yields (line number, exit code, script, expected lines or None) for each marked block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0

    def fenced(start):  # the fenced block at `start` -> (lang, body lines, index after it)
        m = FENCE.match(lines[start])
        lang = m.group("lang")
        end = start + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        if end >= len(lines):
            raise SystemExit(f"{path}:{start + 1}: unterminated code block")
        return lang, lines[start + 1:end], end + 1

    while i < len(lines):
        m = MARKER.match(lines[i])
        if not m:
            i += 1
            continue
        marker_line = i + 1
        args = dict(a.split("=", 1) for a in m.group("args").split() if "=" in a)
        j = i + 1
        if j >= len(lines) or not FENCE.match(lines[j]) or FENCE.match(lines[j]).group("lang") != "sh":
            raise SystemExit(f"{path}:{marker_line}: docs-test marker not followed by a ```sh block")
        _, script, j = fenced(j)
        k = j
        while k < len(lines) and not lines[k].strip():
            k += 1
        expected = None
        if k < len(lines) and FENCE.match(lines[k]) and FENCE.match(lines[k]).group("lang") in ("", "text"):
            _, expected, k = fenced(k)
            j = k
        yield marker_line, int(args.get("exit", "0")), "\n".join(script), expected
        i = j


def matches(expected, actual, home):
    """True when the expected lines (with `...` gaps) match the actual lines in order."""
    exp = [normalise(l, home) for l in expected]
    act = [normalise(l, home) for l in actual]
    while act and not act[-1]:
        act.pop()
    while exp and not exp[-1]:
        exp.pop()
    segments, current = [], []
    for line in exp:
        if line == "...":
            segments.append(current)
            current = []
        else:
            current.append(line)
    segments.append(current)
    regexes = [[re.compile(".*".join(re.escape(p) for p in line.split("...")) + r"\Z")
                for line in seg] for seg in segments]

    def seg_at(seg, pos):
        return pos + len(seg) <= len(act) and all(r.match(act[pos + n]) for n, r in enumerate(seg))

    pos = 0
    for n, seg in enumerate(regexes):
        first, last = n == 0, n == len(regexes) - 1
        if first:
            if not seg_at(seg, 0):
                return False
            pos = len(seg)
            if last and pos != len(act):
                return False
            continue
        if last:
            start = len(act) - len(seg)
            if start < pos or not seg_at(seg, start):
                return False
            return True
        while pos <= len(act) and not seg_at(seg, pos):
            pos += 1
        if pos > len(act):
            return False
        pos += len(seg)
    return True


def run_document(repo, bin_dir, doc):
    failures = []
    tmp = tempfile.mkdtemp(prefix="rsl-docs-")
    os.chmod(tmp, 0o755)  # steps run as other users and must reach their files
    home = os.path.join(tmp, "home")
    os.makedirs(home)
    os.chmod(home, 0o755)
    env_file = os.path.join(tmp, "env.sh")
    env = {"PATH": bin_dir + ":/usr/local/bin:/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8",
           "TZ": "UTC", "USER": os.environ.get("USER", "root")}
    open(env_file, "w").close()
    groups = []
    try:
        for line, want_exit, script, expected in blocks_of(os.path.join(repo, doc)):
            out_path = os.path.join(tmp, f"out-{line}.txt")
            wrapped = (f"source {env_file}\n{script}\n__rc=$?\n"
                       f"export -p | grep -v ' PWD=\\| OLDPWD=\\| SHLVL=' > {env_file}\nexit $__rc\n")
            started = time.monotonic()
            with open(out_path, "w") as out:
                proc = subprocess.Popen(["/bin/bash", "-c", wrapped], cwd=repo, env=env, stdout=out,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True)
                groups.append(proc.pid)
                try:
                    rc = proc.wait(timeout=BLOCK_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    rc = "timeout"
            took = time.monotonic() - started
            actual = open(out_path, encoding="utf-8", errors="replace").read().split("\n")
            where = f"{doc}:{line}"
            ok = rc == want_exit and (expected is None or matches(expected, actual, home))
            print(f"{'ok  ' if ok else 'FAIL'} {where} ({took:.1f} s)")
            if not ok:
                failures.append(where)
                print(f"  exit: {rc} (documented {want_exit})")
                print("  script:\n" + "".join(f"    {l}\n" for l in script.split("\n")))
                if expected is not None:
                    print("  documented output:\n" + "".join(f"    {l}\n" for l in expected))
                print("  actual output:\n" + "".join(f"    {l}\n" for l in actual))
    finally:
        for pgid in groups:
            try:
                os.killpg(pgid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        time.sleep(0.2)
        shutil.rmtree(tmp, ignore_errors=True)
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("docs", nargs="+")
    a = ap.parse_args()
    failures = []
    cites = re.compile(r"\b(SPEC|DESIGN)\.md\b")
    for name in sorted(set(a.docs) | {"README.md"} | {os.path.join("docs", f) for f in
                                                      os.listdir(os.path.join(a.repo, "docs"))
                                                      if f.endswith(".md")}):
        for n, text in enumerate(open(os.path.join(a.repo, name), encoding="utf-8"), 1):
            if cites.search(text):
                failures.append(f"{name}:{n}")
                print(f"FAIL {name}:{n}: cites a document that is not in the repository: {text.strip()}")
    started = time.monotonic()
    for doc in a.docs:
        failures += run_document(a.repo, a.bin, doc)
    print(f"{len(failures)} failure(s); blocks ran in {time.monotonic() - started:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""scripts/demo_check_images.py on made-up runs (label demo): it passes a run whose steps all
started in runc containers from the registry's digests with the image's marker in their logs,
and fails one where a step ran on the host, from another digest, or without the marker.
The real thing beside it: e2e_demo_image_test runs the check on a real demo run."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "..", "..", "scripts", "demo_check_images.py")
REG = "127.0.0.1:5000"
D1 = "sha256:" + "1" * 64
STEPS = ["ingest", "preprocess", "train", "validate"]
IMAGES = {"ingest": "volc/ingest:v1.0", "preprocess": "volc/preprocess-fraud:v1.1",
          "train": "volc/train-fraud-pytorch:v2.1", "validate": "volc/validate-fraud:v1.0"}


def started(step, digest=D1, runc=True):
    ref = f"{REG}/{IMAGES[step].rsplit(':', 1)[0]}@{digest}"
    msg = (f"container rsl-run-1_{step}_1 (runc) from {ref}, cached bundle /x, read-only rootfs"
           if runc else f"pid 4242 on the host ({ref})")
    return {"step": step, "reason": "Started", "message": msg}


def run(events, logs, phases=None, registry_digest=D1):
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(d + "/registry")
        with open(d + "/registry/digests", "w") as f:
            for s in STEPS:
                f.write(f"{REG}/{IMAGES[s]} {registry_digest}\n")
        with open(d + "/wl.yaml", "w") as f:
            f.write("  pipeline:\n    steps:\n")
            for s in STEPS:
                f.write(f'      - name: "{s}"\n        image: "{REG}/{IMAGES[s]}"\n')
        json.dump({"items": events}, open(d + "/events.json", "w"))
        phases = phases or {}
        json.dump({"status": {"steps": [{"name": s, "phase": phases.get(s, "SUCCEEDED")}
                                        for s in STEPS]}}, open(d + "/status.json", "w"))
        for s, text in logs.items():
            open(f"{d}/log-{s}.txt", "w").write(text)
        r = subprocess.run([sys.executable, CHECK, d, d + "/wl.yaml", "abc123"],
                           capture_output=True, text=True)
        return r.returncode, r.stdout + r.stderr


def marker(step):
    return f"rsl-demo-image abc123 (Debian bookworm); container rsl-run-1_{step}_1\nepoch 1\n"


failures = []


def expect(name, want_rc, got, must=None):
    rc, out = got
    ok = rc == want_rc and (must is None or must in out)
    print(f"{'ok' if ok else 'FAIL'}: {name} (exit {rc})")
    if not ok:
        failures.append(name)
        print(out)


good_events = [started(s) for s in STEPS]
good_logs = {s: marker(s) for s in STEPS}
expect("every step in its image", 0, run(good_events, good_logs))
expect("a step on the host", 1,
       run([started(s, runc=(s != "train")) for s in STEPS], good_logs), "train       NOT IN ITS IMAGE")
expect("a step from another digest", 1,
       run([started(s, digest="sha256:" + "2" * 64 if s == "ingest" else D1) for s in STEPS],
           good_logs), "ingest      NOT IN ITS IMAGE")
expect("a log without the image's marker", 1,
       run(good_events, {**good_logs, "validate": "epoch 1\n"}), "validate    NOT IN ITS IMAGE")
expect("another image's marker", 1,
       run(good_events, {**good_logs, "preprocess": marker("preprocess").replace("abc123", "zzz")}),
       "preprocess  NOT IN ITS IMAGE")
expect("a step with no log and no event", 1,
       run([started(s) for s in STEPS if s != "train"], {s: marker(s) for s in STEPS if s != "train"}),
       "train       NOT IN ITS IMAGE")
expect("a skipped step is not checked", 0,
       run([started(s) for s in STEPS if s != "validate"],
           {s: marker(s) for s in STEPS if s != "validate"}, phases={"validate": "SKIPPED"}),
       "validate    SKIPPED")
sys.exit(1 if failures else 0)

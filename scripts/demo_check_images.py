#!/usr/bin/env python3
"""scripts/demo.sh's check that every step of the fraud example that ran, ran in its image.

    demo_check_images.py DEMO_DIR WORKLOAD IMAGE_ID

DEMO_DIR holds what demo.sh saved after the run: registry/digests ("REF DIGEST" per line, from
`skopeo inspect`), events.json (`seedctl workload events -o json`), status.json (`seedctl
workload status -o json`) and log-STEP.txt (`seedctl workload logs --step STEP`). WORKLOAD is
the submitted copy (its steps' `image:`), IMAGE_ID the demo image's id (demo_images.sh).

A step passes when (1) one of its Started events names a runc container started from the
step's image at the digest the registry serves for that tag, and (2) its log holds the line
the image's `python` prints from the image's own /etc/rsl-demo-image with IMAGE_ID and the
container. A SKIPPED step ran nothing and is reported as such. Exit 0 when every step that ran
passes, else 1 (each step's verdict on stdout).
"""
import json, os, re, sys
demo, workload, image_id = sys.argv[1:4]
digests = dict(l.split() for l in open(demo + "/registry/digests") if l.strip())
images = dict(re.findall(r'- name: "([^"]+)"\n\s+image: "([^"]+)"', open(workload).read()))
events = json.load(open(demo + "/events.json")).get("items", [])
status = json.load(open(demo + "/status.json"))
steps = status.get("status", status).get("steps", [])
phases = {s.get("name"): s.get("phase") for s in steps} if isinstance(steps, list) else \
         {k: v.get("phase") for k, v in steps.items()}
# Shown, not checked (the run was admitted): admission resolved each image to its digest and
# checked the model's pins against the packages read from the image's layers.
for e in events:
    if e.get("reason") == "Admitted":
        print("  admission: " + e.get("message", ""))
bad = 0
for step, image in images.items():
    if phases.get(step) == "SKIPPED":
        print(f"  {step:<11} SKIPPED (its `when` was false): nothing ran")
        continue
    started = [e["message"] for e in events
               if e.get("step") == step and e.get("reason") == "Started"]
    digest = digests.get(image, "(not in the registry)")
    want = f"(runc) from {image.rsplit(':', 1)[0]}@{digest}"
    ok_event = any(m.startswith("container rsl-") and want in m for m in started)
    log_path = f"{demo}/log-{step}.txt"
    log = open(log_path).read() if os.path.exists(log_path) else ""
    ok_log = f"rsl-demo-image {image_id} " in log and "; container rsl-" in log
    print(f"  {step:<11} {'ok' if ok_event and ok_log else 'NOT IN ITS IMAGE'}: "
          f"{image}@{digest[:19]}...; Started: {started[-1] if started else '(none)'}")
    line = next((l for l in log.splitlines() if l.startswith("rsl-demo-image ")), "(no marker line)")
    print(f"  {'':<11} the step's log: {line}")
    bad += not (ok_event and ok_log)
sys.exit(1 if bad else 0)

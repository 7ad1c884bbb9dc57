"""What every step of the fraud example shares: RSL's step environment (SPEC.md "pipeline").

RSL runs each step with RSL_INPUT (the workload's data.input location), RSL_OUTPUT (the
step's own staging directory), RSL_INPUT_<DEP> (each dependency's output), RSL_METRICS_FILE
(a JSON object that becomes output.<step>.metrics) and RSL_PROGRESS_FILE (`done/total`).
Outside RSL the same variables can be set by hand, which is how tests/e2e runs the steps
standalone.
"""

import json
import os
import sys


def fail(message):
    """Ends the step with a one-line reason on stderr (it lands in the step's log)."""
    sys.stderr.write("%s: error: %s\n" % (os.path.basename(sys.argv[0]), message))
    sys.exit(1)


def env_path(name):
    """A location from the environment as a local path; file:// URIs are accepted."""
    value = os.environ.get(name, "")
    if not value:
        fail("%s is not set (this program runs as an RSL step)" % name)
    if value.startswith("file://"):
        value = value[len("file://"):]
    elif "://" in value:
        fail("%s=%s: only local paths and file:// URIs can be read by this step; register a "
             "`local` datasource for that authority so RSL hands the step a local path"
             % (name, value))
    return value


def dependency_output(step):
    name = "RSL_INPUT_" + "".join(c if c.isalnum() else "_" for c in step.upper())
    return env_path(name)


def output_dir():
    path = env_path("RSL_OUTPUT")
    os.makedirs(path, exist_ok=True)
    return path


def write_metrics(metrics):
    path = os.environ.get("RSL_METRICS_FILE")
    if path:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(metrics, f, sort_keys=True)
        os.replace(tmp, path)


def progress(done, total):
    """Writes `done/total` (atomically, so RSL never reads half a line)."""
    path = os.environ.get("RSL_PROGRESS_FILE")
    if path:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d/%d\n" % (done, total))
        os.replace(tmp, path)


def log(message):
    print(message, flush=True)

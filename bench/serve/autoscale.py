#!/usr/bin/python3
"""Drives a serving workload and measures its autoscaling and a rolling update.

Used by bench/serve_autoscale.sh (MODE=bench) and scripts/demo_serving.sh (MODE=demo).
Runs examples/recommend-serving (EXAMPLE_DIR filled in, the scale-down delay from the
environment): under `seedctl run` (demo: its event lines as they come), or, when RSL_CONTROLLER
is given, under a private rsl-controller (bench: events read from its API, timed by their own
timestamps), where a second version is submitted under load to roll the service. Finds the
endpoint, sends POST /predict load in phases, and prints what happened. Loopback only, bounded.

  autoscale.py SEEDCTL STATE_DIR MODE [RSL_CONTROLLER]
"""
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.normpath(os.path.join(HERE, "..", "..", "examples", "recommend-serving"))
READY_TIMEOUT_S = 120


class Events:
    """`seedctl run`'s event lines, with the time each was read."""

    def __init__(self, proc):
        self.lines = []  # (monotonic time, reason, message)
        self.raw = []  # every line, for errors
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.thread.start()

    def _read(self, proc):
        for raw in proc.stdout:
            line = raw.rstrip("\n")
            self.raw.append(line)
            parts = re.split(r"\s{2,}", line.strip(), maxsplit=3)
            if len(parts) >= 3 and re.match(r"\d\d:\d\d:\d\d$", parts[0]):
                with self.lock:
                    self.lines.append((time.monotonic(), parts[2], parts[3] if len(parts) > 3 else ""))
                if MODE == "demo" or parts[2] in ("ScaledUp", "ScaledDown", "ServingNotReady", "Failed"):
                    print("  event:", line.strip(), flush=True)

    def find(self, reason, since=0.0):
        with self.lock:
            return [e for e in self.lines if e[1] == reason and e[0] >= since]

    def wait(self, reason, timeout, since=0.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.find(reason, since)
            if found:
                return found[0]
            time.sleep(0.05)
        return None


class ControllerEvents:
    """The events of the workload versions in `ids`, polled from rsl-controller's API; each
    with the monotonic time of its own timestamp (so a decision is timed when it was made, not
    when it was read)."""

    def __init__(self, server, token):
        self.server, self.token = server, token
        self.ids = []
        self.seen = {}  # id -> count of events read
        self.lines = []
        self.raw = []
        self.lock = threading.Lock()
        self.stop = False
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def watch(self, workload_id):
        with self.lock:
            self.ids.append(workload_id)

    def _get(self, path):
        req = urllib.request.Request(self.server + path,
                                     headers={"Authorization": "Bearer " + self.token})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def _poll(self):
        while not self.stop:
            with self.lock:
                ids = list(self.ids)
            for wid in ids:
                try:
                    items = self._get("/api/v1/workloads/%s/events" % wid)["items"]
                except (urllib.error.URLError, OSError, ValueError, KeyError):
                    continue
                offset = time.monotonic() - time.time()
                with self.lock:
                    for e in items[self.seen.get(wid, 0):]:
                        when = e["timeMs"] / 1000.0 + offset
                        self.lines.append((when, e["reason"], e["message"], wid))
                        self.raw.append("%s %s %s" % (wid, e["reason"], e["message"]))
                        if e["reason"] in ("ScaledUp", "ScaledDown", "ServingNotReady", "Failed",
                                           "Superseded"):
                            print("  event:", wid, e["reason"], e["message"], flush=True)
                    self.seen[wid] = len(items)
            time.sleep(0.1)

    def phase(self, wid):
        try:
            return self._get("/api/v1/workloads/%s" % wid)["status"]["phase"]
        except (urllib.error.URLError, OSError, ValueError, KeyError):
            return ""

    def find(self, reason, since=0.0, wid=None):
        with self.lock:
            return [e[:3] for e in self.lines
                    if e[1] == reason and e[0] >= since and (wid is None or e[3] == wid)]

    def wait(self, reason, timeout, since=0.0, wid=None):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.find(reason, since, wid)
            if found:
                return found[0]
            time.sleep(0.05)
        return None


class Controller:
    """A private rsl-controller on a free loopback port, and an editor token for it."""

    def __init__(self, controller, seedctl, state_dir):
        self.seedctl, self.state_dir = seedctl, state_dir
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.server = "http://127.0.0.1:%d" % port
        self.log = open(os.path.join(os.path.dirname(state_dir), "controller.log"), "w")
        self.proc = subprocess.Popen([controller, "--listen", "127.0.0.1:%d" % port,
                                      "--state-dir", state_dir], stdout=self.log,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(self.server + "/healthz", timeout=1).read()
                break
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        out = subprocess.run([seedctl, "token", "create", "--state-dir", state_dir, "--namespace",
                              "default", "--role", "editor"], capture_output=True, text=True,
                             check=True).stdout
        self.token = out.strip().splitlines()[-1]

    def submit(self, path):
        env = dict(os.environ, SEEDCTL_SERVER=self.server, SEEDCTL_TOKEN=self.token)
        out = subprocess.run([self.seedctl, "workload", "submit", "-f", path], env=env,
                             capture_output=True, text=True)
        m = re.search(r"ID: (wl-\S+)", out.stdout)
        if not m:
            raise RuntimeError("submit failed: " + out.stdout + out.stderr)
        return m.group(1)

    def cancel(self, wid):
        env = dict(os.environ, SEEDCTL_SERVER=self.server, SEEDCTL_TOKEN=self.token)
        subprocess.run([self.seedctl, "workload", "cancel", "--id", wid], env=env,
                       capture_output=True, text=True)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


class Load:
    """`clients` threads posting /predict; `pause` seconds between a client's requests."""

    def __init__(self, url, clients, pause=0.0, jitter=0.0):
        self.url, self.pause, self.jitter = url, pause, jitter
        self.ok = self.failed = 0
        self.replicas = {}  # replica index -> last time it answered
        self.stop = False
        self.lock = threading.Lock()
        rng = random.Random(7)
        self.body = json.dumps({"user_features": [[rng.random() for _ in range(128)]],
                                "item_features": [[rng.random() for _ in range(64)]]}).encode()
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(clients)]
        for t in self.threads:
            t.start()

    def _run(self):
        while not self.stop:
            req = urllib.request.Request(self.url + "/predict", data=self.body,
                                         headers={"Content-Type": "application/json"})
            good = False
            replica = None
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    answer = json.loads(r.read())
                    good = r.status == 200 and 0.0 <= answer["prediction"][0][0] <= 1.0
                    replica = answer.get("replica")
            except (urllib.error.URLError, OSError, ValueError, KeyError):
                good = False
            with self.lock:
                if good:
                    self.ok += 1
                    if replica is not None:
                        self.replicas[replica] = time.monotonic()
                else:
                    self.failed += 1
            if self.pause:
                time.sleep(max(0.0, self.pause + random.uniform(-self.jitter, self.jitter)))

    def serving_replicas(self, window=1.5):
        now = time.monotonic()
        with self.lock:
            return sum(1 for t in self.replicas.values() if now - t <= window)

    def finish(self):
        self.stop = True
        for t in self.threads:
            t.join()
        return self.ok, self.failed


def main():
    global MODE
    seedctl, state_dir, MODE = sys.argv[1], sys.argv[2], sys.argv[3]
    controller_bin = sys.argv[4] if len(sys.argv) > 4 else ""
    delay = os.environ.get("SCALE_DOWN_DELAY", "10s")
    with open(os.path.join(EXAMPLE, "workload.yaml")) as f:
        text = f.read().replace("EXAMPLE_DIR", EXAMPLE)
    text = re.sub(r'scaleDownDelay: "[^"]*"', 'scaleDownDelay: "%s"' % delay, text)
    os.makedirs(state_dir, exist_ok=True)
    workload = os.path.join(state_dir, "workload.yaml")
    with open(workload, "w") as f:
        f.write(text)
    proc = controller = None
    versions = []
    if controller_bin:
        controller = Controller(controller_bin, seedctl, os.path.join(state_dir, "state"))
        events = ControllerEvents(controller.server, controller.token)
        versions.append(controller.submit(workload))
        events.watch(versions[0])
    else:
        proc = subprocess.Popen([seedctl, "run", "--state-dir", os.path.join(state_dir, "state"),
                                 "-f", workload], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, bufsize=1)
        events = Events(proc)
    failed_total = 0
    try:
        running = events.wait("ServingReady", READY_TIMEOUT_S)
        if not running:
            print("the service never became ready; seedctl run said:\n" +
                  "\n".join(events.raw[-30:]), file=sys.stderr)
            return 1
        endpoint = re.search(r"(http://[0-9.]+:\d+)", running[2]).group(1)
        print("endpoint", endpoint, flush=True)
        one = Load(endpoint, 1)
        time.sleep(0.5)
        ok, failed = one.finish()
        print("one prediction round trip: %d ok, %d failed" % (ok, failed), flush=True)

        # Low: about 15 % of one core.
        low = Load(endpoint, 1, pause=0.06)
        time.sleep(6)
        ok, failed = low.finish()
        ups_low = len(events.find("ScaledUp"))
        print("phase low: %d ok, %d failed, %d scale-ups" % (ok, failed, ups_low), flush=True)
        failed_total += failed

        # High: as fast as 6 clients go.
        t_high = time.monotonic()
        high = Load(endpoint, 6)
        up = events.wait("ScaledUp", 60, since=t_high)
        decision = (up[0] - t_high) if up else float("nan")
        enough = float("nan")
        deadline = time.monotonic() + 60
        while up and time.monotonic() < deadline:
            m = re.search(r"-> (\d+)", up[2])
            if m and high.serving_replicas() >= int(m.group(1)):
                enough = time.monotonic() - t_high
                break
            time.sleep(0.1)
        time.sleep(4)
        ok, failed = high.finish()
        failed_total += failed
        ups_high = len(events.find("ScaledUp", t_high))
        print("phase high: %d ok, %d failed; first ScaledUp after %.2f s, its replicas serving "
              "after %.2f s; %d scale-up event(s)" % (ok, failed, decision, enough, ups_high),
              flush=True)

        # Low again: scale down after the delay, one replica at a time, no failed request.
        t_low = time.monotonic()
        low = Load(endpoint, 1, pause=0.06)
        deadline = time.monotonic() + 90
        back_to_min = None
        while time.monotonic() < deadline and not back_to_min:
            back_to_min = [e for e in events.find("ScaledDown", t_low) if e[2].find("-> 1;") >= 0]
            time.sleep(0.5)
        time.sleep(3)  # the last drained replica stops under load
        first_down = events.wait("ScaledDown", 1, since=t_low)
        ok, failed = low.finish()
        failed_total += failed
        downs = len(events.find("ScaledDown", t_low))
        print("phase low again: %d ok, %d failed; first ScaledDown after %s; %d scale-down "
              "event(s)" % (ok, failed, "%.1f s" % (first_down[0] - t_low) if first_down else "-",
                            downs), flush=True)

        if controller:
            # A new version of the same name under load: its replicas start behind the same
            # endpoint, the old ones drain once they are ready; no request may fail.
            with open(workload) as f:
                v2 = f.read().replace('BURN_MS: "10"', 'BURN_MS: "10", MODEL_VERSION: "2"')
            workload2 = os.path.join(state_dir, "workload-v2.yaml")
            with open(workload2, "w") as f:
                f.write(v2)
            t_roll = time.monotonic()
            rolling = Load(endpoint, 2, pause=0.01)
            versions.append(controller.submit(workload2))
            events.watch(versions[1])
            superseded = events.wait("Superseded", 120, since=t_roll, wid=versions[0])
            deadline = time.monotonic() + 60
            while superseded and time.monotonic() < deadline and \
                    events.phase(versions[0]) != "SUCCEEDED":
                time.sleep(0.2)
            ended = time.monotonic() - t_roll
            time.sleep(2)  # the new version alone serves
            ok, failed = rolling.finish()
            failed_total += failed
            if superseded:
                print("phase rolling update: %d ok, %d failed; new version took over after "
                      "%.1f s, old version drained and ended after %.1f s"
                      % (ok, failed, superseded[0] - t_roll, ended), flush=True)
            else:
                failed_total += 1  # no update is a failure of the phase
                print("phase rolling update: %d ok, %d failed; the new version never took over"
                      % (ok, failed), flush=True)
        else:
            print("phase rolling update: not run (`seedctl run` runs one version; the bench "
                  "runs it under rsl-controller)", flush=True)

        if MODE == "bench":
            # Steady noisy load near the target: count scale events (flapping).
            t_noise = time.monotonic()
            noisy = Load(endpoint, 2, pause=0.02, jitter=0.015)
            time.sleep(30)
            ok, failed = noisy.finish()
            failed_total += failed
            n_up = len(events.find("ScaledUp", t_noise))
            n_down = len(events.find("ScaledDown", t_noise))
            print("phase steady noisy: %d ok, %d failed; %d scale-up and %d scale-down event(s)"
                  % (ok, failed, n_up, n_down), flush=True)
        print("scale-up decision seconds %.2f" % decision)
        print("failed requests %d" % failed_total)
        return 0
    finally:
        if controller:
            for wid in versions:
                controller.cancel(wid)  # drain, stop, frontend gone
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and any(
                    events.phase(w) in ("PENDING", "RUNNING") for w in versions):
                time.sleep(0.2)
            events.stop = True
            controller.stop()
        else:
            proc.send_signal(signal.SIGINT)  # seedctl run cancels: drain, stop, frontend gone
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        events.thread.join(timeout=5)


if __name__ == "__main__":
    sys.exit(main())

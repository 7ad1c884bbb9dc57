#!/usr/bin/python3
"""Drives a serving workload under `seedctl run` and measures its autoscaling.

Used by bench/serve_autoscale.sh (MODE=bench) and scripts/demo_serving.sh (MODE=demo).
Starts `seedctl run` on examples/recommend-serving (EXAMPLE_DIR filled in, the scale-down delay
and targets from the arguments), reads its event lines as they come, finds the endpoint, sends
POST /predict load in phases, and prints what happened. Loopback only, bounded.

  autoscale.py SEEDCTL STATE_DIR MODE
"""
import json
import os
import random
import re
import signal
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
    delay = os.environ.get("SCALE_DOWN_DELAY", "10s")
    with open(os.path.join(EXAMPLE, "workload.yaml")) as f:
        text = f.read().replace("EXAMPLE_DIR", EXAMPLE)
    text = re.sub(r'scaleDownDelay: "[^"]*"', 'scaleDownDelay: "%s"' % delay, text)
    os.makedirs(state_dir, exist_ok=True)
    workload = os.path.join(state_dir, "workload.yaml")
    with open(workload, "w") as f:
        f.write(text)
    proc = subprocess.Popen([seedctl, "run", "--state-dir", os.path.join(state_dir, "state"),
                             "-f", workload], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, bufsize=1)
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

        print("phase rolling update: not run (rolling a new version onto running replicas is "
              "not implemented)", flush=True)

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
        proc.send_signal(signal.SIGINT)  # seedctl run cancels: drain, stop, frontend gone
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        events.thread.join(timeout=5)


if __name__ == "__main__":
    sys.exit(main())

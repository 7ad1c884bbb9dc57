#!/usr/bin/python3
"""Serve step: one replica of the recommendation service.

Listens on $RSL_PORT (RSL gives every replica its own) and loads the model that the train step
committed ($RSL_INPUT_TRAIN/model.npz). The seed's signature:
  POST /predict {"user_features": [[128 x float32]], "item_features": [[64 x float32]]}
    (or the same tensors under "inputs": {"inputs": {"user_features": ..., ...}})
    -> 200 {"prediction": [[p]]}, p float32 in [0, 1]
  tensors that contradict model.signature.inputs (RSL passes it in RSL_MODEL_SIGNATURE) ->
    400 {"error": {"code": "INPUT_SCHEMA_MISMATCH", "tensor", "expected", "actual", "message",
    "hint", ...}, "errors": [...]} (python/rsl_signature.py)
  other bad bodies (NaN, no signature given) -> 400 {"error": "..."}
  GET /healthz -> 200 once the model is loaded (RSL's readiness probe)
BURN_MS (environment, default 0) adds that much CPU per prediction (the demo's load).
"""
import http.server
import json
import os
import sys
import time

import numpy as np

# The project's request check (standard library only), two directories up from this example.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import rsl_signature  # noqa: E402

SIGNATURE = rsl_signature.from_env()  # None when the workload declares no signature
MODEL = np.load(os.path.join(os.environ["RSL_INPUT_TRAIN"], "model.npz"))
USER, ITEM, BIAS = MODEL["user_tower"], MODEL["item_tower"], MODEL["bias"]
BURN_S = float(os.environ.get("BURN_MS", "0")) / 1000.0


def tensor(body, name, width):
    value = np.asarray(body.get(name), dtype=np.float32)
    if value.shape != (1, width):
        raise ValueError(f"{name} must be float32 [1,{width}], got shape {list(value.shape)}")
    if not np.all(np.isfinite(value)):
        raise ValueError(f"{name} holds NaN or Inf")
    return value


def predict(body):
    user = tensor(body, "user_features", USER.shape[0])
    item = tensor(body, "item_features", ITEM.shape[0])
    score = np.sum((user @ USER) * (item @ ITEM), axis=1, keepdims=True) / 4.0 + BIAS
    return (1.0 / (1.0 + np.exp(-score))).astype(np.float32)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/healthz":
            return self.answer(200, {"ready": True, "replica": os.environ.get("RSL_REPLICA")})
        self.answer(404, {"error": "GET /healthz or POST /predict"})

    def do_POST(self):
        if self.path != "/predict":
            return self.answer(404, {"error": "POST /predict"})
        length = int(self.headers.get("Content-Length", "0"))
        status, body = rsl_signature.check_body(SIGNATURE, self.rfile.read(length))
        if status != 200:
            return self.answer(status, body)
        try:
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
            p = predict(rsl_signature.tensors_of(SIGNATURE, body))
        except (ValueError, TypeError) as e:
            return self.answer(400, {"error": str(e)})
        if BURN_S > 0:
            t = time.process_time()
            while time.process_time() - t < BURN_S:
                pass
        self.answer(200, {"prediction": p.tolist(), "replica": os.environ.get("RSL_REPLICA")})

    def log_message(self, *args):
        pass


def main():
    port = int(os.environ["RSL_PORT"])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"replica {os.environ.get('RSL_REPLICA')} serving on {port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())

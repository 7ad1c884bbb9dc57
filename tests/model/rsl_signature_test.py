#!/usr/bin/python3
"""python/rsl_signature.py against the table src/model/request_check_test.cc runs too
(tests/model/request_cases.json), plus what only the Python side has: raw bodies that are not
JSON, the environment variable, numpy arrays (when numpy is installed)."""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import rsl_signature  # noqa: E402

with open(os.path.join(HERE, "request_cases.json")) as f:
    TABLE = json.load(f)


class SharedTable(unittest.TestCase):
    def test_every_case(self):
        self.assertGreaterEqual(len(TABLE["cases"]), 20)
        for case in TABLE["cases"]:
            with self.subTest(case["name"]):
                got = rsl_signature.check(TABLE["signature"], case["request"])
                for m in got:
                    self.assertEqual(m.pop("code"), "INPUT_SCHEMA_MISMATCH")
                self.assertEqual(got, case["errors"])


class Bodies(unittest.TestCase):
    def test_good_body_is_parsed(self):
        raw = json.dumps({"inputs": TABLE["cases"][1]["request"]}).encode()
        status, body = rsl_signature.check_body(TABLE["signature"], raw)
        self.assertEqual(status, 200)
        self.assertEqual(rsl_signature.tensors_of(TABLE["signature"], body)["ids"], [1, 2, 3])

    def test_bad_body_answers_400_with_the_first_mismatch_first(self):
        status, answer = rsl_signature.check_body(TABLE["signature"], b'{"inputs": {}}')
        self.assertEqual(status, 400)
        self.assertEqual(answer["error"], answer["errors"][0])
        self.assertEqual(answer["error"]["message"],
                         "user_features missing from the request (expected float32 [1, 3])")
        self.assertEqual(len(answer["errors"]), 5)

    def test_not_json(self):
        status, answer = rsl_signature.check_body(TABLE["signature"], b"{nope")
        self.assertEqual(status, 400)
        self.assertEqual(answer["error"]["code"], "INPUT_SCHEMA_MISMATCH")
        self.assertEqual(answer["error"]["field"], "body")
        self.assertTrue(answer["error"]["message"].startswith("the request body is not JSON: "))
        deep = b"[" * 100000 + b"]" * 100000
        self.assertEqual(rsl_signature.check_body(TABLE["signature"], deep)[0], 400)

    def test_without_a_signature_every_json_body_passes(self):
        self.assertEqual(rsl_signature.check_body(None, b'{"x": 1}'), (200, {"x": 1}))

    def test_from_env(self):
        sig = json.dumps(TABLE["signature"])
        self.assertEqual(rsl_signature.from_env({"RSL_MODEL_SIGNATURE": sig}), TABLE["signature"])
        self.assertIsNone(rsl_signature.from_env({}))

    def test_none_in_a_signature_shape_is_any_size(self):
        sig = {"inputs": [{"name": "x", "dtype": "float32", "shape": [None, 2]}]}
        self.assertEqual(rsl_signature.check(sig, {"x": [[1, 2], [3, 4]]}), [])
        self.assertEqual(rsl_signature.check(sig, {"x": [[1, 2, 3]]})[0]["message"],
                         "x.shape expected [-1, 2], got [1, 3]")


class Numpy(unittest.TestCase):
    def setUp(self):
        try:
            import numpy
        except ImportError:
            # Not a pass: unittest prints "skipped=", which CTest's SKIP_REGULAR_EXPRESSION
            # (tests/model/CMakeLists.txt) turns into a skipped test.
            self.skipTest("numpy is not installed (Debian: python3-numpy)")
        self.np = numpy

    def test_arrays(self):
        np = self.np
        sig = {"inputs": [{"name": "x", "dtype": "float32", "shape": [1, 3]},
                          {"name": "ids", "dtype": "int64", "shape": [-1]}]}
        ok = {"x": np.zeros((1, 3), dtype=np.float32), "ids": np.arange(4)}
        self.assertEqual(rsl_signature.check(sig, ok), [])
        bad = {"x": np.zeros((1, 4), dtype=np.float32), "ids": np.array([1.5, 2.0])}
        got = [m["message"] for m in rsl_signature.check(sig, bad)]
        self.assertEqual(got, ["x.shape expected [1, 3], got [1, 4]",
                               "ids.dtype expected int64, got float64"])


if __name__ == "__main__":
    unittest.main(verbosity=2)

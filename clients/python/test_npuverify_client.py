"""Unit tests of npuverify_client (plain unittest, numpy only).

    cd clients/python && python3 -m unittest -v

client_test.go runs them under go test, and the example driver under
npuverify check on the golden vector_add cases.
"""

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import npuverify_client as nv  # noqa: E402


def make_case(root, op="vector_add", params=None, numerics=None, inputs=None, outputs=None):
    """Lays out a case directory as the harness does: case.json, the
    inputs (name -> (case.json dtype, array)), an empty out/. outputs:
    name -> (dtype, shape). Returns the directory."""
    d = tempfile.mkdtemp(prefix="npuverify-case-", dir=root)
    os.mkdir(os.path.join(d, "out"))
    doc = {"version": 1, "op": op, "params": params or {},
           "numerics": numerics or {"overflow": "inf", "subnormals": "keep", "int8_rounding": "half_even"},
           "inputs": [], "outputs": []}
    for name, (dtype, a) in (inputs or {}).items():
        np.save(os.path.join(d, name + ".npy"), a)
        doc["inputs"].append({"name": name, "file": name + ".npy", "dtype": dtype, "shape": list(a.shape)})
    for name, (dtype, shape) in (outputs or {}).items():
        doc["outputs"].append({"name": name, "file": "out/" + name + ".npy", "dtype": dtype, "shape": list(shape)})
    with open(os.path.join(d, "case.json"), "w") as f:
        json.dump(doc, f)
    return d


def add_case(root, n=5, dtype="fp16"):
    x = np.arange(n, dtype=np.float16)
    return make_case(root, params={"dtype": dtype}, inputs={"x": ("fp16", x), "y": ("fp16", x)},
                     outputs={"z": ("fp16", (n,))})


def add(params, inputs):
    return {"z": (inputs["x"].astype(np.float32) + inputs["y"]).astype(np.float16)}


class TempDirTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="npuverify-client-test-")
        self.addCleanup(shutil.rmtree, self.root)


class OutputChecks(TempDirTest):
    def run_returning(self, result):
        d = add_case(self.root)
        drv = nv.Driver()
        drv.register("vector_add", lambda p, i: result)
        with self.assertRaises(nv.CaseError) as cm:
            drv.run_case(d)
        self.assertFalse(os.path.exists(os.path.join(d, "out", "z.npy")), "an output was written before the check")
        return str(cm.exception)

    def test_wrong_shape(self):
        msg = self.run_returning({"z": np.zeros(4, np.float16)})
        self.assertIn("vector_add: output 'z' is float16[4], case.json wants fp16[5]", msg)

    def test_wrong_dtype_is_not_cast(self):
        msg = self.run_returning({"z": np.zeros(5, np.float32)})
        self.assertIn("output 'z' is float32[5], case.json wants fp16[5], a numpy float16 array", msg)
        self.assertIn("nothing is converted", msg)

    def test_bf16_hint(self):
        d = make_case(self.root, params={"dtype": "bf16"}, outputs={"z": ("bf16", (3,))})
        drv = nv.Driver()
        drv.register("vector_add", lambda p, i: {"z": np.zeros(3, np.float32)})
        with self.assertRaises(nv.CaseError) as cm:
            drv.run_case(d)
        self.assertIn("bf16 is returned as uint16 bit patterns", str(cm.exception))

    def test_missing_and_extra_outputs(self):
        self.assertIn("returned no output 'z' (want fp16[5])", self.run_returning({}))
        msg = self.run_returning({"z": np.zeros(5, np.float16), "w": np.zeros(5, np.float16)})
        self.assertIn("returned output 'w', which case.json does not list", msg)
        self.assertIn("want a numpy array fp16[5]", self.run_returning({"z": [0.0] * 5}))
        self.assertIn("want a dict of numpy arrays", self.run_returning(None))

    def test_numpy_scalar_for_shape_empty(self):
        d = make_case(self.root, op="sum", outputs={"s": ("fp32", ())})
        drv = nv.Driver()
        drv.register("sum", lambda p, i: {"s": np.float32(2.5)})
        drv.run_case(d)
        s = np.load(os.path.join(d, "out", "s.npy"))
        self.assertEqual((s.dtype.str, s.shape, float(s)), ("<f4", (), 2.5))

    def test_input_mismatch(self):
        d = add_case(self.root)
        np.save(os.path.join(d, "y.npy"), np.zeros(5, np.float32))
        drv = nv.Driver()
        drv.register("vector_add", add)
        with self.assertRaises(nv.CaseError) as cm:
            drv.run_case(d)
        self.assertIn("input 'y'", str(cm.exception))
        self.assertIn("<f4[5], case.json says fp16[5] (<f2)", str(cm.exception))

    def test_written_exactly(self):
        d = add_case(self.root)
        drv = nv.Driver(repeats=3)
        drv.register("vector_add", add)
        drv.run_case(d)
        z = np.load(os.path.join(d, "out", "z.npy"))
        self.assertEqual(z.dtype.str, "<f2")
        np.testing.assert_array_equal(z, np.arange(5, dtype=np.float16) * 2)
        with open(os.path.join(d, "out", "timing.json")) as f:
            t = json.load(f)
        self.assertEqual(list(t), ["kernel_ns"])
        self.assertEqual(len(t["kernel_ns"]), 3)
        self.assertTrue(all(isinstance(v, int) and v >= 0 for v in t["kernel_ns"]))

    def test_no_timing_by_default_and_own_timing(self):
        d = add_case(self.root)
        drv = nv.Driver()
        drv.register("vector_add", add)
        drv.run_case(d)
        self.assertFalse(os.path.exists(os.path.join(d, "out", "timing.json")))

        def timed(params, inputs, case):
            case.kernel_ns.extend([7, 9])
            return add(params, inputs)
        d = add_case(self.root)
        drv = nv.Driver(repeats=2)
        drv.register("vector_add", timed)
        drv.run_case(d)
        with open(os.path.join(d, "out", "timing.json")) as f:
            self.assertEqual(json.load(f), {"kernel_ns": [7, 9, 7, 9]})

    def test_inputs_read_only(self):
        d = add_case(self.root)
        drv = nv.Driver()

        def clobber(params, inputs):
            inputs["x"][0] = 1
            return add(params, inputs)
        drv.register("vector_add", clobber)
        with self.assertRaises(ValueError):
            drv.run_case(d)

    def test_defaults(self):
        d = add_case(self.root)
        seen = {}
        drv = nv.Driver()

        def f(params, inputs):
            seen.update(params)
            return add(params, inputs)
        drv.register("vector_add", f, defaults={"dtype": "fp32", "extra": "3"})
        drv.run_case(d)
        self.assertEqual(seen, {"dtype": "fp16", "extra": "3"})


class Bf16(TempDirTest):
    def test_round_trip_every_pattern(self):
        bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
        back = nv.f32_to_bf16(nv.bf16_to_f32(bits))
        nan = ((bits & 0x7F80) == 0x7F80) & ((bits & 0x7F) != 0)
        np.testing.assert_array_equal(back[~nan], bits[~nan])
        self.assertTrue(np.isnan(nv.bf16_to_f32(back[nan])).all())
        np.testing.assert_array_equal(back[nan] & 0x8000, bits[nan] & 0x8000)

    def test_round_to_nearest_even(self):
        f = np.array([0x3F808000, 0x3F818000, 0x3F808001, 0x3F807FFF, 0x7F7FFFFF, 0xFF7F8000, 0x00008000],
                     dtype=np.uint32).view(np.float32)
        np.testing.assert_array_equal(nv.f32_to_bf16(f),
                                      np.array([0x3F80, 0x3F82, 0x3F81, 0x3F80, 0x7F80, 0xFF80, 0x0000], np.uint16))

    def test_file_round_trip(self):
        bits = np.array([0x3F80, 0xC000, 0x7F80, 0x0001, 0x8000], np.uint16)
        d = make_case(self.root, op="ident", inputs={"x": ("bf16", bits)}, outputs={"y": ("bf16", (5,))})
        drv = nv.Driver()
        got = {}

        def ident(params, inputs, case):
            got["spec"] = case.input_spec("x")
            v = nv.bf16_to_f32(inputs["x"])
            return {"y": nv.store(v, "bf16", case)}
        drv.register("ident", ident)
        drv.run_case(d)
        self.assertEqual(got["spec"].dtype, "bf16")
        y = np.load(os.path.join(d, "out", "y.npy"))
        self.assertEqual(y.dtype.str, "<u2")
        np.testing.assert_array_equal(y, bits)


class Store(unittest.TestCase):
    def test_fp16(self):
        x = np.array([65520.0, -1e9, np.nan, 2.0 ** -20, -(2.0 ** -20), 1.0 + 2.0 ** -11], np.float32)
        ieee = nv.store(x, "fp16")
        self.assertEqual(ieee.dtype, np.float16)
        self.assertEqual(list(ieee[:2]), [np.inf, -np.inf])
        self.assertTrue(np.isnan(ieee[2]))
        self.assertEqual(ieee[3], np.float16(2.0 ** -20))
        self.assertEqual(ieee[5], np.float16(1.0))  # tie to even
        sat = nv.store(x, "fp16", {"overflow": "saturate", "subnormals": "flush"})
        self.assertEqual(list(sat[:3]), [65504.0, -65504.0, 0.0])
        self.assertEqual(sat[3], 0.0)
        self.assertTrue(np.signbit(sat[4]) and sat[4] == 0)

    def test_bf16_saturate_flush(self):
        x = np.array([3.4e38, -np.inf, np.nan, 1e-40, -1e-40], np.float32)
        b = nv.store(x, "bf16", {"overflow": "saturate", "subnormals": "flush", "int8_rounding": "half_even"})
        np.testing.assert_array_equal(b, np.array([0x7F7F, 0xFF7F, 0, 0, 0x8000], np.uint16))

    def test_int8(self):
        x = np.array([0.5, 1.5, -0.5, -2.5, 300.0, -300.0, np.nan, -0.2], np.float32)
        np.testing.assert_array_equal(nv.store(x, "int8"), np.array([0, 2, 0, -2, 127, -128, 0, 0], np.int8))
        np.testing.assert_array_equal(nv.store(x, "int8", {"int8_rounding": "half_away"}),
                                      np.array([1, 2, -1, -3, 127, -128, 0, 0], np.int8))
        np.testing.assert_array_equal(nv.store(np.array([100, 100], np.int16) * 2, "int8"), [127, 127])

    def test_unknown_profile(self):
        with self.assertRaises(nv.Unsupported):
            nv.store(np.zeros(1, np.float32), "fp16", {"overflow": "wrap"})
        with self.assertRaises(TypeError):
            nv.store(np.zeros(1, np.float64), "bf16")


DRIVER = textwrap.dedent("""
    import sys
    import numpy as np
    import npuverify_client as nv

    drv = nv.Driver()

    @drv.op("vector_add")
    def add(params, inputs):
        print("a print goes to stderr in worker mode")
        if params.get("dtype") == "boom":
            raise ZeroDivisionError("division by zero")
        return {"z": (inputs["x"].astype(np.float32) + inputs["y"]).astype(np.float16)}

    drv.main()
""")


class Processes(TempDirTest):
    """The driver as the harness runs it: a process, exec or worker mode."""

    def setUp(self):
        super().setUp()
        self.driver = os.path.join(self.root, "driver.py")
        with open(self.driver, "w") as f:
            f.write(DRIVER)
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = HERE + os.pathsep + self.env.get("PYTHONPATH", "")
        self.env.pop("NPUVERIFY_WORKER", None)
        self.env.pop("NPUVERIFY_CASE", None)

    def exec_case(self, d, env=None):
        e = dict(self.env, NPUVERIFY_CASE=os.path.join(d, "case.json"))
        e.update(env or {})
        return subprocess.run([sys.executable, self.driver, d], env=e, capture_output=True, text=True, timeout=60)

    def test_exec_ok(self):
        d = add_case(self.root)
        r = self.exec_case(d)
        self.assertEqual(r.returncode, 0, r.stderr)
        np.testing.assert_array_equal(np.load(os.path.join(d, "out", "z.npy")), np.arange(5, dtype=np.float16) * 2)

    def test_exec_unknown_op(self):
        d = make_case(self.root, op="gemm", params={"mode": "fp32"})
        r = self.exec_case(d)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("unsupported op gemm (this driver implements vector_add)", r.stderr)

    def test_exec_exception(self):
        d = make_case(self.root, params={"dtype": "boom"}, inputs={"x": ("fp16", np.zeros(2, np.float16)),
                                                               "y": ("fp16", np.zeros(2, np.float16))},
                      outputs={"z": ("fp16", (2,))})
        r = self.exec_case(d)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("Traceback", r.stderr)
        self.assertIn("ZeroDivisionError: division by zero", r.stderr)

    def test_exec_case_env_mismatch(self):
        d = add_case(self.root)
        r = self.exec_case(d, {"NPUVERIFY_CASE": "/elsewhere/case.json"})
        self.assertEqual(r.returncode, 1)
        self.assertIn("NPUVERIFY_CASE=/elsewhere/case.json but the case directory is " + d, r.stderr)

    def test_worker_keeps_serving(self):
        good1, good2 = add_case(self.root), add_case(self.root, n=3)
        bad = make_case(self.root, params={"dtype": "boom"}, inputs={"x": ("fp16", np.zeros(2, np.float16)),
                                                                 "y": ("fp16", np.zeros(2, np.float16))},
                        outputs={"z": ("fp16", (2,))})
        unknown = make_case(self.root, op="gemm")
        wrong = add_case(self.root)
        reqs = [{"version": 1, "case_dir": good1}, {"version": 1, "case_dir": bad},
                {"version": 1, "case_dir": unknown}, {"version": 2, "case_dir": wrong},
                {"version": 1, "case_dir": good2}]
        stdin = "".join(json.dumps(q) + "\n" for q in reqs)
        r = subprocess.run([sys.executable, self.driver], input=stdin, env=dict(self.env, NPUVERIFY_WORKER="1"),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(len(lines), len(reqs), "stdout carries exactly one reply per request:\n" + r.stdout)
        replies = [json.loads(line) for line in lines]
        self.assertEqual([x["case_dir"] for x in replies], [q["case_dir"] for q in reqs])
        self.assertEqual([x["ok"] for x in replies], [True, False, False, False, True])
        self.assertEqual(replies[1]["error"], "vector_add: ZeroDivisionError: division by zero")
        self.assertIn("unsupported op gemm", replies[2]["error"])
        self.assertIn("request version 2", replies[3]["error"])
        self.assertIn("a print goes to stderr in worker mode", r.stderr)
        self.assertIn("Traceback", r.stderr)
        np.testing.assert_array_equal(np.load(os.path.join(good2, "out", "z.npy")), np.arange(3, dtype=np.float16) * 2)
        self.assertFalse(os.path.exists(os.path.join(wrong, "out", "z.npy")))


class Serve(TempDirTest):
    def test_bad_requests(self):
        drv = nv.Driver()
        drv.register("vector_add", add)
        out, log = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(log):
            code = drv.serve(io.BytesIO(b"not json\n\n[1]\n{\"version\": 1}\n"), out)
        self.assertIn("request is not JSON", log.getvalue())
        self.assertEqual(code, 0)
        replies = [json.loads(line) for line in out.getvalue().splitlines()]
        self.assertEqual(len(replies), 3)  # the blank line is skipped
        self.assertTrue(all(r["ok"] is False and r["case_dir"] == "" for r in replies))
        self.assertIn("request is not JSON", replies[0]["error"])
        self.assertIn("request without a case_dir", replies[2]["error"])


if __name__ == "__main__":
    unittest.main()

"""npuverify_client: the npuverify exec and worker protocols for a Python driver.

A driver registers one function per op and calls main(); the same file then
runs under both backends:

    npuverify check --backend exec:'python3 driver.py'     # one process per case
    npuverify check --backend worker:'python3 driver.py'   # one process, many cases

    import npuverify_client as nv

    driver = nv.Driver()

    @driver.op("vector_add")
    def vector_add(params, inputs, case):
        x, y = inputs["x"], inputs["y"]
        ...
        return {"z": z}

    if __name__ == "__main__":
        driver.main()

The function gets params (a dict of strings, as in case.json, every default
filled in), inputs (a dict of read-only numpy arrays, in the stored dtype:
bf16 as uint16 bit patterns) and, when it takes a third argument, the Case
(numerics profile, input and output specs, directory). It returns a dict of
numpy arrays, one per output of the op, each of exactly the dtype and shape
case.json lists (bf16 as uint16 bit patterns). Nothing is converted: a wrong
name, dtype or shape is an error naming the output, before anything is
written.

The protocols are those of docs/exec-backend.md (exec, and its worker
mode section). Exec mode (NPUVERIFY_WORKER unset): the case directory is the last
argument; exit status 0 done, 1 I/O or format error or an exception in the
function (traceback on stderr), 2 unsupported case (an op not registered,
Unsupported raised). Worker mode (NPUVERIFY_WORKER=1): one request line
{"version": 1, "case_dir": D} per case on stdin, one reply line on stdout,
{"case_dir": D, "ok": true} or {"case_dir": D, "ok": false, "error": TEXT};
a failing case fails in its reply and the worker serves the next one; exit 0
at the end of stdin. stdout carries replies only: the driver's own prints go
to stderr.

Needs numpy only.
"""

import inspect
import json
import os
import sys
import time
import traceback

import numpy as np

__all__ = [
    "Driver", "Case", "TensorSpec", "Unsupported", "CaseError",
    "STORAGE_DTYPES", "bf16_to_f32", "f32_to_bf16", "store",
    "EXIT_OK", "EXIT_ERROR", "EXIT_UNSUPPORTED",
]

CASE_VERSION = 1
REQUEST_VERSION = 1

EXIT_OK = 0           # outputs written
EXIT_ERROR = 1        # I/O or format error, an exception in the function
EXIT_UNSUPPORTED = 2  # an op, dtype, mode or profile this driver does not implement

# STORAGE_DTYPES maps each case.json dtype to the numpy dtype of its .npy
# file (the exact descr the harness writes and requires). NumPy has no
# bf16: it travels as its raw bit patterns, '<u2'.
STORAGE_DTYPES = {
    "fp16": np.dtype("<f2"),
    "bf16": np.dtype("<u2"),
    "fp32": np.dtype("<f4"),
    "fp64": np.dtype("<f8"),
    "int8": np.dtype("|i1"),
    "int32": np.dtype("<i4"),
    "uint8": np.dtype("|u1"),
}

# The numerics profile's keys, their values, and the IEEE default of each.
NUMERICS = {
    "overflow": ("inf", "saturate"),
    "subnormals": ("keep", "flush"),
    "int8_rounding": ("half_even", "half_away"),
}


class CaseError(Exception):
    """An I/O or format error in a case: exit 1, or ok: false in a reply."""

    exit_code = EXIT_ERROR


class Unsupported(CaseError):
    """A case this driver does not implement (an op, a dtype, a mode, a
    numerics profile): exit 2, or ok: false in a reply. Raise it from an op
    function for a param value it does not handle."""

    exit_code = EXIT_UNSUPPORTED


# ---- bf16 and stores under the numerics profile ----


def bf16_to_f32(bits):
    """Returns the float32 values of bf16 bit patterns (a uint16 array, as
    bf16 inputs arrive). Exact: every bf16 value is a float32."""
    b = np.asarray(bits)
    if b.dtype != np.uint16:
        raise TypeError("bf16_to_f32: want uint16 bit patterns, got %s" % b.dtype)
    return (b.astype(np.uint32) << np.uint32(16)).view(np.float32)


def f32_to_bf16(x):
    """Returns the bf16 bit patterns (uint16) of float32 values, each
    rounded to nearest, ties to even, from its float32 bits; overflow gives
    +-inf and a NaN stays a (quiet) NaN of the same sign. For the numerics
    profile's saturation and flushing, use store(x, "bf16", numerics)."""
    a = np.asarray(x)
    if a.dtype != np.float32:
        raise TypeError("f32_to_bf16: want float32 values, got %s (rounding a float64 through "
                        "float32 first can round twice)" % a.dtype)
    u = np.asarray(a, order="C").view(np.uint32).astype(np.uint64)
    r = ((u + np.uint64(0x7FFF) + ((u >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)).astype(np.uint16)
    nan = np.isnan(a)
    if nan.any():
        r = np.where(nan, ((u >> np.uint64(16)).astype(np.uint16) | np.uint16(0x0040)), r).astype(np.uint16)
    return r.reshape(a.shape)


def _numerics(numerics):
    n = {"overflow": "inf", "subnormals": "keep", "int8_rounding": "half_even"}
    if numerics is not None:
        n.update(numerics.numerics if isinstance(numerics, Case) else numerics)
    for k, allowed in NUMERICS.items():
        if n[k] not in allowed:
            raise Unsupported("numerics %s=%r is not one of %s" % (k, n[k], "|".join(allowed)))
    return n


_FLOAT_LIMITS = {  # max finite, min normal
    "fp16": (65504.0, 2.0 ** -14),
    "bf16": (float(np.frombuffer(np.uint32(0x7F7F0000).tobytes(), np.float32)[0]), 2.0 ** -126),
    "fp32": (float(np.finfo(np.float32).max), 2.0 ** -126),
    "fp64": (float(np.finfo(np.float64).max), 2.0 ** -1022),
}
_INT_RANGES = {"int8": (-128, 127), "int32": (-2 ** 31, 2 ** 31 - 1), "uint8": (0, 255)}


def store(x, dtype, numerics=None):
    """Returns x stored as case.json's dtype under a numerics profile (a
    dict as in case.json, or a Case; None is the IEEE default): the array
    to return for an output of that dtype.

    Floating dtypes round to nearest even in one step from x, which must
    be float32 or float64 (float32 only for bf16, rounded from its bits).
    Overflow gives +-inf, or +-max finite under overflow=saturate, which
    also maps NaN to 0; under subnormals=flush a result below the smallest
    normal becomes a zero of x's sign. Integer dtypes round by
    int8_rounding (half_even or half_away, for every integer dtype),
    saturate to the dtype's range and map NaN to 0.
    """
    if dtype not in STORAGE_DTYPES:
        raise Unsupported("store: unknown dtype %r (want one of %s)" % (dtype, ", ".join(STORAGE_DTYPES)))
    n = _numerics(numerics)
    a = np.asarray(x)
    if dtype in _INT_RANGES:
        if a.dtype.kind in "iub":
            lo, hi = _INT_RANGES[dtype]
            return np.clip(a.astype(np.int64), lo, hi).astype(STORAGE_DTYPES[dtype])
        if a.dtype.kind != "f":
            raise TypeError("store: cannot store %s as %s" % (a.dtype, dtype))
        v = a.astype(np.float64)
        nan = np.isnan(v)
        if n["int8_rounding"] == "half_away":
            t = np.trunc(v)
            r = t + np.where(np.abs(v - t) >= 0.5, np.sign(v), 0.0)  # v - t is exact
        else:
            r = np.rint(v)  # ties to even
        lo, hi = _INT_RANGES[dtype]
        r = np.clip(np.where(nan, 0.0, r), lo, hi)
        return (r + 0.0).astype(STORAGE_DTYPES[dtype])  # + 0.0: no -0
    if a.dtype not in (np.float32, np.float64):
        raise TypeError("store: want float32 or float64 values for %s, got %s" % (dtype, a.dtype))
    maxf, minn = _FLOAT_LIMITS[dtype]
    sat = n["overflow"] == "saturate"
    flush = n["subnormals"] == "flush"
    if dtype == "bf16":
        bits = f32_to_bf16(a)
        if sat:
            bits = np.where(np.isnan(a), np.uint16(0), bits)
            inf = (bits & np.uint16(0x7FFF)) == np.uint16(0x7F80)
            bits = np.where(inf, (bits & np.uint16(0x8000)) | np.uint16(0x7F7F), bits)
        if flush:
            sub = ((bits & np.uint16(0x7F80)) == 0) & ((bits & np.uint16(0x7F)) != 0)
            bits = np.where(sub, bits & np.uint16(0x8000), bits)
        return bits.astype(np.uint16).reshape(a.shape)
    st = STORAGE_DTYPES[dtype]
    with np.errstate(over="ignore", invalid="ignore"):
        r = a.astype(st)  # round to nearest even, directly from a; overflow gives inf
        if sat:
            r = np.where(np.isnan(a), st.type(0), r)
            r = np.where(np.isinf(r), np.copysign(st.type(maxf), r), r)
        if flush:
            r = np.where((r != 0) & (np.abs(r) < minn), np.copysign(st.type(0), a.astype(st)), r)
    return np.asarray(r, dtype=st).reshape(a.shape)


# ---- the case ----


class TensorSpec(object):
    """One input or output of a case, as case.json lists it: name, file
    (relative to the case directory), dtype (case.json's name, e.g. "bf16"),
    shape (a tuple), and storage (the numpy dtype of its .npy file)."""

    __slots__ = ("name", "file", "dtype", "shape", "storage")

    def __init__(self, name, file, dtype, shape):
        self.name, self.file, self.dtype, self.shape = name, file, dtype, tuple(shape)
        self.storage = STORAGE_DTYPES[dtype]

    def describe(self):
        return "%s%s" % (self.dtype, list(self.shape))

    def __repr__(self):
        return "TensorSpec(%r, %r, %r, %r)" % (self.name, self.file, self.dtype, self.shape)


class Case(object):
    """One case: dir (the case directory), op, params (dict of strings,
    every default filled in), numerics (dict: overflow, subnormals,
    int8_rounding), inputs and outputs (lists of TensorSpec in contract
    order), and kernel_ns: a function that times its kernel itself (say,
    without the host-device copies) appends nanoseconds here, one per run,
    and they are written to out/timing.json instead of the driver's own
    timing of the whole function."""

    def __init__(self, case_dir, doc):
        self.dir = case_dir
        self.doc = doc
        if not isinstance(doc, dict):
            raise CaseError("case.json is not a JSON object")
        version = doc.get("version")
        if type(version) is not int or version != CASE_VERSION:
            raise Unsupported("case.json version %r (this client knows %d)" % (version, CASE_VERSION))
        op = doc.get("op")
        if not isinstance(op, str) or not op:
            raise CaseError("case.json has no op")
        self.op = op
        params = doc.get("params") or {}
        if not isinstance(params, dict):
            raise CaseError("case.json params is not an object")
        self.params = dict(params)
        num = doc.get("numerics") or {}
        if not isinstance(num, dict):
            raise CaseError("case.json numerics is not an object")
        self.numerics = {"overflow": "inf", "subnormals": "keep", "int8_rounding": "half_even"}
        self.numerics.update(num)
        self.inputs = self._specs(doc, "inputs")
        self.outputs = self._specs(doc, "outputs")
        self.kernel_ns = []

    @staticmethod
    def _specs(doc, key):
        raw = doc.get(key)
        if not isinstance(raw, list):
            raise CaseError("case.json %s is not a list" % key)
        specs = []
        for i, t in enumerate(raw):
            where = "case.json %s[%d]" % (key, i)
            if not isinstance(t, dict):
                raise CaseError("%s is not an object" % where)
            name, file, dtype, shape = t.get("name"), t.get("file"), t.get("dtype"), t.get("shape")
            if not isinstance(name, str) or not name or not isinstance(file, str) or not file:
                raise CaseError("%s: name and file must be non-empty strings" % where)
            if file.startswith("/") or ".." in file.split("/"):
                raise CaseError("%s (%s): file %r is not inside the case directory" % (where, name, file))
            if dtype not in STORAGE_DTYPES:
                raise Unsupported("%s (%s): dtype %r unknown to this client (it knows %s)"
                                  % (where, name, dtype, ", ".join(STORAGE_DTYPES)))
            if not isinstance(shape, list) or any(type(d) is not int or d < 0 for d in shape):
                raise CaseError("%s (%s): shape %r is not a list of dimensions" % (where, name, shape))
            specs.append(TensorSpec(name, file, dtype, shape))
        return specs

    @classmethod
    def load(cls, case_dir):
        path = os.path.join(case_dir, "case.json")
        try:
            with open(path, "rb") as f:
                doc = json.loads(f.read().decode("utf-8"))
        except (OSError, ValueError) as e:
            raise CaseError("%s: %s" % (path, e))
        return cls(case_dir, doc)

    def path(self, spec):
        """The absolute path of an input's or output's file."""
        return os.path.join(self.dir, *spec.file.split("/"))

    def input_spec(self, name):
        for s in self.inputs:
            if s.name == name:
                return s
        raise KeyError("%s: no input %r in case.json" % (self.op, name))

    def output_spec(self, name):
        for s in self.outputs:
            if s.name == name:
                return s
        raise KeyError("%s: no output %r in case.json" % (self.op, name))

    def describe(self):
        """op and params, for messages: vector_add dtype=fp16."""
        return " ".join([self.op] + ["%s=%s" % kv for kv in sorted(self.params.items())])

    def read_inputs(self):
        """Loads every input, checked against its dtype and shape, as a
        read-only array."""
        arrays = {}
        for s in self.inputs:
            p = self.path(s)
            try:
                a = np.load(p, allow_pickle=False)
            except (OSError, ValueError) as e:
                raise CaseError("%s: input %r: %s: %s" % (self.op, s.name, p, e))
            if a.dtype != s.storage or a.shape != s.shape:
                raise CaseError("%s: input %r: %s holds %s%s, case.json says %s (%s)"
                                % (self.op, s.name, p, a.dtype.str, list(a.shape), s.describe(), s.storage.str))
            a.flags.writeable = False
            arrays[s.name] = a
        return arrays

    def check_outputs(self, result):
        """Checks what the function returned against case.json's outputs:
        every name, exactly the dtype and shape. Returns the arrays to write,
        little-endian and C-ordered (no value changes)."""
        if not isinstance(result, dict):
            raise CaseError("%s: the function returned %s, want a dict of numpy arrays (outputs %s)"
                            % (self.op, type(result).__name__, ", ".join(s.name for s in self.outputs)))
        want = [s.name for s in self.outputs]
        extra = sorted(k for k in result if k not in want)
        if extra:
            raise CaseError("%s: the function returned output %s, which case.json does not list (outputs: %s)"
                            % (self.op, ", ".join(map(repr, extra)), ", ".join(want)))
        out = {}
        for s in self.outputs:
            if s.name not in result:
                raise CaseError("%s: the function returned no output %r (want %s)" % (self.op, s.name, s.describe()))
            a = result[s.name]
            if isinstance(a, np.generic):  # a numpy scalar: a 0-d array of its dtype
                a = np.asarray(a)
            if not isinstance(a, np.ndarray):
                raise CaseError("%s: output %r is a %s, want a numpy array %s"
                                % (self.op, s.name, type(a).__name__, s.describe()))
            bad_dtype = a.dtype.newbyteorder("=") != s.storage.newbyteorder("=")
            if bad_dtype or a.shape != s.shape:
                hint = ""
                if bad_dtype:
                    hint = " (nothing is converted: round it yourself, e.g. npuverify_client.store(x, %r, case))" % s.dtype
                    if s.dtype == "bf16":
                        hint = " (bf16 is returned as uint16 bit patterns: npuverify_client.store(x, 'bf16', case))"
                raise CaseError("%s: output %r is %s%s, case.json wants %s, a numpy %s array of shape %s%s"
                                % (self.op, s.name, a.dtype, list(a.shape), s.describe(), s.storage.name,
                                   list(s.shape), hint))
            out[s.name] = np.asarray(a, dtype=s.storage, order="C")  # not ascontiguousarray: it makes a 0-d array 1-d
        return out

    def write_outputs(self, arrays):
        for s in self.outputs:
            p = self.path(s)
            try:
                with open(p, "wb") as f:
                    np.save(f, arrays[s.name], allow_pickle=False)
            except OSError as e:
                raise CaseError("%s: output %r: %s" % (self.op, s.name, e))

    def write_timing(self, ns):
        p = os.path.join(self.dir, "out", "timing.json")
        try:
            with open(p, "w") as f:
                json.dump({"kernel_ns": [int(v) for v in ns]}, f)
                f.write("\n")
        except OSError as e:
            raise CaseError("%s: %s" % (p, e))


# ---- the driver ----


def _takes_case(fn):
    """Whether fn takes a third argument (the Case)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    n = 0
    for p in sig.parameters.values():
        if p.kind == p.VAR_POSITIONAL:
            return True
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            n += 1
    return n >= 3


def _parse_request(line):
    """Returns the case directory of a request line and None, or what can
    be read of it ("" when nothing) and the error to reply with."""
    try:
        req = json.loads(line)
    except ValueError as e:
        return "", CaseError("request is not JSON (%s): %r" % (e, line.strip()[:256]))
    if not isinstance(req, dict):
        return "", CaseError("request is not a JSON object: %r" % line.strip()[:256])
    case_dir = req.get("case_dir")
    if not isinstance(case_dir, str) or not case_dir:
        return "", CaseError("request without a case_dir: %r" % line.strip()[:256])
    v = req.get("version")
    if type(v) is not int or v != REQUEST_VERSION:
        return case_dir, Unsupported("request version %r (this client knows %d)" % (v, REQUEST_VERSION))
    return case_dir, None


def _last_line(exc):
    lines = traceback.format_exception_only(type(exc), exc)
    text = "".join(lines).strip().splitlines()
    return text[-1] if text else type(exc).__name__


class Driver(object):
    """A kernel driver: the ops it implements, one function each.

    repeats: run the function this many times per case and write each
    run's time to out/timing.json (the outputs written are the first
    run's); 0 writes no timing.json. The inputs are read-only arrays, so
    every run sees the same inputs.
    """

    def __init__(self, repeats=0):
        if type(repeats) is not int or repeats < 0:
            raise ValueError("repeats must be an int >= 0, got %r" % (repeats,))
        self.repeats = repeats
        self._ops = {}
        self._case = None  # the case in flight, for messages

    def register(self, op, fn, defaults=None):
        """Registers fn(params, inputs[, case]) -> {output: array} for op.
        defaults fills params case.json does not carry (the harness fills
        every default; this is for params newer than the harness)."""
        if not isinstance(op, str) or not op:
            raise ValueError("register: op must be a non-empty string, got %r" % (op,))
        if op in self._ops:
            raise ValueError("register: op %r registered twice" % op)
        if not callable(fn):
            raise TypeError("register %s: %r is not callable" % (op, fn))
        self._ops[op] = (fn, dict(defaults or {}), _takes_case(fn))
        return fn

    def op(self, name, defaults=None):
        """Decorator form of register: @driver.op("vector_add")."""
        def deco(fn):
            return self.register(name, fn, defaults)
        return deco

    def ops(self):
        return sorted(self._ops)

    def run_case(self, case_dir):
        """Runs the case in case_dir: reads case.json and the inputs, calls
        the op's function, checks and writes the outputs (and timing.json).
        Raises Unsupported, CaseError, or what the function raised."""
        self._case = None
        case = Case.load(case_dir)
        self._case = case
        entry = self._ops.get(case.op)
        if entry is None:
            raise Unsupported("unsupported op %s (this driver implements %s)"
                              % (case.op, ", ".join(self.ops()) or "no op"))
        fn, defaults, takes_case = entry
        for k, v in defaults.items():
            case.params.setdefault(k, v)
        inputs = case.read_inputs()
        args = (case.params, inputs, case) if takes_case else (case.params, inputs)
        times = []
        result = None
        for i in range(max(1, self.repeats)):
            t0 = time.perf_counter_ns()
            r = fn(*args)
            times.append(time.perf_counter_ns() - t0)
            if i == 0:
                result = r
        arrays = case.check_outputs(result)
        case.write_outputs(arrays)
        if case.kernel_ns:
            case.write_timing(case.kernel_ns)
        elif self.repeats > 0:
            case.write_timing(times)

    def exec_main(self, argv):
        """Exec mode: the case directory is the last argument. Returns the
        exit status."""
        if len(argv) < 2:
            sys.stderr.write("usage: %s CASE_DIR (or NPUVERIFY_WORKER=1 for worker mode)\n" % (argv[0] if argv else "driver"))
            return EXIT_ERROR
        d = argv[-1]
        env = os.environ.get("NPUVERIFY_CASE")
        if env is not None and env != os.path.join(d, "case.json"):
            sys.stderr.write("NPUVERIFY_CASE=%s but the case directory is %s\n" % (env, d))
            return EXIT_ERROR
        try:
            self.run_case(d)
        except CaseError as e:
            sys.stderr.write("%s\n" % e)
            return e.exit_code
        except Exception:
            sys.stderr.write("%s: case %s: the function raised:\n" % (os.path.basename(argv[0]), d))
            traceback.print_exc(file=sys.stderr)
            return EXIT_ERROR
        return EXIT_OK

    def serve(self, requests, replies):
        """Worker mode: one case per request line read from requests (a
        binary or text file), one reply line written to replies (a text
        file), until EOF. Returns the exit status (0)."""
        for raw in requests:
            line = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
            if not line.strip():
                continue
            case_dir, err = _parse_request(line)
            if err is not None:
                sys.stderr.write("%s\n" % err)
                reply = {"case_dir": case_dir, "ok": False, "error": str(err)}
            else:
                try:
                    self.run_case(case_dir)
                    reply = {"case_dir": case_dir, "ok": True}
                except CaseError as e:
                    sys.stderr.write("%s\n" % e)
                    reply = {"case_dir": case_dir, "ok": False, "error": str(e)}
                except (Exception, SystemExit):
                    reply = self._failed(case_dir)
            replies.write(json.dumps(reply) + "\n")
            replies.flush()
        return EXIT_OK

    def _failed(self, case_dir):
        """The reply for a case whose function raised: the traceback goes to
        stderr, its last line into the reply."""
        exc = sys.exc_info()[1]
        sys.stderr.write("case %s: the function raised:\n" % case_dir)
        traceback.print_exc(file=sys.stderr)
        sys.stderr.flush()
        text = _last_line(exc)
        if self._case is not None:
            text = "%s: %s" % (self._case.op, text)
        return {"case_dir": case_dir, "ok": False, "error": text}

    def worker_main(self):
        """Worker mode on the process's stdin and stdout. The real stdout is
        kept for the replies; file descriptor 1 and sys.stdout then go to
        stderr, so print() and C libraries cannot break the protocol."""
        replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        try:
            return self.serve(sys.stdin.buffer, replies)
        except BrokenPipeError:
            return EXIT_ERROR  # the harness went away

    def main(self, argv=None):
        """Runs the driver in the mode the environment says and exits with
        its status: worker mode when NPUVERIFY_WORKER=1, else exec mode on
        the case directory in the last argument."""
        if argv is None:
            argv = sys.argv
        if os.environ.get("NPUVERIFY_WORKER") == "1":
            code = self.worker_main()
        else:
            code = self.exec_main(argv)
        sys.stderr.flush()
        sys.exit(code)

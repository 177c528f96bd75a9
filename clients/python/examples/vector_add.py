#!/usr/bin/env python3
"""vector_add in numpy, behind npuverify's exec and worker protocols.

    npuverify check --op vector_add --backend exec:'python3 clients/python/examples/vector_add.py'
    npuverify check --op vector_add --backend worker:'python3 clients/python/examples/vector_add.py'

The contract (docs/operators.md): z = x + y, the correctly rounded sum,
computed in fp32 and rounded once to the dtype under the case's numerics
profile (overflow inf|saturate, subnormals keep|flush); int8 saturates to
[-128, 127]. fp32 then one rounding is the correctly rounded sum for fp16
and bf16: the sum of two fp16 (bf16) values rounded to fp32 and then to
fp16 (bf16) rounds only once in effect, fp32 having more than twice their
precision plus two bits. A real driver calls its device kernel where this
one calls numpy.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import npuverify_client as nv  # noqa: E402

driver = nv.Driver(repeats=3)


@driver.op("vector_add")
def vector_add(params, inputs, case):
    dtype = params.get("dtype", "fp16")
    x, y = inputs["x"], inputs["y"]
    if x.shape != y.shape or x.ndim != 1:
        raise nv.CaseError("vector_add: x and y must be [N] of one size, got %s and %s" % (list(x.shape), list(y.shape)))
    if dtype == "int8":
        return {"z": nv.store(x.astype(np.int16) + y.astype(np.int16), "int8", case)}
    if dtype == "bf16":
        xf, yf = nv.bf16_to_f32(x), nv.bf16_to_f32(y)
    elif dtype in ("fp16", "fp32"):
        xf, yf = x.astype(np.float32), y.astype(np.float32)
    else:
        raise nv.Unsupported("vector_add: dtype %s not implemented" % dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        s = xf + yf  # fp32, rounded to nearest even
    return {"z": nv.store(s, dtype, case)}


if __name__ == "__main__":
    driver.main()

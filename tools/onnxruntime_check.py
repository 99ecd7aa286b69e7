#!/usr/bin/env python3
"""Runs an ONNX model in onnxruntime on an input .npy and compares with the expected .npy.

    onnxruntime_check.py MODEL INPUT.npy EXPECTED.npy [--atol 1e-5] [--out OUT.npy]

Prints "max |diff| = ..." and exits 0 when every |ort - expected| <= atol + atol * |expected|
(rtol = atol), 1 when not, 77 when onnxruntime (or numpy) is not importable.
"""
import argparse
import sys

try:
    import numpy as np
    import onnxruntime as ort
except ImportError as e:  # the test skips with this message
    print(f"SKIP: onnxruntime not importable ({e}); run tools/setup.sh")
    sys.exit(77)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("input")
    p.add_argument("expected")
    p.add_argument("--atol", type=float, default=1e-5)
    p.add_argument("--out")
    a = p.parse_args()
    sess = ort.InferenceSession(a.model, providers=["CPUExecutionProvider"])
    x = np.load(a.input)
    (y,) = sess.run(None, {sess.get_inputs()[0].name: x})
    want = np.load(a.expected)
    if a.out:
        np.save(a.out, y)
    if y.shape != want.shape:
        print(f"shape {y.shape} != expected {want.shape}")
        return 1
    diff = float(np.max(np.abs(y.astype(np.float64) - want.astype(np.float64)))) if y.size else 0.0
    ok = np.allclose(y, want, rtol=a.atol, atol=a.atol)
    print(f"onnxruntime {ort.__version__}: max |diff| = {diff:.3g} over {y.size} values")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

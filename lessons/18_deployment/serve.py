#!/usr/bin/env python3
"""A minimal digits server: the exported ONNX model and its preprocessing, no gradlab code.

    serve.py MODEL.onnx MEAN.npy STD.npy < requests.csv > predictions.txt

Each request is one line of 64 raw pixel values (0..16, as in data/digits/digits.csv.gz, without
the label). The server applies the training preprocessing, x = (pixel / 16 - mean) / std with the
training split's statistics shipped beside the model, runs the model in onnxruntime and answers
each request with one line: the predicted digit. Exit code 77 when onnxruntime (or numpy) is not
importable (lesson 18 skips with a message then).
"""
import sys

try:
    import numpy as np
    import onnxruntime as ort
except ImportError as e:
    print(f"SKIP: onnxruntime not importable ({e}); run tools/setup.sh", file=sys.stderr)
    sys.exit(77)


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    model, mean_file, std_file = sys.argv[1:]
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])  # loaded once, then serves
    name = sess.get_inputs()[0].name
    mean = np.load(mean_file).astype(np.float32).reshape(1, 64)
    std = np.load(std_file).astype(np.float32).reshape(1, 64)
    for line in sys.stdin:
        if not line.strip():
            continue
        pixels = np.array([float(v) for v in line.split(",")], dtype=np.float32).reshape(1, 64)
        x = (pixels / 16.0 - mean) / std  # the same preprocessing as training
        (logits,) = sess.run(None, {name: x})
        print(int(np.argmax(logits[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Print every scalar of one TensorBoard run folder as read by TensorBoard's EventAccumulator.

  .venv/bin/python tools/tb_scalars.py <run folder>
  -> one line per scalar: "<tag> <step> <value>", the value as Python's repr (exact: it is the
     float32 stored, widened to a double), in the reader's order. Lesson 16 compares each line
     with its own records. Exit 3 when tensorboard cannot be imported.
"""
import sys


def main():
    try:
        from tensorboard.backend.event_processing import event_accumulator as ea
    except ImportError as e:
        print(f"tb_scalars: cannot import tensorboard ({e}); run tools/setup.sh", file=sys.stderr)
        return 3
    acc = ea.EventAccumulator(sys.argv[1], size_guidance={ea.SCALARS: 0})
    acc.Reload()
    for tag in sorted(acc.Tags()["scalars"]):
        for e in acc.Scalars(tag):
            print(f"{tag} {e.step} {e.value!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Decode a PNG and count its pixels near each given colour: what a picture really shows.

    png_colors.py plot.png 1f77b4 ff7f0e 2ca02c
    -> "560 504 1234 987 1001": width, height, then per colour the pixels within 0.08 of it (RGB in
       0..1, max over channels)

Used by lesson 16 to check that every curve it asked tools/plot_curves.py for was drawn (a PNG
header alone says nothing about its pixels). Needs matplotlib (its PNG reader). Exit 1 when the
file is not a PNG that decodes.
"""
import sys


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        import matplotlib.image as mpimg
        import numpy as np
    except ImportError:
        print("png_colors: matplotlib is missing", file=sys.stderr)
        return 3
    try:
        img = mpimg.imread(argv[1], format="png")
    except Exception as e:  # not a PNG, truncated, ...
        print(f"png_colors: {argv[1]} does not decode: {e}", file=sys.stderr)
        return 1
    rgb = img[..., :3].astype(float)
    if rgb.max() > 1.5:  # integer PNGs come back as 0..255
        rgb = rgb / 255.0
    counts = []
    for hexcol in argv[2:]:
        want = np.array([int(hexcol[i:i + 2], 16) / 255.0 for i in (0, 2, 4)])
        counts.append(int((np.abs(rgb - want).max(axis=-1) < 0.08).sum()))
    print(img.shape[1], img.shape[0], *counts)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Coefficients of gradlab's float32 vector erf and gelu (src/gradlab/backend/cpu/vec/level.hpp).

erf(x) = x P(u) for |x| <= 4, u = x^2/8 - 1 in [-1, 1]; P of degree 16 interpolates erf(x)/x at
the 17 Chebyshev nodes of x^2 in [0, 16].
--gelu: gelu's central piece, gelu(x) = x (1/2 + x R(s)) for |x| <= 3, s = x^2, u = s (2/9) - 1
(2/9 rounded to float, as the kernel computes u), R(s) = erf(sqrt(s/2)) / (2 sqrt(s)); P of
degree 10 interpolates R at the 11 Chebyshev nodes of u.
--gelu-backward: gelu's derivative on the same range, Φ(x) + x φ(x) = 1/2 + x Q(s),
Q(s) = R(s) + exp(-s/2) / sqrt(2 pi); degree 11, the same u.
The coefficients are rounded to float one at a time from the top, the lower ones refitted to what
is left (so each rounding is partly absorbed below). Standard library only (math.erf is glibc's
double erf). Prints them highest degree first.

    python3 tools/fit_erf.py [--gelu | --gelu-backward]
"""
import math
import struct
import sys

BACKWARD = "--gelu-backward" in sys.argv[1:]
GELU = BACKWARD or "--gelu" in sys.argv[1:]
DEG, S = (11 if BACKWARD else 10, 9.0) if GELU else (16, 16.0)  # degree, x^2 range [0, S]


def f32(v):
    return struct.unpack("f", struct.pack("f", v))[0]


def cheb_fit(f, deg):
    """Monomial coefficients in u of the polynomial interpolating f(u) at deg + 1 Chebyshev nodes."""
    n = deg + 1
    nodes = [math.cos(math.pi * (k + 0.5) / n) for k in range(n)]
    fv = [f(u) for u in nodes]
    c = [2.0 / n * sum(fv[k] * math.cos(math.pi * j * (k + 0.5) / n) for k in range(n)) for j in range(n)]
    c[0] /= 2
    T = [[1.0], [0.0, 1.0]]  # Chebyshev polynomials in the monomial basis
    for j in range(2, n):
        p = [0.0] + [2 * v for v in T[j - 1]]
        for i, v in enumerate(T[j - 2]):
            p[i] -= v
        T.append(p)
    mono = [0.0] * n
    for j in range(n):
        for i, v in enumerate(T[j]):
            mono[i] += c[j] * v
    return mono


def erf_over_x(u):
    x = math.sqrt((u + 1) * S / 2)
    return math.erf(x) / x if x else 2 / math.sqrt(math.pi)


def gelu_r(u):
    s = (u + 1) / f32(2 / S)  # the s the kernel maps to u
    return math.erf(math.sqrt(s / 2)) / (2 * math.sqrt(s)) if s else 1 / math.sqrt(2 * math.pi)


def gelu_q(u):
    s = (u + 1) / f32(2 / S)
    return gelu_r(u) + math.exp(-s / 2) / math.sqrt(2 * math.pi)


target = gelu_q if BACKWARD else gelu_r if GELU else erf_over_x
fixed = []  # (degree, float coefficient)
for d in range(DEG, -1, -1):
    rest = lambda u: target(u) - sum(c * u**k for k, c in fixed)
    fixed.append((d, f32(cheb_fit(rest, d)[d])))
if GELU:
    print("u = s * %.9ef - 1" % f32(2 / S))
print(", ".join("%.9ef" % c for _, c in fixed))

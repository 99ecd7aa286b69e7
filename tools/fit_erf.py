#!/usr/bin/env python3
"""Coefficients of gradlab's float32 vector erf (src/gradlab/backend/cpu/vec/level.hpp).

erf(x) = x P(u) for |x| <= 4, u = x^2/8 - 1 in [-1, 1]; P of degree 16 interpolates erf(x)/x at
the 17 Chebyshev nodes of x^2 in [0, 16]. The coefficients are rounded to float one at a time from
the top, the lower ones refitted to what is left (so each rounding is partly absorbed below).
Standard library only (math.erf is glibc's double erf). Prints them highest degree first.

    python3 tools/fit_erf.py
"""
import math
import struct

DEG, S = 16, 16.0  # degree, x^2 range [0, S]


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


fixed = []  # (degree, float coefficient)
for d in range(DEG, -1, -1):
    rest = lambda u: erf_over_x(u) - sum(c * u**k for k, c in fixed)
    fixed.append((d, f32(cheb_fit(rest, d)[d])))
print(", ".join("%.9ef" % c for _, c in fixed))

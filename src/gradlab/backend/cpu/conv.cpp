// Sliding-window kernels for conv2d and max_pool2d: im2col (PyTorch's unfold layout), its adjoint
// col2im (fold), and max pooling with the flat argmax of each window (a readable reference, a fast
// kernel held to it bit for bit, and the backward: the gradient put back at each argmax).
// Layout: x [N, C, H, W] contiguous; cols [N, C*kh*kw, oh*ow] with row c*kh*kw + i*kw + j.


#include <algorithm>
#include <type_traits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "gradlab/backend/cpu/cpu.hpp"
#include "gradlab/backend/cpu/loops.hpp"
#include "gradlab/backend/cpu/parallel.hpp"
#include "gradlab/backend/math/pool.hpp"

namespace gradlab::cpu {

namespace {

template <class T>
void im2col_impl(const T* x, T* cols, int64_t C, int64_t H, int64_t W, const Window2d& w,
                 int64_t oh, int64_t ow) {
  const int64_t L = oh * ow;
  for (int64_t c = 0; c < C; ++c) {
    const T* xc = x + c * H * W;
    for (int64_t i = 0; i < w.kh; ++i) {
      for (int64_t j = 0; j < w.kw; ++j) {
        T* row = cols + ((c * w.kh + i) * w.kw + j) * L;
        for (int64_t y = 0; y < oh; ++y) {
          const int64_t iy = y * w.sh - w.ph + i * w.dh;
          T* out = row + y * ow;
          if (iy < 0 || iy >= H) {
            for (int64_t x0 = 0; x0 < ow; ++x0) out[x0] = T(0);
            continue;
          }
          const T* xr = xc + iy * W;
          for (int64_t x0 = 0; x0 < ow; ++x0) {
            const int64_t ix = x0 * w.sw - w.pw + j * w.dw;
            out[x0] = (ix >= 0 && ix < W) ? xr[ix] : T(0);
          }
        }
      }
    }
  }
}

template <class T>
void col2im_impl(const T* cols, T* x, int64_t C, int64_t H, int64_t W, const Window2d& w,
                 int64_t oh, int64_t ow) {
  const int64_t L = oh * ow;
  for (int64_t k = 0; k < C * H * W; ++k) x[k] = T(0);
  for (int64_t c = 0; c < C; ++c) {
    T* xc = x + c * H * W;
    for (int64_t i = 0; i < w.kh; ++i) {
      for (int64_t j = 0; j < w.kw; ++j) {
        const T* row = cols + ((c * w.kh + i) * w.kw + j) * L;
        for (int64_t y = 0; y < oh; ++y) {
          const int64_t iy = y * w.sh - w.ph + i * w.dh;
          if (iy < 0 || iy >= H) continue;
          T* xr = xc + iy * W;
          const T* in = row + y * ow;
          for (int64_t x0 = 0; x0 < ow; ++x0) {
            const int64_t ix = x0 * w.sw - w.pw + j * w.dw;
            if (ix >= 0 && ix < W) xr[ix] += in[x0];
          }
        }
      }
    }
  }
}

void check_float_kernel(const Tensor& x, const char* op) {
  GRADLAB_CHECK(x.dtype() == kFloat32 || x.dtype() == kFloat64, DTypeError, op,
                "expected a floating point input", "float32 or float64", to_string(x.dtype()),
                "convert with .to(kFloat32)");
}

}  // namespace

// floor((n + 2p - d (k - 1) - 1) / s) + 1, and 0 when the dilated kernel is wider than the padded
// input (C++'s / truncates toward 0: -1 / 2 would count one window that does not fit).
static int64_t window_count(int64_t n, int64_t k, int64_t s, int64_t p, int64_t d) {
  const int64_t span = n + 2 * p - d * (k - 1) - 1;
  return span < 0 ? 0 : span / s + 1;
}
int64_t Window2d::out_h(int64_t H) const { return window_count(H, kh, sh, ph, dh); }
int64_t Window2d::out_w(int64_t W) const { return window_count(W, kw, sw, pw, dw); }

Tensor im2col(const Tensor& x_in, const Window2d& w) {
  check_float_kernel(x_in, "unfold");
  Tensor x = contiguous(x_in);
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t oh = w.out_h(H), ow = w.out_w(W);
  Tensor cols = make_tensor({N, C * w.kh * w.kw, oh * ow}, x.dtype());
  visit_dtype(x.dtype(), "unfold", [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      const T* px = ptr<const T>(x);
      T* pc = ptr<T>(cols);
      const int64_t xs = C * H * W, cs = C * w.kh * w.kw * oh * ow;
      for (int64_t n = 0; n < N; ++n) im2col_impl(px + n * xs, pc + n * cs, C, H, W, w, oh, ow);
    }
  });
  return cols;
}

Tensor col2im(const Tensor& cols_in, int64_t C, int64_t H, int64_t W, const Window2d& w) {
  check_float_kernel(cols_in, "fold");
  Tensor cols = contiguous(cols_in);
  const int64_t N = cols.size(0);
  const int64_t oh = w.out_h(H), ow = w.out_w(W);
  Tensor x = make_tensor({N, C, H, W}, cols.dtype());
  visit_dtype(cols.dtype(), "fold", [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      const T* pc = ptr<const T>(cols);
      T* px = ptr<T>(x);
      const int64_t xs = C * H * W, cs = C * w.kh * w.kw * oh * ow;
      for (int64_t n = 0; n < N; ++n) col2im_impl(pc + n * cs, px + n * xs, C, H, W, w, oh, ow);
    }
  });
  return x;
}

// The readable max-pool: every window through math::max_pool_window (the CUDA kernel's formula
// too). The checks (checks/nn/max_pool_fast_prop.cpp) hold max_pool2d below to it bit for bit.
std::pair<Tensor, Tensor> max_pool2d_reference(const Tensor& x_in, const Window2d& w) {
  check_float_kernel(x_in, "max_pool2d");
  Tensor x = contiguous(x_in);
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t oh = w.out_h(H), ow = w.out_w(W);
  Tensor out = make_tensor({N, C, oh, ow}, x.dtype());
  Tensor idx = make_tensor({N, C, oh, ow}, kInt64);
  visit_dtype(x.dtype(), "max_pool2d", [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      const T* px = ptr<const T>(x);
      T* po = ptr<T>(out);
      int64_t* pi = ptr<int64_t>(idx);
      for (int64_t p = 0; p < N * C; ++p) {
        const T* plane = px + p * H * W;
        for (int64_t y = 0; y < oh; ++y) {
          for (int64_t x0 = 0; x0 < ow; ++x0) {
            const math::PoolMax<T> m = math::max_pool_window(plane, W, int64_t{1}, H, W, w, y, x0);
            po[(p * oh + y) * ow + x0] = m.value;
            pi[(p * oh + y) * ow + x0] = m.index;
          }
        }
      }
    }
  });
  return {out, idx};
}

namespace {

// One output row y of one [H, W] plane. Windows wholly inside the plane (iy, ix never out of
// range) skip the bounds tests; KH, KW > 0 fix the window size at compile time (0: w.kh, w.kw).
// The reference scan (math::max_pool_window) keeps the FIRST maximum in row-major window order
// (a later value must be strictly greater), and NaN wins. Without a NaN that is: m = the max,
// index = the first position holding a value == m (-0 == +0, as the scan's `>` sees them), value
// = the input there (its bits, sign of zero included). Computed without data-dependent branches
// (a random max is a coin flip per compare: branches mispredict); a window holding a NaN (the
// test is predictable: NaNs are rare) takes the reference scan itself.
template <class T, int KH, int KW>
void pool_row(const T* plane, int64_t H, int64_t W, const Window2d& w, int64_t y, int64_t ow,
              T* out, int64_t* idx) {
  const int64_t kh = KH > 0 ? KH : w.kh, kw = KW > 0 ? KW : w.kw;
  const int64_t iy0 = y * w.sh - w.ph;
  const bool rows_inside = iy0 >= 0 && iy0 + (kh - 1) * w.dh < H;
  // x0 in [xlo, xhi): ix0 = x0 sw - pw >= 0 and ix0 + (kw - 1) dw < W.
  int64_t xlo = ow, xhi = ow;
  if (rows_inside) {
    xlo = w.pw > 0 ? (w.pw + w.sw - 1) / w.sw : 0;
    const int64_t last = W - 1 - (kw - 1) * w.dw + w.pw;  // largest ix0 + pw allowed
    xhi = last < 0 ? 0 : std::min(ow, last / w.sw + 1);
    xlo = std::min(xlo, xhi);
  }
  auto reference = [&](int64_t x0) {
    const math::PoolMax<T> m = math::max_pool_window(plane, W, int64_t{1}, H, W, w, y, x0);
    out[x0] = m.value, idx[x0] = m.index;
  };
  for (int64_t x0 = 0; x0 < xlo; ++x0) reference(x0);
  const int64_t rstep = w.dh * W;
  for (int64_t x0 = xlo; x0 < xhi; ++x0) {
    const int64_t at0 = iy0 * W + x0 * w.sw - w.pw;  // the window's first element
    const T* base = plane + at0;
    T m = base[0];
    bool nan = false;
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) {
        const T v = base[i * rstep + j * w.dw];
        nan |= v != v;
        m = v > m ? v : m;
      }
    if (nan) {
      reference(x0);
      continue;
    }
    int64_t arg = 0;  // offset from at0 of the first v == m: scan backwards, the last hit wins
    for (int64_t i = kh - 1; i >= 0; --i)
      for (int64_t j = kw - 1; j >= 0; --j) {
        const int64_t off = i * rstep + j * w.dw;
        arg = base[off] == m ? off : arg;
      }
    out[x0] = base[arg], idx[x0] = at0 + arg;
  }
  for (int64_t x0 = xhi; x0 < ow; ++x0) reference(x0);
}

// The common 2x2 window, stride 2, no padding or dilation, one output row: the same rule as
// pool_row (first maximum in the order a b / c d, NaN aside) as selects only, so the loop
// vectorizes. Returns false when the row holds a NaN: the caller then redoes the row (the
// reference scan). off_a: index of the row's first input in the plane.
template <class T>
bool pool_row_2x2(const T* plane, int64_t W, int64_t off_a, int64_t ow, T* out, int64_t* idx) {
  const T* r0 = plane + off_a;
  const T* r1 = r0 + W;
  int nan = 0;
  int64_t x0 = 0;
#if defined(__SSE2__)
  // float32, 4 windows per step in SSE2 (every x86-64 has it; GCC keeps the scalar selects below
  // as branches, which mispredict on random data). Indices in int32 lanes while inside a plane
  // of < 2^31 elements, widened to int64 on the store.
  if constexpr (std::is_same_v<T, float>) {
    if (off_a + 2 * W < (int64_t{1} << 31)) {
      __m128 nans = _mm_setzero_ps();
      const __m128i one = _mm_set1_epi32(1), row1 = _mm_set1_epi32(static_cast<int>(W)),
                    lanes = _mm_setr_epi32(0, 2, 4, 6), zero = _mm_setzero_si128();
      auto pick = [](__m128 t, __m128 x, __m128 y) {  // t ? x : y
        return _mm_or_ps(_mm_and_ps(t, x), _mm_andnot_ps(t, y));
      };
      auto four = [&](int64_t x0) {  // windows x0 .. x0 + 3
        const __m128 p0 = _mm_loadu_ps(r0 + 2 * x0), p1 = _mm_loadu_ps(r0 + 2 * x0 + 4);
        const __m128 q0 = _mm_loadu_ps(r1 + 2 * x0), q1 = _mm_loadu_ps(r1 + 2 * x0 + 4);
        const __m128 a = _mm_shuffle_ps(p0, p1, _MM_SHUFFLE(2, 0, 2, 0)),
                     b = _mm_shuffle_ps(p0, p1, _MM_SHUFFLE(3, 1, 3, 1)),
                     c = _mm_shuffle_ps(q0, q1, _MM_SHUFFLE(2, 0, 2, 0)),
                     d = _mm_shuffle_ps(q0, q1, _MM_SHUFFLE(3, 1, 3, 1));
        nans = _mm_or_ps(nans, _mm_or_ps(_mm_cmpunord_ps(a, b), _mm_cmpunord_ps(c, d)));
        const __m128 tb = _mm_cmpgt_ps(b, a), td = _mm_cmpgt_ps(d, c);
        const __m128 m0 = pick(tb, b, a), m1 = pick(td, d, c);
        const __m128 t1 = _mm_cmpgt_ps(m1, m0);
        _mm_storeu_ps(out + x0, pick(t1, m1, m0));
        const __m128i i0 = _mm_and_si128(_mm_castps_si128(tb), one),
                      i1 = _mm_add_epi32(row1, _mm_and_si128(_mm_castps_si128(td), one)),
                      ti = _mm_castps_si128(t1);
        __m128i k = _mm_or_si128(_mm_and_si128(ti, i1), _mm_andnot_si128(ti, i0));
        k = _mm_add_epi32(k, _mm_add_epi32(_mm_set1_epi32(static_cast<int>(off_a + 2 * x0)), lanes));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(idx + x0), _mm_unpacklo_epi32(k, zero));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(idx + x0 + 2), _mm_unpackhi_epi32(k, zero));
      };
      for (; x0 + 4 <= ow; x0 += 4) four(x0);
      if (x0 < ow && ow >= 4) {  // the tail: the last 4 windows again (same results rewritten)
        four(ow - 4);
        x0 = ow;
      }
      nan |= _mm_movemask_ps(nans);
    }
  }
#endif
  for (; x0 < ow; ++x0) {
    const T a = r0[2 * x0], b = r0[2 * x0 + 1], c = r1[2 * x0], d = r1[2 * x0 + 1];
    nan |= (a != a) | (b != b) | (c != c) | (d != d);
    const bool tb = b > a, td = d > c;  // a later value must be strictly greater
    const T m0 = tb ? b : a, m1 = td ? d : c;
    const bool t1 = m1 > m0;
    const int64_t i0 = tb ? 1 : 0, i1 = td ? W + 1 : W;
    out[x0] = t1 ? m1 : m0;
    idx[x0] = off_a + 2 * x0 + (t1 ? i1 : i0);
  }
  return nan == 0;
}

}  // namespace

// The fast max-pool: the same scan as max_pool2d_reference without bounds tests inside the
// plane (and a compile-time 2x2 / 3x3 window), planes split over threads (each plane's result
// is the same on any thread).
std::pair<Tensor, Tensor> max_pool2d(const Tensor& x_in, const Window2d& w) {
  check_float_kernel(x_in, "max_pool2d");
  Tensor x = contiguous(x_in);
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t oh = w.out_h(H), ow = w.out_w(W);
  Tensor out = make_tensor({N, C, oh, ow}, x.dtype());
  Tensor idx = make_tensor({N, C, oh, ow}, kInt64);
  visit_dtype(x.dtype(), "max_pool2d", [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      const T* px = ptr<const T>(x);
      T* po = ptr<T>(out);
      int64_t* pi = ptr<int64_t>(idx);
      auto row = w.kh == 2 && w.kw == 2   ? &pool_row<T, 2, 2>
                 : w.kh == 3 && w.kw == 3 ? &pool_row<T, 3, 3>
                                          : &pool_row<T, 0, 0>;
      const bool two = w.kh == 2 && w.kw == 2 && w.sh == 2 && w.sw == 2 && w.ph == 0 &&
                       w.pw == 0 && w.dh == 1 && w.dw == 1;
      const int64_t per_plane = std::max<int64_t>(1, oh * ow * w.kh * w.kw);
      parallel_for(0, N * C, std::max<int64_t>(1, kGrain / per_plane), [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p)
          for (int64_t y = 0; y < oh; ++y) {
            const T* plane = px + p * H * W;
            T* o = po + (p * oh + y) * ow;
            int64_t* i = pi + (p * oh + y) * ow;
            if (!two || !pool_row_2x2(plane, W, 2 * y * W, ow, o, i)) row(plane, H, W, w, y, ow, o, i);
          }
      });
    }
  });
  return {out, idx};
}

// dx [N, C, H, W]: dx[n, c, idx] += dy[n, c, l] over l = 0, 1, ... in order, as the reference
// scatter_add(zeros, 2, idx, dy) adds them (overlapping windows: the same sums in the same
// order, so the same bits). One pass; planes split over threads.
Tensor max_pool2d_backward(const Tensor& dy_in, const Tensor& idx_in, int64_t H, int64_t W) {
  check_float_kernel(dy_in, "max_pool2d_backward");
  Tensor dy = contiguous(dy_in), idx = contiguous(idx_in);
  const int64_t N = dy.size(0), C = dy.size(1), L = dy.size(2) * dy.size(3), HW = H * W;
  Tensor dx = make_tensor({N, C, H, W}, dy.dtype());
  visit_dtype(dy.dtype(), "max_pool2d_backward", [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      const T* pg = ptr<const T>(dy);
      const int64_t* pi = ptr<const int64_t>(idx);
      T* pd = ptr<T>(dx);
      parallel_for(0, N * C, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, HW + L)),
                   [&](int64_t p0, int64_t p1) {
                     for (int64_t p = p0; p < p1; ++p) {
                       T* d = pd + p * HW;
                       std::fill(d, d + HW, T(0));
                       const T* g = pg + p * L;
                       const int64_t* ix = pi + p * L;
                       for (int64_t l = 0; l < L; ++l) d[ix[l]] += g[l];
                     }
                   });
    }
  });
  return dx;
}

}  // namespace gradlab::cpu

// The fast path of conv2d and conv_transpose2d: per image, im2col into a cached workspace, then one
// GEMM per group (OpenBLAS). conv.cpp's im2col / col2im + matmul stay the readable reference; the
// checks (checks/nn/conv_fast_prop.cpp) compare the two.
//
// Per image n and group g (Cg = C / groups, Og = O / groups, K = Cg*kh*kw, L = oh*ow):
//   forward          y[n, g]  [Og, L] = W_g [Og, K] @ cols_g [K, L]            (+ bias[o])
//   backward input   cols_g   [K, L]  = W_gᵀ [K, Og] @ dy[n, g] [Og, L];  dx[n] = col2im(cols)
//   backward weight  dW_g     [Og, K] += dy[n, g] [Og, L] @ cols_gᵀ [L, K]
// cols [C*kh*kw, L] has row (c*kh + i)*kw + j, as PyTorch's unfold; a group's rows are contiguous.
// NOTE: the batch runs in order n = 0, 1, ... (dW sums in that fixed order); each GEMM is split
// over gradlab's threads by gemm() (gemm.hpp) when it is big enough.

#include <cstring>
#include <vector>

#include "gradlab/backend/cpu/conv_onednn.hpp"
#include "gradlab/backend/cpu/cpu.hpp"
#include "gradlab/backend/cpu/gemm.hpp"
#include "gradlab/backend/cpu/loops.hpp"
#include "gradlab/backend/cpu/parallel.hpp"

namespace gradlab::cpu {

namespace {

// The x0 in [lo, hi) whose input column x0*s + off lies in [0, W): no per-element bounds test.
struct Span {
  int64_t lo, hi;
};
Span valid(int64_t off, int64_t s, int64_t W, int64_t ow) {
  const int64_t lo = off >= 0 ? 0 : (-off + s - 1) / s;
  const int64_t hi = W - 1 - off < 0 ? 0 : std::min(ow, (W - 1 - off) / s + 1);
  return {std::min(lo, hi), hi};
}

// cols [C*kh*kw, oh*ow] from one image x [C, H, W].
template <class T>
void im2col_fast(const T* x, T* cols, int64_t C, int64_t H, int64_t W, const Window2d& w,
                 int64_t oh, int64_t ow) {
  const int64_t L = oh * ow;
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t i = 0; i < w.kh; ++i) {
      for (int64_t j = 0; j < w.kw; ++j) {
        T* row = cols + ((c * w.kh + i) * w.kw + j) * L;
        const int64_t off = j * w.dw - w.pw;
        const Span sp = valid(off, w.sw, W, ow);
        for (int64_t y = 0; y < oh; ++y) {
          T* out = row + y * ow;
          const int64_t iy = y * w.sh - w.ph + i * w.dh;
          if (iy < 0 || iy >= H) {
            std::memset(out, 0, sizeof(T) * ow);
            continue;
          }
          const T* xr = x + (c * H + iy) * W + off;
          for (int64_t x0 = 0; x0 < sp.lo; ++x0) out[x0] = T(0);
          if (w.sw == 1) {
            std::memcpy(out + sp.lo, xr + sp.lo, sizeof(T) * (sp.hi - sp.lo));
          } else {
            for (int64_t x0 = sp.lo; x0 < sp.hi; ++x0) out[x0] = xr[x0 * w.sw];
          }
          for (int64_t x0 = sp.hi; x0 < ow; ++x0) out[x0] = T(0);
        }
      }
    }
  }
}

// x [C, H, W] = col2im(cols) (overlapping window entries add up); x is overwritten.
template <class T>
void col2im_fast(const T* cols, T* x, int64_t C, int64_t H, int64_t W, const Window2d& w,
                 int64_t oh, int64_t ow) {
  const int64_t L = oh * ow;
  std::memset(x, 0, sizeof(T) * C * H * W);
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t i = 0; i < w.kh; ++i) {
      for (int64_t j = 0; j < w.kw; ++j) {
        const T* row = cols + ((c * w.kh + i) * w.kw + j) * L;
        const int64_t off = j * w.dw - w.pw;
        const Span sp = valid(off, w.sw, W, ow);
        for (int64_t y = 0; y < oh; ++y) {
          const int64_t iy = y * w.sh - w.ph + i * w.dh;
          if (iy < 0 || iy >= H) continue;
          T* xr = x + (c * H + iy) * W + off;
          const T* in = row + y * ow;
          for (int64_t x0 = sp.lo; x0 < sp.hi; ++x0) xr[x0 * w.sw] += in[x0];
        }
      }
    }
  }
}

// The im2col workspace of this thread, kept between calls (grown, never shrunk): the fast path
// maps no new pages once the largest layer has run.
template <class T>
T* workspace(size_t n) {
  thread_local std::vector<T> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// A 1x1 window with stride 1 and no padding: cols is the image itself.
bool is_pointwise(const Window2d& w) {
  return w.kh == 1 && w.kw == 1 && w.sh == 1 && w.sw == 1 && w.ph == 0 && w.pw == 0;
}

template <class F>
void on_float(const Tensor& t, const char* op, F&& f) {
  GRADLAB_CHECK(t.dtype() == kFloat32 || t.dtype() == kFloat64, DTypeError, op,
                "the fast convolution computes in float32 or float64", "float32 or float64",
                to_string(t.dtype()), "convert with .to(kFloat32)");
  if (t.dtype() == kFloat32)
    f.template operator()<float>();
  else
    f.template operator()<double>();
}

}  // namespace

Tensor conv2d_forward(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in,
                      const Conv2dGeom& g) {
  if (onednn::usable(g, x_in.dtype()))
    if (Tensor r = onednn::forward(x_in, w_in, b_in, g); r.defined()) return r;
  const Tensor x = contiguous(x_in), wt = contiguous(w_in);
  const Tensor b = b_in.defined() ? contiguous(b_in) : Tensor();
  Tensor y = make_tensor({g.N, g.O, g.oh, g.ow}, x.dtype());
  const Window2d& w = g.win;
  const int64_t Cg = g.C / g.groups, Og = g.O / g.groups, K = Cg * w.kh * w.kw, L = g.oh * g.ow;
  if (y.numel() == 0) return y;
  const bool direct = is_pointwise(w) && g.oh == g.H && g.ow == g.W;
  on_float(x, "conv2d", [&]<class T>() {
    const T* px = ptr<const T>(x);
    const T* pw = ptr<const T>(wt);
    T* py = ptr<T>(y);
    T* cols = direct ? nullptr : workspace<T>(static_cast<size_t>(g.C * w.kh * w.kw * L));
    for (int64_t n = 0; n < g.N; ++n) {
      const T* xn = px + n * g.C * g.H * g.W;
      T* yn = py + n * g.O * L;
      if (!direct) im2col_fast(xn, cols, g.C, g.H, g.W, w, g.oh, g.ow);
      const T* src = direct ? xn : cols;
      T beta = T(0);
      if (b.defined()) {  // y = bias, then the GEMM adds onto it
        const T* pb = ptr<const T>(b);
        for (int64_t o = 0; o < g.O; ++o)
          for (int64_t l = 0; l < L; ++l) yn[o * L + l] = pb[o];
        beta = T(1);
      }
      for (int64_t gr = 0; gr < g.groups; ++gr)
        gemm(false, false, Og, L, K, pw + gr * Og * K, K, src + gr * K * L, L, beta,
             yn + gr * Og * L, L);
    }
  });
  return y;
}

Tensor conv2d_backward_input(const Tensor& dy_in, const Tensor& w_in, const Tensor& b_in,
                             const Conv2dGeom& g) {
  if (onednn::usable(g, dy_in.dtype()))
    if (Tensor r = onednn::backward_input(dy_in, w_in, b_in, g); r.defined()) return r;
  const Tensor dy = contiguous(dy_in), wt = contiguous(w_in);
  const Tensor b = b_in.defined() ? contiguous(b_in) : Tensor();
  Tensor dx = make_tensor({g.N, g.C, g.H, g.W}, dy.dtype());
  const Window2d& w = g.win;
  const int64_t Cg = g.C / g.groups, Og = g.O / g.groups, K = Cg * w.kh * w.kw, L = g.oh * g.ow;
  const int64_t HW = g.H * g.W;
  if (dx.numel() == 0) return dx;
  // Nothing reaches dx when Og or L is 0 (the GEMM's inner dim would be empty: not called).
  const bool empty = Og == 0 || L == 0;
  const bool direct = is_pointwise(w) && g.oh == g.H && g.ow == g.W;
  on_float(dy, "conv_transpose2d", [&]<class T>() {
    const T* pdy = ptr<const T>(dy);
    const T* pw = ptr<const T>(wt);
    T* pdx = ptr<T>(dx);
    T* cols = direct ? nullptr : workspace<T>(static_cast<size_t>(g.C * w.kh * w.kw * L));
    for (int64_t n = 0; n < g.N; ++n) {
      const T* dyn = pdy + n * g.O * L;
      T* dxn = pdx + n * g.C * HW;
      T* dst = direct ? dxn : cols;
      if (empty)
        std::memset(dxn, 0, sizeof(T) * g.C * HW);
      else
        for (int64_t gr = 0; gr < g.groups; ++gr)
          gemm(true, false, K, L, Og, pw + gr * Og * K, K, dyn + gr * Og * L, L, T(0),
               dst + gr * K * L, L);
      if (!direct && !empty) col2im_fast(cols, dxn, g.C, g.H, g.W, w, g.oh, g.ow);
      if (b.defined()) {
        const T* pb = ptr<const T>(b);
        for (int64_t c = 0; c < g.C; ++c)
          for (int64_t k = 0; k < HW; ++k) dxn[c * HW + k] += pb[c];
      }
    }
  });
  return dx;
}

Tensor conv2d_backward_weight(const Tensor& x_in, const Tensor& dy_in, const Conv2dGeom& g) {
  if (onednn::usable(g, x_in.dtype()))
    if (Tensor r = onednn::backward_weight(x_in, dy_in, g); r.defined()) return r;
  const Tensor x = contiguous(x_in), dy = contiguous(dy_in);
  const Window2d& w = g.win;
  const int64_t Cg = g.C / g.groups, Og = g.O / g.groups, K = Cg * w.kh * w.kw, L = g.oh * g.ow;
  Tensor dw = make_tensor({g.O, Cg, w.kh, w.kw}, x.dtype());
  if (dw.numel() == 0) return dw;
  if (g.N == 0 || L == 0) {
    fill(dw, 0);
    return dw;
  }
  const bool direct = is_pointwise(w) && g.oh == g.H && g.ow == g.W;
  on_float(x, "conv2d", [&]<class T>() {
    const T* px = ptr<const T>(x);
    const T* pdy = ptr<const T>(dy);
    T* pdw = ptr<T>(dw);
    T* cols = direct ? nullptr : workspace<T>(static_cast<size_t>(g.C * w.kh * w.kw * L));
    for (int64_t n = 0; n < g.N; ++n) {
      const T* xn = px + n * g.C * g.H * g.W;
      if (!direct) im2col_fast(xn, cols, g.C, g.H, g.W, w, g.oh, g.ow);
      const T* src = direct ? xn : cols;
      for (int64_t gr = 0; gr < g.groups; ++gr)
        gemm(false, true, Og, K, L, pdy + (n * g.O + gr * Og) * L, L, src + gr * K * L, L,
             n == 0 ? T(0) : T(1), pdw + gr * Og * K, K);
    }
  });
  return dw;
}

// db[o] = Σ_n Σ_l dy[n, o, l]: each [L] row summed in 8 partial sums (they vectorize), the rows
// of one o added in n order in double; o split over threads (each o's sums are the same on any
// thread: the bits do not depend on the count).
void conv2d_bias_sums(const Tensor& dy_in, double* totals) {
  const Tensor dy = contiguous(dy_in);
  const int64_t N = dy.size(0), O = dy.size(1), L = dy.size(2) * dy.size(3);
  on_float(dy, "conv2d", [&]<class T>() {
    const T* p = ptr<const T>(dy);
    parallel_for(0, O, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, N * L)),
                 [&](int64_t o0, int64_t o1) {
                   for (int64_t o = o0; o < o1; ++o) {
                     double total = totals[o];
                     for (int64_t n = 0; n < N; ++n) {
                       const T* row = p + (n * O + o) * L;
                       T part[8] = {};
                       int64_t l = 0;
                       for (; l + 8 <= L; l += 8)
                         for (int k = 0; k < 8; ++k) part[k] += row[l + k];
                       for (; l < L; ++l) part[0] += row[l];
                       T s = T(0);
                       for (int k = 0; k < 8; ++k) s += part[k];
                       total += static_cast<double>(s);
                     }
                     totals[o] = total;
                   }
                 });
  });
}

Tensor conv2d_backward_bias(const Tensor& dy) {
  const int64_t O = dy.size(1);
  std::vector<double> totals(static_cast<size_t>(O), 0.0);
  conv2d_bias_sums(dy, totals.data());
  Tensor db = make_tensor({O}, dy.dtype());
  on_float(db, "conv2d", [&]<class T>() {
    T* out = ptr<T>(db);
    for (int64_t o = 0; o < O; ++o) out[o] = static_cast<T>(totals[o]);
  });
  return db;
}

}  // namespace gradlab::cpu

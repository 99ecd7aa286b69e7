// Sliding-window kernels for conv2d and max_pool2d: im2col (PyTorch's unfold layout), its adjoint
// col2im (fold), and max pooling with the flat argmax of each window.
// Layout: x [N, C, H, W] contiguous; cols [N, C*kh*kw, oh*ow] with row c*kh*kw + i*kw + j.


#include "gradlab/backend/cpu/cpu.hpp"
#include "gradlab/backend/cpu/loops.hpp"
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

}  // namespace gradlab::cpu

#pragma once
// Kernels of the nn primitives: im2col / col2im (conv2d), max_pool2d, linear's bias add, relu's
// threshold_backward, and cross-entropy on logits. CPU references: cpu/conv.cpp, cpu/nn.cpp.
// Inputs are read through their strides (no contiguous copies); outputs are fresh and
// contiguous. Layouts: x [N, C, H, W]; cols [N, C*kh*kw, oh*ow], row c*kh*kw + i*kw + j.
// Every kernel is one thread per output element (or per row), and no two threads write the
// same element: no atomics anywhere, so results are deterministic.

#include <limits>

#include "gradlab/backend/cuda/exec.hpp"
#include "gradlab/backend/math/nn.hpp"
#include "gradlab/backend/math/pool.hpp"
#include "gradlab/backend/cuda/gpu.hpp"
#include "gradlab/backend/cuda/runtime.hpp"

namespace gradlab::gpu::detail {

// Calls f.template operator()<T>() for float32 / float64; other dtypes throw DTypeError naming
// `op` with the CPU reference's wording (`hint` as in conv.cpp, none as in nn.cpp).
template <class F>
void visit_float_nn(ScalarType dt, const char* op, const char* what, const char* hint, F&& f) {
  if (dt == kFloat32) return f.template operator()<float>();
  if (dt == kFloat64) return f.template operator()<double>();
  throw DTypeError(error_message(op, what, "float32 or float64", to_string(dt), hint));
}
template <class F>
void visit_float_window(ScalarType dt, const char* op, F&& f) {
  visit_float_nn(dt, op, "expected a floating point input", "convert with .to(kFloat32)", f);
}
template <class F>
void visit_float_rows(ScalarType dt, const char* op, F&& f) {
  visit_float_nn(dt, op, "expected a floating point tensor", "", f);
}

// cols[n, (c, i, j), (y, x0)] = x[n, c, y*sh - ph + i*dh, x0*sw - pw + j*dw], 0 in the padding.
template <class X, class T>
void im2col_t(const Tensor& x, const Tensor& cols, Window2d w, int64_t oh, int64_t ow) {
  const int64_t C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t s0 = x.stride(0), s1 = x.stride(1), s2 = x.stride(2), s3 = x.stride(3);
  const int64_t L = oh * ow, R = C * w.kh * w.kw;
  const T* px = dptr<const T>(x);
  T* pc = dptr<T>(cols);
  X::for_each(
      cols.numel(),
      [=] GRADLAB_HD(int64_t idx) {
        const int64_t x0 = idx % ow, y = (idx / ow) % oh, r = (idx / L) % R, n = idx / (L * R);
        const int64_t j = r % w.kw, i = (r / w.kw) % w.kh, c = r / (w.kw * w.kh);
        const int64_t iy = y * w.sh - w.ph + i * w.dh, ix = x0 * w.sw - w.pw + j * w.dw;
        pc[idx] = (iy >= 0 && iy < H && ix >= 0 && ix < W) ? px[n * s0 + c * s1 + iy * s2 + ix * s3]
                                                           : T(0);
      },
      "unfold");
}

// x[n, c, h, v] = Σ over the window entries (i, j) whose position lands on (h, v):
//   h = y*sh - ph + i*dh  <=>  y = (h + ph - i*dh) / sh, exact and in [0, oh)   (same for v).
// A gather (one thread per input pixel) instead of a scatter (one per cols entry, atomicAdd):
// no atomics, and the sum runs in the CPU's order ((i, j) ascending), so it matches bit for bit.
template <class X, class T>
void col2im_t(const Tensor& cols, const Tensor& x, Window2d w, int64_t oh, int64_t ow) {
  const int64_t C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t s0 = cols.stride(0), s1 = cols.stride(1), s2 = cols.stride(2);
  const T* pc = dptr<const T>(cols);
  T* px = dptr<T>(x);
  X::for_each(
      x.numel(),
      [=] GRADLAB_HD(int64_t idx) {
        const int64_t v = idx % W, h = (idx / W) % H, c = (idx / (H * W)) % C,
                      n = idx / (C * H * W);
        T acc = T(0);
        for (int64_t i = 0; i < w.kh; ++i) {
          const int64_t ty = h + w.ph - i * w.dh;
          if (ty < 0 || ty % w.sh != 0 || ty / w.sh >= oh) continue;
          const int64_t y = ty / w.sh;
          for (int64_t j = 0; j < w.kw; ++j) {
            const int64_t tx = v + w.pw - j * w.dw;
            if (tx < 0 || tx % w.sw != 0 || tx / w.sw >= ow) continue;
            const int64_t x0 = tx / w.sw;
            acc += pc[n * s0 + ((c * w.kh + i) * w.kw + j) * s1 + (y * ow + x0) * s2];
          }
        }
        px[idx] = acc;
      },
      "fold");
}

// One thread per output: the window's max and its flat index into H*W (math::max_pool_window, the
// CPU kernel's loop, so the indices agree exactly).
template <class X, class T>
void max_pool2d_t(const Tensor& x, const Tensor& out, const Tensor& idx_out, Window2d w, int64_t oh,
                  int64_t ow) {
  const int64_t C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t s0 = x.stride(0), s1 = x.stride(1), s2 = x.stride(2), s3 = x.stride(3);
  const T* px = dptr<const T>(x);
  T* po = dptr<T>(out);
  int64_t* pi = dptr<int64_t>(idx_out);
  X::for_each(
      out.numel(),
      [=] GRADLAB_HD(int64_t k) {
        const int64_t x0 = k % ow, y = (k / ow) % oh, p = k / (ow * oh);
        const T* plane = px + (p / C) * s0 + (p % C) * s1;
        const math::PoolMax<T> m = math::max_pool_window(plane, s2, s3, H, W, w, y, x0);
        po[k] = m.value;
        pi[k] = m.index;
      },
      "max_pool2d");
}

// out[i, j] += bias[j]
template <class X, class T>
void add_bias_rows_t(const Tensor& out, const Tensor& bias) {
  const Indexer io = make_indexer(out, "linear");
  const int64_t N = out.size(1), bs = bias.stride(0);
  T* po = dptr<T>(out);
  const T* pb = dptr<const T>(bias);
  X::for_each(
      out.numel(), [=] GRADLAB_HD(int64_t i) { po[io(i)] += pb[(i % N) * bs]; }, "linear");
}

// dx = y > threshold ? grad : 0, with y converted to grad's dtype T first (as cpu::cast does).
template <class X, class T, class S>
void threshold_backward_t(const Tensor& grad, const Tensor& y, const Tensor& dx, T th) {
  const Indexer ig = make_indexer(grad, "threshold_backward"),
                iy = make_indexer(y, "threshold_backward");
  const T* pg = dptr<const T>(grad);
  const S* py = dptr<const S>(y);
  T* pd = dptr<T>(dx);
  X::for_each(
      dx.numel(),
      [=] GRADLAB_HD(int64_t i) { pd[i] = math::threshold_grad(pg[ig(i)], convert<T, S>(py[iy(i)]), th); },
      "threshold_backward");
}

// Target validation, one thread per chunk of kChunk rows: st[3k..3k+2] = (valid rows in the
// chunk, first row whose target is neither ignore_index nor in [0, C) or -1, that target).
// targets_summary_t adds up the few chunk counts: no atomics, no reduction kernel.
inline constexpr int64_t kTargetChunk = 1024;
template <class X>
void check_targets_t(const Tensor& target, const Tensor& status, int64_t C, int64_t ignore_index) {
  const int64_t N = target.size(0), ts = target.stride(0);
  const int64_t* pt = dptr<const int64_t>(target);
  int64_t* ps = dptr<int64_t>(status);
  X::for_each(
      status.size(0),
      [=] GRADLAB_HD(int64_t k) {
        const int64_t end = (k + 1) * kTargetChunk < N ? (k + 1) * kTargetChunk : N;
        int64_t valid = 0, bad = -1, bad_value = 0;
        for (int64_t r = k * kTargetChunk; r < end; ++r) {
          const int64_t t = pt[r * ts];
          if (t == ignore_index) continue;
          if (t < 0 || t >= C) {
            bad = r, bad_value = t;
            break;
          }
          ++valid;
        }
        ps[3 * k] = valid, ps[3 * k + 1] = bad, ps[3 * k + 2] = bad_value;
      },
      "cross_entropy");
}

// One thread, after check_targets_t: count = the valid rows and inv = 1 / count, both in T as the
// host rounds them (count 0 gives inv = inf, and a mean of 0 / 0 = NaN, as on the CPU); and the
// first bad target, if any, into the error record while it is empty (chunks are in row order:
// the first chunk with a bad row holds the first bad row). Nothing crosses to the host here.
template <class X, class T>
void targets_summary_t(const Tensor& status, int64_t chunks, int64_t C, int64_t site,
                       cuda_rt::DeviceErrorRecord* rec, const Tensor& count, const Tensor& inv) {
  const int64_t* ps = dptr<const int64_t>(status);
  T* pc = dptr<T>(count);
  T* pv = dptr<T>(inv);
  X::for_each(
      1,
      [=] GRADLAB_HD(int64_t) {
        int64_t valid = 0;
        bool bad = false;
        for (int64_t k = 0; k < chunks; ++k) {
          valid += ps[3 * k];
          if (bad || ps[3 * k + 1] < 0) continue;
          bad = true;
          if (rec->set) continue;
          rec->site = site;
          rec->pos = ps[3 * k + 1];
          rec->value = ps[3 * k + 2];
          rec->bound = C;
          rec->set = 1;
        }
        const double v = static_cast<double>(valid);
        *pc = static_cast<T>(v);
        *pv = static_cast<T>(1.0 / v);
      },
      "cross_entropy");
}

// One thread per row i: math::cross_entropy_row, the CPU kernel's formula.
template <class X, class T>
void cross_entropy_forward_t(const Tensor& x, const Tensor& target, const Tensor& loss,
                             const Tensor& lse, int64_t ignore_index, double smoothing) {
  const int64_t C = x.size(1), xs0 = x.stride(0), xs1 = x.stride(1), ts = target.stride(0);
  const T* px = dptr<const T>(x);
  const int64_t* pt = dptr<const int64_t>(target);
  T* pl = dptr<T>(loss);
  T* pe = dptr<T>(lse);
  X::for_each(
      x.size(0),
      [=] GRADLAB_HD(int64_t i) {
        const int64_t t = pt[i * ts];
        const bool ignored = t == ignore_index;
        // reported through the error record (targets_summary_t); never read out of bounds
        const bool bad = !ignored && (t < 0 || t >= C);
        const math::CrossEntropyRow<T> r =
            math::cross_entropy_row(px + i * xs0, xs1, C, bad ? 0 : t, ignored || bad, smoothing);
        pe[i] = r.lse;
        pl[i] = bad ? std::numeric_limits<T>::quiet_NaN() : r.loss;
      },
      "cross_entropy");
}

// dx[i, c] = math::cross_entropy_grad (s = s_i), 0 rows where ignored.
// S = the scale's storage type; it is converted to T as cpu::cast would.
template <class X, class T, class S>
void cross_entropy_backward_t(const Tensor& x, const Tensor& lse, const Tensor& target,
                              const Tensor& scale, const Tensor& dx, int64_t ignore_index,
                              double smoothing) {
  const int64_t C = x.size(1), xs0 = x.stride(0), xs1 = x.stride(1), ls = lse.stride(0),
                ts = target.stride(0);
  const bool per_row = scale.dim() == 1;  // [N] (reduction none) or 0-d (mean, sum)
  const int64_t ss = per_row ? scale.stride(0) : 0;
  const T* px = dptr<const T>(x);
  const T* pl = dptr<const T>(lse);
  const int64_t* pt = dptr<const int64_t>(target);
  const S* ps = dptr<const S>(scale);
  T* pd = dptr<T>(dx);
  const T uniform = static_cast<T>(smoothing / static_cast<double>(C));
  const T hit = static_cast<T>(1.0 - smoothing);
  X::for_each(
      dx.numel(),
      [=] GRADLAB_HD(int64_t idx) {
        const int64_t c = idx % C, i = idx / C;
        const int64_t t = pt[i * ts];
        if (t == ignore_index) {
          pd[idx] = T(0);
          return;
        }
        const T s = convert<T, S>(ps[i * ss]);
        pd[idx] = math::cross_entropy_grad(px[i * xs0 + c * xs1], pl[i * ls], c == t, uniform, hit, s);
      },
      "cross_entropy");
}

}  // namespace gradlab::gpu::detail

namespace gradlab::gpu {

template <class X>
Tensor NN<X>::im2col(const Tensor& x, const Window2d& w) {
  Tensor cols;
  detail::visit_float_window(x.dtype(), "unfold", [&]<class T>() {
    const int64_t oh = w.out_h(x.size(2)), ow = w.out_w(x.size(3));
    cols = make_tensor({x.size(0), x.size(1) * w.kh * w.kw, oh * ow}, x.dtype(), x.device());
    detail::im2col_t<X, T>(x, cols, w, oh, ow);
  });
  return cols;
}

template <class X>
Tensor NN<X>::col2im(const Tensor& cols, int64_t C, int64_t H, int64_t W, const Window2d& w) {
  Tensor x;
  detail::visit_float_window(cols.dtype(), "fold", [&]<class T>() {
    x = make_tensor({cols.size(0), C, H, W}, cols.dtype(), cols.device());
    detail::col2im_t<X, T>(cols, x, w, w.out_h(H), w.out_w(W));
  });
  return x;
}

template <class X>
std::pair<Tensor, Tensor> NN<X>::max_pool2d(const Tensor& x, const Window2d& w) {
  Tensor out, idx;
  detail::visit_float_window(x.dtype(), "max_pool2d", [&]<class T>() {
    const int64_t oh = w.out_h(x.size(2)), ow = w.out_w(x.size(3));
    out = make_tensor({x.size(0), x.size(1), oh, ow}, x.dtype(), x.device());
    idx = make_tensor({x.size(0), x.size(1), oh, ow}, kInt64, x.device());
    detail::max_pool2d_t<X, T>(x, out, idx, w, oh, ow);
  });
  return {out, idx};
}

template <class X>
void NN<X>::add_bias_rows_(Tensor& out, const Tensor& bias) {
  detail::visit_float_rows(out.dtype(), "linear",
                           [&]<class T>() { detail::add_bias_rows_t<X, T>(out, bias); });
}

template <class X>
Tensor NN<X>::threshold_backward(const Tensor& grad, const Tensor& y, double threshold) {
  Tensor dx;
  detail::visit_float_rows(grad.dtype(), "threshold_backward", [&]<class T>() {
    dx = make_tensor(grad.sizes(), grad.dtype(), grad.device());
    visit_storage_dtype(y.dtype(), [&]<class S>() {
      detail::threshold_backward_t<X, T, S>(grad, y, dx, static_cast<T>(threshold));
    });
  });
  return dx;
}

template <class X>
CrossEntropyForward NN<X>::cross_entropy_forward(const Tensor& logits, const Tensor& target,
                                                 int64_t ignore_index, double smoothing) {
  const int64_t N = logits.size(0), C = logits.size(1);
  CrossEntropyForward r;
  r.valid = -1;  // on the device only: r.valid_count
  // NOTE: the dtype is checked before anything is queued, so a rejected call leaves no check
  // behind to be raised later.
  detail::visit_float_rows(logits.dtype(), "cross_entropy", [&]<class T>() {
    // Targets: the counts and the first bad one stay on the device (runtime.hpp); the forward
    // kernel gives a bad row NaN without reading through it.
    const int64_t chunks = (N + detail::kTargetChunk - 1) / detail::kTargetChunk;
    Tensor status = make_tensor({chunks, 3}, kInt64, logits.device());
    if (chunks > 0) detail::check_targets_t<X>(target, status, C, ignore_index);
    r.valid_count = make_tensor(Shape{}, logits.dtype(), logits.device());
    r.inv_valid = make_tensor(Shape{}, logits.dtype(), logits.device());
    detail::targets_summary_t<X, T>(status, chunks, C,
                                    cuda_rt::error_site("cross_entropy", cuda_rt::CheckKind::Target),
                                    cuda_rt::device_error_record("cross_entropy"), r.valid_count,
                                    r.inv_valid);
    cuda_rt::check_queued("cross_entropy");
    r.loss = make_tensor({N}, logits.dtype(), logits.device());
    r.lse = make_tensor({N}, logits.dtype(), logits.device());
    detail::cross_entropy_forward_t<X, T>(logits, target, r.loss, r.lse, ignore_index, smoothing);
  });
  return r;
}

template <class X>
Tensor NN<X>::cross_entropy_backward(const Tensor& logits, const Tensor& lse, const Tensor& target,
                                     int64_t ignore_index, double smoothing,
                                     const Tensor& row_scale) {
  Tensor dx;
  detail::visit_float_rows(logits.dtype(), "cross_entropy", [&]<class T>() {
    GRADLAB_CHECK(lse.dtype() == logits.dtype(), DTypeError, "cross_entropy",
                  "logsumexp dtype differs from the logits", to_string(logits.dtype()),
                  to_string(lse.dtype()));
    dx = make_tensor(logits.sizes(), logits.dtype(), logits.device());
    visit_storage_dtype(row_scale.dtype(), [&]<class S>() {
      detail::cross_entropy_backward_t<X, T, S>(logits, lse, target, row_scale, dx, ignore_index,
                                                smoothing);
    });
  });
  return dx;
}

}  // namespace gradlab::gpu

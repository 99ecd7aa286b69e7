// Kernels of the fused nn primitives (ops/nn_ops.cpp): linear's bias add and column sum, and
// cross-entropy on logits (forward: per-row loss and logsumexp; backward: softmax minus the
// target distribution). Contiguous float32/float64 rows; one pass per row, rows split over
// threads (each row's arithmetic is the same on any thread: the bits do not depend on the count).

#include "gradlab/backend/math/nn.hpp"

#include <cmath>
#include <limits>

#include "gradlab/backend/cpu/cpu.hpp"
#include "gradlab/backend/cpu/loops.hpp"
#include "gradlab/backend/cpu/parallel.hpp"
#include "gradlab/backend/cpu/vec/vec.hpp"
#include "gradlab/core/half.hpp"

namespace gradlab::cpu {

namespace {

template <class F>
void visit_float(ScalarType dt, const char* op, F&& f) {
  if (dt == kFloat32) return f.template operator()<float>();
  if (dt == kFloat64) return f.template operator()<double>();
  throw DTypeError(
      error_message(op, "expected a floating point tensor", "float32 or float64", to_string(dt)));
}

// Reinterprets a fresh contiguous [1, M, N] result as [M, N].
Tensor drop_batch_dim(Tensor c) {
  TensorImpl* impl = c.impl();
  impl->sizes.erase(impl->sizes.begin());
  impl->strides.erase(impl->strides.begin());
  return c;
}

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b) {
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  Tensor a3 = make_view(a, {1, M, K}, {0, a.stride(0), a.stride(1)}, a.storage_offset());
  Tensor b3 = make_view(b, {1, K, N}, {0, b.stride(0), b.stride(1)}, b.storage_offset());
  return drop_batch_dim(bmm(a3, b3));
}

void add_bias_rows_(Tensor& out, const Tensor& bias_in) {
  Tensor bias = contiguous(bias_in);
  const int64_t M = out.size(0), N = out.size(1);
  visit_float(out.dtype(), "linear", [&]<class T>() {
    T* o = ptr<T>(out);
    const T* b = ptr<const T>(bias);
    parallel_for(0, M, std::max<int64_t>(1, kGrain / std::max<int64_t>(N, 1)),
                 [&](int64_t i0, int64_t i1) {
                   for (int64_t i = i0; i < i1; ++i)
                     for (int64_t j = 0; j < N; ++j) o[i * N + j] += b[j];
                 });
  });
}

// bfloat16 relu and its gradient in one pass over the 16-bit data (no float32 copies): each
// element widened, math's float32 formula, rounded back, so bit for bit what the float32 kernel
// on widened copies gives (for the gradient the select returns dy itself or +0: the rounding
// changes nothing but a signalling NaN's quiet bit, as there). The level's vector code
// (vec::Kernels::bf16_threshold_grad / bf16_relu, 16 lanes at AVX-512) does the bulk of each
// range, core/half.hpp's conversions the tail.
Tensor threshold_backward_bf16(const Tensor& grad_in, const Tensor& y_in, double threshold) {
  const Tensor g = contiguous(grad_in), y = contiguous(y_in);
  Tensor dx = make_tensor(g.sizes(), kBFloat16);
  const BFloat16* pg = ptr<const BFloat16>(g);
  const BFloat16* py = ptr<const BFloat16>(y);
  BFloat16* d = ptr<BFloat16>(dx);
  const float th = static_cast<float>(threshold);
  const vec::Kernels& k = vec::kernels();
  parallel_elements(g.numel(), [&](int64_t b, int64_t e) {
    const int64_t m = b + k.bf16_threshold_grad(&pg[b].bits, &py[b].bits, &d[b].bits, e - b, th);
    for (int64_t i = m; i < e; ++i)
      d[i] = bf16_from_float(math::threshold_grad(bf16_to_float(pg[i]), bf16_to_float(py[i]), th));
  });
  return dx;
}

Tensor relu_bf16(const Tensor& x_in) {
  const Tensor x = contiguous(x_in);
  Tensor y = make_tensor(x.sizes(), kBFloat16);
  const BFloat16* px = ptr<const BFloat16>(x);
  BFloat16* py = ptr<BFloat16>(y);
  const vec::Kernels& k = vec::kernels();
  parallel_elements(x.numel(), [&](int64_t b, int64_t e) {
    const int64_t m = b + k.bf16_relu(&px[b].bits, &py[b].bits, e - b);
    for (int64_t i = m; i < e; ++i) py[i] = bf16_from_float(math::ReluFn{}(bf16_to_float(px[i]), 0.0f, 0.0f));
  });
  return y;
}

Tensor threshold_backward(const Tensor& grad_in, const Tensor& y_in, double threshold) {
  if (grad_in.dtype() == kBFloat16 && y_in.dtype() == kBFloat16)
    return threshold_backward_bf16(grad_in, y_in, threshold);
  Tensor g = contiguous(grad_in),
         y = contiguous(y_in.dtype() == grad_in.dtype() ? y_in : cast(y_in, grad_in.dtype()));
  Tensor dx = make_tensor(g.sizes(), g.dtype());
  visit_float(g.dtype(), "threshold_backward", [&]<class T>() {
    const T* pg = ptr<const T>(g);
    const T* py = ptr<const T>(y);
    T* d = ptr<T>(dx);
    const T th = static_cast<T>(threshold);
    parallel_elements(g.numel(), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T gv = pg[i], yv = py[i];  // both loaded unconditionally: the select vectorizes
        d[i] = math::threshold_grad(gv, yv, th);
      }
    });
  });
  return dx;
}

Tensor sum_rows(const Tensor& x_in) {
  Tensor x = contiguous(x_in);
  const int64_t M = x.size(0), N = x.size(1);
  Tensor out = make_tensor({N}, x.dtype());
  visit_float(x.dtype(), "sum", [&]<class T>() {
    const T* p = ptr<const T>(x);
    T* o = ptr<T>(out);
    // Columns [j0, j1) per chunk; each column adds its rows in order.
    parallel_for(0, N, std::max<int64_t>(1, kGrain / std::max<int64_t>(M, 1)),
                 [&](int64_t j0, int64_t j1) {
                   for (int64_t j = j0; j < j1; ++j) o[j] = T(0);
                   for (int64_t i = 0; i < M; ++i)
                     for (int64_t j = j0; j < j1; ++j) o[j] += p[i * N + j];
                 });
  });
  return out;
}

CrossEntropyForward cross_entropy_forward(const Tensor& logits_in, const Tensor& target_in,
                                          int64_t ignore_index, double smoothing) {
  Tensor x = contiguous(logits_in), t = contiguous(target_in);
  const int64_t N = x.size(0), C = x.size(1);
  CrossEntropyForward r;
  r.loss = make_tensor({N}, x.dtype());
  r.lse = make_tensor({N}, x.dtype());
  const int64_t* tp = ptr<const int64_t>(t);
  for (int64_t i = 0; i < N; ++i) {
    if (tp[i] == ignore_index) continue;
    if (tp[i] < 0 || tp[i] >= C) {
      throw ShapeError(
          error_message("cross_entropy", "target out of range at position " + std::to_string(i),
                        "a class index in [0, " + std::to_string(C) + ")", std::to_string(tp[i]),
                        "labels must be 0..C-1 for C logits; check the number of classes"));
    }
    ++r.valid;
  }
  visit_float(x.dtype(), "cross_entropy", [&]<class T>() {
    const T* px = ptr<const T>(x);
    T* loss = ptr<T>(r.loss);
    T* lse = ptr<T>(r.lse);
    parallel_for(
        0, N, std::max<int64_t>(1, kGrain / std::max<int64_t>(C, 1)), [&](int64_t i0, int64_t i1) {
          for (int64_t i = i0; i < i1; ++i) {
            const math::CrossEntropyRow<T> row =
                math::cross_entropy_row(px + i * C, 1, C, tp[i], tp[i] == ignore_index, smoothing);
            lse[i] = row.lse;
            loss[i] = row.loss;
          }
        });
  });
  return r;
}

Tensor cross_entropy_backward(const Tensor& logits_in, const Tensor& lse_in,
                              const Tensor& target_in, int64_t ignore_index, double smoothing,
                              const Tensor& row_scale_in) {
  Tensor x = contiguous(logits_in), lse = contiguous(lse_in), t = contiguous(target_in);
  Tensor scale =
      contiguous(row_scale_in.dtype() == x.dtype() ? row_scale_in : cast(row_scale_in, x.dtype()));
  const int64_t N = x.size(0), C = x.size(1);
  const bool per_row = scale.dim() == 1;  // [N] (reduction none) or 0-d (mean, sum)
  Tensor dx = make_tensor({N, C}, x.dtype());
  const int64_t* tp = ptr<const int64_t>(t);
  visit_float(x.dtype(), "cross_entropy", [&]<class T>() {
    const T* px = ptr<const T>(x);
    const T* pl = ptr<const T>(lse);
    const T* ps = ptr<const T>(scale);
    T* d = ptr<T>(dx);
    const T uniform = static_cast<T>(smoothing / static_cast<double>(C));
    const T hit = static_cast<T>(1.0 - smoothing);
    parallel_for(0, N, std::max<int64_t>(1, kGrain / std::max<int64_t>(C, 1)),
                 [&](int64_t i0, int64_t i1) {
                   for (int64_t i = i0; i < i1; ++i) {
                     const T* xi = px + i * C;
                     T* di = d + i * C;
                     if (tp[i] == ignore_index) {
                       for (int64_t c = 0; c < C; ++c) di[c] = T(0);
                       continue;
                     }
                     const T s = per_row ? ps[i] : ps[0];
                     // dloss/dx = softmax(x) - ((1 - ε) onehot(t) + ε / C)
                     for (int64_t c = 0; c < C; ++c)
                       di[c] = math::cross_entropy_grad(xi[c], pl[i], c == tp[i], uniform, hit, s);
                   }
                 });
  });
  return dx;
}

}  // namespace gradlab::cpu

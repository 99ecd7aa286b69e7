// Device dispatch: each kernel runs where its tensors live. On "cuda", the CUDA backend runs on
// the GPU (DeviceExec) or, when the host emulator is on, on the CPU (HostExec).

#include "gradlab/backend/kernels.hpp"

#include <algorithm>
#include <atomic>
#include <vector>

#include "gradlab/backend/cpu/bf16_native.hpp"
#include "gradlab/backend/cpu/optim.hpp"
#include "gradlab/backend/cuda/exec.hpp"
#include "gradlab/backend/cuda/gpu.hpp"
#include "gradlab/backend/cuda/runtime.hpp"
#include "gradlab/core/dispatch.hpp"
#include "gradlab/core/tensor_impl.hpp"

namespace gradlab::kern {

namespace {
// Calls f.template operator()<X>() with the executor that serves CUDA tensors now.
template <class F>
decltype(auto) on_cuda(F&& f) {
#if GRADLAB_HAVE_CUDA
  if (cuda_rt::backend() == cuda_rt::Backend::Device) return f.template operator()<gpu::DeviceExec>();
#endif
  GRADLAB_CHECK(cuda_rt::backend() == cuda_rt::Backend::Emulator, DeviceError, "kernel",
                "a CUDA tensor exists but no CUDA backend is active", "a GPU or the host emulator",
                "none", "do not switch the emulator off while CUDA tensors are alive");
  return f.template operator()<gpu::HostExec>();
}

// ---- float16 / bfloat16 ------------------------------------------------------------------------
// The kernels compute in float32 and float64. A half tensor is widened to float32, the float32
// kernel runs, and a float result is rounded back to the half type (one rounding per op, as
// PyTorch's CPU kernels do through their float "opmath" type). So reductions accumulate in
// float32 and the CPU's matmul / conv (im2col + GEMM) run on float32 BLAS; CUDA matmuls on a GPU
// go to cublasGemmEx instead (half operands, float32 accumulation).
// The exception: where the CPU has AVX-512 BF16 (and oneDNN is built in), bfloat16 matmul and
// convolution run on it directly (cpu/bf16_native.hpp), float32 accumulation inside.
// NOTE: the widened copies are temporaries: they count toward peak memory while the op runs, but
// what an op returns (and what autograd saves) stays in the half type.
bool is_low(const Tensor& t) { return t.defined() && (t.dtype() == kFloat16 || t.dtype() == kBFloat16); }
Tensor wide(const Tensor& t) { return is_low(t) ? cast(t, kFloat32) : t; }
// A 2-D half matrix in float32 for BLAS, in its own layout: a transposed view (strides [1, ld],
// linear's Wᵀ and its backward's dyᵀ) is widened as the row-major matrix under it, with the
// vector conversions, and handed on transposed (BLAS takes it without a copy). wide() would make
// a row-major copy instead, element by element through the strides (6% of a fallback MLP step
// under perf).
Tensor wide_matrix(const Tensor& t) {
  if (!is_low(t) || t.dim() != 2 || t.stride(0) != 1 || t.size(0) <= 1 || t.size(1) <= 1) return wide(t);
  auto transposed = [](const Tensor& m) {  // a raw view: no autograd inside a kernel
    return make_view(m, {m.size(1), m.size(0)}, {m.stride(1), m.stride(0)}, m.impl()->offset);
  };
  return transposed(cast(transposed(t), kFloat32));
}
// A float32 result back in `dt` (bool and int64 results, e.g. comparisons, stay as they are).
Tensor narrow(const Tensor& t, ScalarType dt) { return t.defined() && t.dtype() == kFloat32 ? cast(t, dt) : t; }

// Contiguous CPU half tensors of the ops autocast models run most (relu, its gradient, linear's
// bias) go through the float32 kernel in blocks of kHalfBlock elements: each block is widened,
// computed and rounded back while it is in cache, one pass over the half data instead of three
// passes over float32 copies twice its size. The same result element for element (blocks are
// multiples of every vector width, and the ops are elementwise).
constexpr int64_t kHalfBlock = 65536;
bool blockable(const Tensor& t) { return is_low(t) && !t.is_cuda() && t.is_contiguous() && t.numel() > kHalfBlock; }
Tensor flat_block(const Tensor& t, int64_t start, int64_t len) {
  return make_view(t, {len}, {1}, t.impl()->offset + start);
}
// out = f(start, len) block by block; f returns the float32 result of elements [start, start + len).
template <class F>
Tensor blocked(const Tensor& like, F&& f) {
  Tensor out = make_tensor(like.sizes(), like.dtype());
  for (int64_t s = 0, n = like.numel(); s < n; s += kHalfBlock) {
    const int64_t len = std::min(kHalfBlock, n - s);
    cpu::copy(flat_block(out, s, len), f(s, len));
  }
  return out;
}

// Rows [n0, n1) of dim 0 of t (a raw view: no autograd inside a kernel).
Tensor rows_of(const Tensor& t, int64_t n0, int64_t n1) {
  Shape sz = t.sizes();
  sz[0] = n1 - n0;
  return make_view(t, sz, t.strides(), t.impl()->offset + n0 * t.stride(0));
}
// Per-slice ops (max-pool over images, scatter_add along a dim other than 0) on a contiguous CPU
// half tensor, a few dim-0 slices at a time (about kHalfBlock elements): f(n0, n1) writes the
// float32 results of slices [n0, n1); the same result slice for slice (no slice reads another).
template <class F>
void by_slices(const Tensor& like, F&& f) {
  const int64_t n = like.size(0), per = std::max<int64_t>(1, like.numel() / std::max<int64_t>(n, 1));
  const int64_t step = std::max<int64_t>(1, kHalfBlock / per);
  for (int64_t n0 = 0; n0 < n; n0 += step) f(n0, std::min(n, n0 + step));
}

// The fallback GEMM of half operands (no bf16 instructions, or float16): c [M, N] = a [M, K] @
// b [K, N], both half, c in their type. Widening all of a and rounding all of c makes two
// float32 copies the size of the activations, written to memory and read back (8% of a fallback
// MLP step under perf, on top of the same sgemm the float32 step runs). Instead, in blocks of
// about kGemmBlock float32 elements that stay in cache between the widening, the GEMM's packing
// of them and the rounding:
//   a row-major (x Wᵀ and dy W, M = the batch): b (the weight) is widened once; rows [r0, r1)
//     of a are widened, c's rows [r0, r1) computed by one float32 GEMM over all of K, rounded;
//   a a transposed view and b row-major (dyᵀ x, K = the batch): columns [k0, k1) of a (rows of
//     the matrix under it) and rows [k0, k1) of b are widened, their product added to a float32
//     c, rounded once at the end (partial sums over fixed K blocks: the same for any thread
//     count, within the same bfloat16 bound as one GEMM).
// Block sizes measured on the MLP step of bench_memory: 2^15 and 2^19 elements were slower.
constexpr int64_t kGemmBlock = 1 << 17;  // 512 KiB of float32 (Zen 4's L2: 1 MiB)
Tensor half_mm_fallback(const Tensor& a, const Tensor& b) {
  const ScalarType dt = a.dtype();
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  const int64_t rows = std::max<int64_t>(1, kGemmBlock / std::max<int64_t>({K, N, 1}));
  if (a.stride(1) == 1 && M > rows && K > 0 && N > 0) {
    const Tensor bw = wide_matrix(b);
    Tensor out = make_tensor({M, N}, dt);
    for (int64_t r0 = 0; r0 < M; r0 += rows) {
      const int64_t r1 = std::min(M, r0 + rows);
      cpu::copy(rows_of(out, r0, r1), cpu::mm(wide(rows_of(a, r0, r1)), bw));
    }
    return out;
  }
  const int64_t depth = std::max<int64_t>(1, kGemmBlock / std::max<int64_t>({M, N, 1}));
  if (a.stride(0) == 1 && M > 1 && b.stride(1) == 1 && K > depth && N > 0) {
    Tensor acc;
    for (int64_t k0 = 0; k0 < K; k0 += depth) {
      const int64_t len = std::min(K, k0 + depth) - k0;
      const Tensor ak = make_view(a, {M, len}, {1, a.stride(1)}, a.impl()->offset + k0 * a.stride(1));
      const Tensor part = cpu::mm(wide_matrix(ak), wide(rows_of(b, k0, k0 + len)));
      if (!acc.defined()) acc = part;
      else cpu::binary_(Binary::Add, acc, part);
    }
    return narrow(acc, dt);
  }
  return narrow(cpu::mm(wide_matrix(a), wide_matrix(b)), dt);
}

// uint8 is storage only (kByte images and masks): no kernel computes in it.
void check_computable(const Tensor& t, const char* kernel) {
  GRADLAB_CHECK(!t.defined() || t.dtype() != kUInt8, DTypeError, kernel, "dtype uint8 has no compute kernel",
                "float32, float64, int64 or bool", "uint8", "convert with .to(kFloat32) first (uint8 is storage only)");
}
}  // namespace

#define GRADLAB_ON(dev_tensor, FAMILY, CALL)                                      \
  do {                                                                            \
    if ((dev_tensor).is_cuda())                                                   \
      return on_cuda([&]<class X>() { return gpu::FAMILY<X>::CALL; });            \
    return cpu::CALL;                                                             \
  } while (0)

Tensor unary(Unary op, const Tensor& x, double p0, double p1) {
  check_computable(x, "unary kernel");
  // relu on CPU bfloat16: one pass over the 16-bit data, the same bits (cpu/nn.cpp)
  if (op == Unary::Relu && x.defined() && x.dtype() == kBFloat16 && !x.is_cuda()) return cpu::relu_bf16(x);
  if (op == Unary::Relu && blockable(x))
    return blocked(x, [&](int64_t s, int64_t n) { return cpu::unary(op, wide(flat_block(x, s, n)), p0, p1); });
  if (is_low(x)) return narrow(unary(op, wide(x), p0, p1), x.dtype());
  GRADLAB_ON(x, Elementwise, unary(op, x, p0, p1));
}
Tensor binary(Binary op, const Tensor& a, const Tensor& b) {
  check_computable(a, "binary kernel");
  check_computable(b, "binary kernel");
  if (is_low(a)) return narrow(binary(op, wide(a), wide(b)), a.dtype());
  GRADLAB_ON(a, Elementwise, binary(op, a, b));
}
void binary_(Binary op, const Tensor& out, const Tensor& b) {
  check_computable(out, "binary kernel");
  check_computable(b, "binary kernel");
  if (is_low(out)) {
    Tensor w = wide(out);
    binary_(op, w, wide(b));
    return copy(out, w);
  }
  GRADLAB_ON(out, Elementwise, binary_(op, out, b));
}
void fill(const Tensor& dst, const Scalar& v) { GRADLAB_ON(dst, Elementwise, fill(dst, v)); }
Tensor where(const Tensor& c, const Tensor& a, const Tensor& b) {
  check_computable(a, "where");
  if (is_low(a)) return narrow(where(c, wide(a), wide(b)), a.dtype());
  GRADLAB_ON(a, Elementwise, where(c, a, b));
}

void copy(const Tensor& dst, const Tensor& src) {
  if (dst.device() == src.device()) GRADLAB_ON(dst, Elementwise, copy(dst, src));
  // Across devices: move src's elements, densely and in src's dtype, to dst's device; then a
  // same-device copy does the strides and the dtype conversion there.
  Tensor moved = make_tensor(src.sizes(), src.dtype(), dst.device());
  if (src.is_cuda()) {
    Tensor dense = contiguous(src);
    cuda_rt::copy_to_host(moved.impl()->data(), dense.impl()->data(), static_cast<size_t>(dense.numel()) * element_size(dense.dtype()), "copy (cuda -> cpu)");
  } else {
    Tensor dense = cpu::contiguous(src);
    cuda_rt::copy_from_host(moved.impl()->data(), dense.impl()->data(), static_cast<size_t>(dense.numel()) * element_size(dense.dtype()), "copy (cpu -> cuda)");
  }
  copy(dst, moved);
}

Tensor contiguous(const Tensor& x) {
  if (!x.is_cuda()) return cpu::contiguous(x);
  if (x.is_contiguous()) return x;
  Tensor out = make_tensor(x.sizes(), x.dtype(), x.device());
  copy(out, x);
  return out;
}

Tensor cast(const Tensor& x, ScalarType dtype) {
  if (!x.is_cuda()) return cpu::cast(x, dtype);
  Tensor out = make_tensor(x.sizes(), dtype, x.device());
  copy(out, x);
  return out;
}

Tensor reduce(Reduce op, const Tensor& x, const Dims& dims, bool keepdim) {
  check_computable(x, "reduce");
  if (is_low(x)) return narrow(reduce(op, wide(x), dims, keepdim), x.dtype());  // accumulates in float32
  GRADLAB_ON(x, Reductions, reduce(op, x, dims, keepdim));
}
std::pair<Tensor, Tensor> reduce_index(Reduce op, const Tensor& x, int64_t dim, bool keepdim) {
  if (is_low(x)) {
    auto [v, i] = reduce_index(op, wide(x), dim, keepdim);
    return {narrow(v, x.dtype()), i};
  }
  GRADLAB_ON(x, Reductions, reduce_index(op, x, dim, keepdim));
}
Tensor sum_rows(const Tensor& x) {
  if (blockable(x) && x.dim() == 2) {  // linear's bias gradient: rows in blocks, float32 partial sums
    Tensor acc;
    by_slices(x, [&](int64_t r0, int64_t r1) {
      Tensor part = cpu::sum_rows(wide(rows_of(x, r0, r1)));
      if (!acc.defined()) acc = part;
      else cpu::binary_(Binary::Add, acc, part);
    });
    return narrow(acc, x.dtype());
  }
  if (is_low(x)) return narrow(sum_rows(wide(x)), x.dtype());
  GRADLAB_ON(x, Reductions, sum_rows(x));
}

Tensor bmm(const Tensor& a, const Tensor& b) {
#if GRADLAB_HAVE_CUDA
  // On a GPU, half operands go to cublasGemmEx as they are (float32 accumulation in cuBLAS).
  if (is_low(a) && a.is_cuda() && cuda_rt::backend() == cuda_rt::Backend::Device)
    return gpu::Blas<gpu::DeviceExec>::bmm(a, b);
#endif
  if (is_low(a) && !a.is_cuda())
    if (Tensor r = cpu::bf16::bmm(a, b); r.defined()) return r;
  if (is_low(a)) return narrow(bmm(wide(a), wide(b)), a.dtype());
  GRADLAB_ON(a, Blas, bmm(a, b));
}
Tensor mm(const Tensor& a, const Tensor& b) {
  if (is_low(a) && !a.is_cuda()) {
    // [M, K] @ [K, N] as a batch of one (views, no copy) on the bf16 instructions, else float32
    Tensor a3 = make_view(a, {1, a.size(0), a.size(1)}, {0, a.stride(0), a.stride(1)}, a.impl()->offset);
    Tensor b3 = make_view(b, {1, b.size(0), b.size(1)}, {0, b.stride(0), b.stride(1)}, b.impl()->offset);
    if (Tensor c = cpu::bf16::bmm(a3, b3); c.defined()) {
      Tensor r = make_view(c, {a.size(0), b.size(1)}, {c.stride(1), c.stride(2)}, c.impl()->offset);
      r.impl()->view_base = nullptr;  // a new tensor, not a view (see below)
      return r;
    }
    return half_mm_fallback(a, b);
  }
  if (!a.is_cuda()) return cpu::mm(a, b);
  // [M, K] @ [K, N] as a batch of one (views, no copy)
  Tensor a3 = make_view(a, {1, a.size(0), a.size(1)}, {0, a.stride(0), a.stride(1)}, a.impl()->offset);
  Tensor b3 = make_view(b, {1, b.size(0), b.size(1)}, {0, b.stride(0), b.stride(1)}, b.impl()->offset);
  Tensor c = bmm(a3, b3);
  Tensor r = make_view(c, {a.size(0), b.size(1)}, {c.stride(1), c.stride(2)}, c.impl()->offset);
  // NOTE: c is private to this call: the result is a new tensor, not a view (an in-place op on a
  // view under autograd goes through CopySlices, which an op's output should not).
  r.impl()->view_base = nullptr;
  return r;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  if (is_low(x)) return narrow(gather(wide(x), dim, index), x.dtype());
  GRADLAB_ON(x, Indexing, gather(x, dim, index));
}
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  // max-pool's backward: [N, C, HW] along dim 2, image by image in cache
  if (blockable(self) && dim != 0 && self.dim() > 1 && index.size(0) == self.size(0) &&
      src.size(0) == self.size(0) && src.dtype() == self.dtype() && !index.is_cuda() && !src.is_cuda()) {
    Tensor out = make_tensor(self.sizes(), self.dtype());
    by_slices(self, [&](int64_t n0, int64_t n1) {
      cpu::copy(rows_of(out, n0, n1), cpu::scatter_add(wide(rows_of(self, n0, n1)), dim, rows_of(index, n0, n1),
                                                       wide(rows_of(src, n0, n1))));
    });
    return out;
  }
  if (is_low(self)) return narrow(scatter_add(wide(self), dim, index, wide(src)), self.dtype());
  GRADLAB_ON(self, Indexing, scatter_add(self, dim, index, src));
}
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  if (is_low(x)) return narrow(index_select(wide(x), dim, index), x.dtype());
  GRADLAB_ON(x, Indexing, index_select(x, dim, index));
}
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  if (is_low(self)) return narrow(index_add(wide(self), dim, index, wide(src)), self.dtype());
  GRADLAB_ON(self, Indexing, index_add(self, dim, index, src));
}
void check_indices(const Tensor& index, int64_t size, const char* op) {
  GRADLAB_ON(index, Indexing, check_indices(index, size, op));
}

Tensor im2col(const Tensor& x, const Window2d& w) {
  if (is_low(x)) return narrow(kern::im2col(wide(x), w), x.dtype());
  GRADLAB_ON(x, NN, im2col(x, w));
}
Tensor col2im(const Tensor& cols, int64_t C, int64_t H, int64_t W, const Window2d& w) {
  if (is_low(cols)) return narrow(kern::col2im(wide(cols), C, H, W, w), cols.dtype());
  GRADLAB_ON(cols, NN, col2im(cols, C, H, W, w));
}
std::pair<Tensor, Tensor> max_pool2d(const Tensor& x, const Window2d& w) {
  if (blockable(x) && x.dim() == 4) {  // image by image in cache (the indices are per plane)
    Tensor y, idx;
    by_slices(x, [&](int64_t n0, int64_t n1) {
      auto [v, i] = cpu::max_pool2d(wide(rows_of(x, n0, n1)), w);
      if (!y.defined()) {
        Shape ys = v.sizes();
        ys[0] = x.size(0);
        y = make_tensor(ys, x.dtype()), idx = make_tensor(ys, i.dtype());
      }
      cpu::copy(rows_of(y, n0, n1), v);
      cpu::copy(rows_of(idx, n0, n1), i);
    });
    return {y, idx};
  }
  if (is_low(x)) {
    auto [v, i] = kern::max_pool2d(wide(x), w);
    return {narrow(v, x.dtype()), i};
  }
  GRADLAB_ON(x, NN, max_pool2d(x, w));
}
namespace {
void check_conv_cpu(const Tensor& t) {
  GRADLAB_CHECK(!t.is_cuda(), DeviceError, "conv2d", "the fast convolution runs on the CPU only",
                "a CPU tensor", "a CUDA tensor", "CUDA convolutions take the unfold + matmul path");
}
}  // namespace
Tensor max_pool2d_backward(const Tensor& dy, const Tensor& idx, int64_t H, int64_t W) {
  GRADLAB_CHECK(!dy.is_cuda(), DeviceError, "max_pool2d_backward", "this kernel runs on the CPU only",
                "a CPU tensor", "a CUDA tensor", "CUDA takes scatter_add (ops/internal/nn_ops.hpp)");
  // a few images at a time in cache (the indices are per plane): dx is 4x dy here, in float32
  // 8x, widened and rounded whole it made two passes over memory
  if (is_low(dy) && dy.dim() == 4 && idx.dim() == 4 && dy.is_contiguous() && idx.is_contiguous() &&
      idx.size(0) == dy.size(0) && dy.size(0) > 1 && dy.size(0) * dy.size(1) * H * W > kHalfBlock) {
    const int64_t n = dy.size(0), step = std::max<int64_t>(1, kHalfBlock / std::max<int64_t>(1, dy.size(1) * H * W));
    Tensor dx = make_tensor({n, dy.size(1), H, W}, dy.dtype());
    for (int64_t n0 = 0; n0 < n; n0 += step) {
      const int64_t n1 = std::min(n, n0 + step);
      cpu::copy(rows_of(dx, n0, n1), cpu::max_pool2d_backward(wide(rows_of(dy, n0, n1)), rows_of(idx, n0, n1), H, W));
    }
    return dx;
  }
  if (is_low(dy)) return narrow(cpu::max_pool2d_backward(wide(dy), idx, H, W), dy.dtype());
  return cpu::max_pool2d_backward(dy, idx, H, W);
}
// Half operands (autocast's conv2d): bfloat16 on the CPU's bf16 instructions where it has them,
// else widened to float32 for the float32 fast path and the result rounded back once, a few
// images at a time (conv_by_images) so that the widened input, the primitive's layout reorders
// and the float32 result stay in cache. Images are independent in the forward and data
// directions (the same sums per image); the weight gradient sums its per-chunk float32 results
// in chunk order (fixed chunks: the same for any thread count).
constexpr int64_t kConvBlock = 1 << 17;  // float32 elements of a chunk's input or output (2^15 to 2^18 measured alike)
template <class F>
void conv_by_images(const Conv2dGeom& g, F&& f) {
  const int64_t per = std::max<int64_t>({g.C * g.H * g.W, g.O * g.oh * g.ow, 1});
  const int64_t step = std::max<int64_t>(1, kConvBlock / per);
  for (int64_t n0 = 0; n0 < g.N; n0 += step) {
    Conv2dGeom gc = g;
    gc.N = std::min(g.N, n0 + step) - n0;
    f(n0, n0 + gc.N, gc);
  }
}
Tensor conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dGeom& g) {
  check_conv_cpu(x);
  if (is_low(x)) {
    if (Tensor r = cpu::bf16::conv2d_forward(x, weight, bias, g); r.defined()) return r;
    const Tensor w = wide(weight), b = wide(bias);
    Tensor y = make_tensor({g.N, g.O, g.oh, g.ow}, x.dtype());
    conv_by_images(g, [&](int64_t n0, int64_t n1, const Conv2dGeom& gc) {
      cpu::copy(rows_of(y, n0, n1), cpu::conv2d_forward(wide(rows_of(x, n0, n1)), w, b, gc));
    });
    return y;
  }
  return cpu::conv2d_forward(x, weight, bias, g);
}
// db for a half dy, a few images at a time: each chunk widened and its rows added to float64
// totals per channel (cpu::conv2d_bias_sums), in image order across chunks, so the result is
// exactly the float32 kernel's on the whole widened dy, rounded once, for any chunking.
Tensor half_bias_grad(const Tensor& dy, const std::vector<double>& totals) {
  Tensor db = make_tensor({dy.size(1)}, kFloat32);
  float* p = reinterpret_cast<float*>(db.impl()->data());
  for (size_t o = 0; o < totals.size(); ++o) p[o] = static_cast<float>(totals[o]);
  return narrow(db, dy.dtype());
}
// The float32 fallback of a half dy (conv_by_images): each chunk of dy widened once serves the
// gradients asked for: dx when weight is defined (plus b_dx, conv_transpose2d's bias, on every
// dx[n, c]), dW when x is, db when need_bias. dW sums the chunks' float32 results in chunk order;
// with no images it is the kernel's zeros.
Conv2dGrads widened_conv_grads(const Tensor& x, const Tensor& weight, const Tensor& b_dx, const Tensor& dy,
                               const Conv2dGeom& g, bool need_bias) {
  const Tensor w = wide(weight), b = wide(b_dx);
  Tensor dx = weight.defined() ? make_tensor({g.N, g.C, g.H, g.W}, dy.dtype()) : Tensor(), dw;
  std::vector<double> totals(need_bias ? static_cast<size_t>(g.O) : 0, 0.0);
  conv_by_images(g, [&](int64_t n0, int64_t n1, const Conv2dGeom& gc) {
    const Tensor dyc = wide(rows_of(dy, n0, n1));  // [n1 - n0, O, oh, ow] float32, in cache
    if (dx.defined()) cpu::copy(rows_of(dx, n0, n1), cpu::conv2d_backward_input(dyc, w, b, gc));
    if (x.defined()) {
      Tensor part = cpu::conv2d_backward_weight(wide(rows_of(x, n0, n1)), dyc, gc);
      if (!dw.defined()) dw = part;
      else cpu::binary_(Binary::Add, dw, part);
    }
    if (need_bias) cpu::conv2d_bias_sums(dyc, totals.data());
  });
  if (x.defined() && !dw.defined()) dw = cpu::conv2d_backward_weight(wide(x), wide(dy), g);  // no images: zeros
  return {dx, x.defined() ? narrow(dw, x.dtype()) : Tensor(), need_bias ? half_bias_grad(dy, totals) : Tensor()};
}
Tensor conv2d_backward_input(const Tensor& dy, const Tensor& weight, const Tensor& bias,
                             const Conv2dGeom& g) {
  check_conv_cpu(dy);
  if (is_low(dy)) {
    if (Tensor r = cpu::bf16::conv2d_backward_input(dy, weight, bias, g); r.defined()) return r;
    return widened_conv_grads(Tensor(), weight, bias, dy, g, false).dx;
  }
  return cpu::conv2d_backward_input(dy, weight, bias, g);
}
Tensor conv2d_backward_weight(const Tensor& x, const Tensor& dy, const Conv2dGeom& g) {
  check_conv_cpu(x);
  if (is_low(x)) {
    if (Tensor r = cpu::bf16::conv2d_backward_weight(x, dy, g); r.defined()) return r;
    return widened_conv_grads(x, Tensor(), Tensor(), dy, g, false).dw;
  }
  return cpu::conv2d_backward_weight(x, dy, g);
}
Tensor conv2d_backward_bias(const Tensor& dy) {
  check_conv_cpu(dy);
  if (is_low(dy) && dy.dim() == 4) {
    std::vector<double> totals(static_cast<size_t>(dy.size(1)), 0.0);
    if (dy.size(0) > 0)
      by_slices(dy, [&](int64_t n0, int64_t n1) { cpu::conv2d_bias_sums(wide(rows_of(dy, n0, n1)), totals.data()); });
    return half_bias_grad(dy, totals);
  }
  if (is_low(dy)) return narrow(cpu::conv2d_backward_bias(wide(dy)), dy.dtype());
  return cpu::conv2d_backward_bias(dy);
}
// All three gradients of conv2d from one dy. A half dy on the fallback is widened once per chunk
// of images and that float32 chunk serves dx, dW and db (separately, each widened it again: 3
// passes over dy, ~6% of a fallback CNN step under perf): widened_conv_grads, the path
// conv2d_backward_input / _weight take for one gradient, so the bits are theirs.
Conv2dGrads conv2d_backward(const Tensor& x, const Tensor& weight, const Tensor& dy, const Conv2dGeom& g,
                            bool need_bias) {
  check_conv_cpu(dy);
  const bool fallback = is_low(dy) && dy.dim() == 4 && !(dy.dtype() == kBFloat16 && cpu::bf16::native());
  if (!fallback)
    return {weight.defined() ? kern::conv2d_backward_input(dy, weight, Tensor(), g) : Tensor(),
            x.defined() ? kern::conv2d_backward_weight(x, dy, g) : Tensor(),
            need_bias ? kern::conv2d_backward_bias(dy) : Tensor()};
  return widened_conv_grads(x, weight, Tensor(), dy, g, need_bias);
}
void add_bias_rows_(Tensor& out, const Tensor& bias) {
  if (blockable(out) && out.dim() == 2 && out.size(1) > 0) {  // in place, whole rows per block
    const Tensor b = wide(bias);
    const int64_t M = out.size(0), N = out.size(1), rows = std::max<int64_t>(1, kHalfBlock / N);
    for (int64_t r = 0; r < M; r += rows) {
      Tensor blk = make_view(out, {std::min(rows, M - r), N}, {N, 1}, out.impl()->offset + r * N);
      Tensor w = wide(blk);
      cpu::add_bias_rows_(w, b);
      cpu::copy(blk, w);
    }
    return;
  }
  if (is_low(out)) {
    Tensor w = wide(out);
    add_bias_rows_(w, wide(bias));
    return copy(out, w);
  }
  GRADLAB_ON(out, NN, add_bias_rows_(out, bias));
}
Tensor threshold_backward(const Tensor& grad, const Tensor& y, double threshold) {
  // relu's gradient on CPU bfloat16: one pass over the 16-bit data, the same bits (cpu/nn.cpp)
  if (grad.defined() && grad.dtype() == kBFloat16 && y.defined() && y.dtype() == kBFloat16 && !grad.is_cuda() &&
      !y.is_cuda())
    return cpu::threshold_backward(grad, y, threshold);
  if (blockable(grad) && y.is_contiguous() && y.dtype() == grad.dtype() && !y.is_cuda())
    return blocked(grad, [&](int64_t s, int64_t n) {
      return cpu::threshold_backward(wide(flat_block(grad, s, n)), wide(flat_block(y, s, n)), threshold);
    });
  if (is_low(grad)) return narrow(threshold_backward(wide(grad), wide(y), threshold), grad.dtype());
  GRADLAB_ON(grad, NN, threshold_backward(grad, y, threshold));
}
CrossEntropyForward cross_entropy_forward(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                                          double smoothing) {
  if (is_low(logits)) {  // logsumexp in float32; the per-row losses rounded once
    CrossEntropyForward r = cross_entropy_forward(wide(logits), target, ignore_index, smoothing);
    // valid_count / inv_valid (CUDA only) are 0-d tensors of the logits' dtype too.
    auto low = [&](const Tensor& t) { return t.defined() ? narrow(t, logits.dtype()) : Tensor(); };
    return {low(r.loss), low(r.lse), r.valid, low(r.valid_count), low(r.inv_valid)};
  }
  GRADLAB_ON(logits, NN, cross_entropy_forward(logits, target, ignore_index, smoothing));
}
Tensor cross_entropy_backward(const Tensor& logits, const Tensor& lse, const Tensor& target, int64_t ignore_index,
                              double smoothing, const Tensor& row_scale) {
  if (is_low(logits))
    return narrow(cross_entropy_backward(wide(logits), wide(lse), target, ignore_index, smoothing, wide(row_scale)),
                  logits.dtype());
  GRADLAB_ON(logits, NN, cross_entropy_backward(logits, lse, target, ignore_index, smoothing, row_scale));
}

#undef GRADLAB_ON

// core's own functions (factories, to_vector) reach copy and fill through core/dispatch.hpp.
const bool kCoreKernelsRegistered = (dispatch::set_core_kernels({&copy, &fill}), true);

}  // namespace gradlab::kern

// ---- fused optimizer updates ------------------------------------------------------------------------
// CUDA: backend/cuda/optim.cuh, any strides. CPU: backend/cpu/optim.cpp, contiguous tensors only
// (anything else: the caller's composite update). Both run math/optim.hpp's lines.

namespace gradlab::kern {

namespace {
std::atomic<bool> g_cpu_fused_step{true};

bool same_float_cuda(const Tensor& p, const Tensor& t) {
  return t.defined() && t.is_cuda() && t.device() == p.device() && t.dtype() == p.dtype() && t.sizes() == p.sizes();
}
// t can be written / read beside p by the fused kernel of p's device.
bool fused_operand(const Tensor& p, const Tensor& t) {
  return p.is_cuda() ? same_float_cuda(p, t) : cpu::fused_step_operand(p, t);
}
}  // namespace

bool set_cpu_fused_step(bool on) { return g_cpu_fused_step.exchange(on); }

bool fused_step_supported(const Tensor& p, const Tensor& grad) {
  if (!p.defined() || (p.dtype() != kFloat32 && p.dtype() != kFloat64)) return false;
  if (!p.is_cuda() && !g_cpu_fused_step.load(std::memory_order_relaxed)) return false;
  return fused_operand(p, p) && fused_operand(p, grad);
}

bool sgd_step_(const Tensor& p, const Tensor& grad, const Tensor& momentum_buf, double lr, double momentum,
               double dampening, double weight_decay, bool nesterov, bool first_step) {
  if (!fused_step_supported(p, grad)) return false;
  if (momentum != 0 && !fused_operand(p, momentum_buf)) return false;
  if (!p.is_cuda()) {
    cpu::sgd_step_(p, grad, momentum_buf, lr, momentum, dampening, weight_decay, nesterov, first_step);
    return true;
  }
  on_cuda([&]<class X>() {
    gpu::Optim<X>::sgd_step_(p, grad, momentum_buf, lr, momentum, dampening, weight_decay, nesterov, first_step);
  });
  return true;
}

bool adam_step_(const Tensor& p, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq, double lr,
                double beta1, double beta2, double eps, double weight_decay, double step, bool decoupled) {
  if (!fused_step_supported(p, grad) || !fused_operand(p, exp_avg) || !fused_operand(p, exp_avg_sq)) return false;
  if (!p.is_cuda()) {
    cpu::adam_step_(p, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, step, decoupled);
    return true;
  }
  on_cuda([&]<class X>() {
    gpu::Optim<X>::adam_step_(p, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, step, decoupled);
  });
  return true;
}

// RMSprop and Adagrad: CPU only. A CUDA parameter keeps the composite ops (no kernel in
// backend/cuda/optim.cuh yet), so these return false for it before touching anything.
bool rmsprop_step_(const Tensor& p, const Tensor& grad, const Tensor& square_avg, const Tensor& grad_avg,
                   const Tensor& momentum_buf, double lr, double alpha, double eps, double weight_decay,
                   double momentum, bool centered) {
  if (!fused_step_supported(p, grad) || p.is_cuda() || !fused_operand(p, square_avg)) return false;
  if (centered && !fused_operand(p, grad_avg)) return false;
  if (momentum > 0 && !fused_operand(p, momentum_buf)) return false;
  cpu::rmsprop_step_(p, grad, square_avg, grad_avg, momentum_buf, lr, alpha, eps, weight_decay, momentum, centered);
  return true;
}

bool adagrad_step_(const Tensor& p, const Tensor& grad, const Tensor& sum, double lr, double lr_decay,
                   double weight_decay, double eps, double step) {
  if (!fused_step_supported(p, grad) || p.is_cuda() || !fused_operand(p, sum)) return false;
  cpu::adagrad_step_(p, grad, sum, lr, lr_decay, weight_decay, eps, step);
  return true;
}

}  // namespace gradlab::kern

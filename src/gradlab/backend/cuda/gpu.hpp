#pragma once
// The CUDA backend's kernel families (internal). Each is a class template over the executor X
// (exec.hpp): DeviceExec on a GPU, HostExec under the host emulator. Contracts are those of the
// CPU reference kernel of the same name (backend/cpu/cpu.hpp); the file <family>.cuh beside this
// one holds the kernels, <family>.cu instantiates them for the GPU, emulate.cpp for the emulator.

#include <utility>

#include "gradlab/backend/cpu/cpu.hpp"

namespace gradlab::gpu {

using cpu::Binary;
using cpu::CrossEntropyForward;
using cpu::Reduce;
using cpu::Unary;
using cpu::Window2d;

/// elementwise.cuh — beside backend/cpu/elementwise.cpp
template <class X>
struct Elementwise {
  static Tensor unary(Unary op, const Tensor& x, double p0, double p1);
  static Tensor binary(Binary op, const Tensor& a, const Tensor& b);
  static void binary_(Binary op, const Tensor& out, const Tensor& b);
  /// Same device: strided copy with dtype conversion (half types included).
  static void copy(const Tensor& dst, const Tensor& src);
  static void fill(const Tensor& dst, const Scalar& v);
  static Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
};

/// reduce.cuh — beside backend/cpu/reduce.cpp
template <class X>
struct Reductions {
  static Tensor reduce(Reduce op, const Tensor& x, const Dims& dims, bool keepdim);
  static std::pair<Tensor, Tensor> reduce_index(Reduce op, const Tensor& x, int64_t dim, bool keepdim);
  static Tensor sum_rows(const Tensor& x);
};

/// index.cuh — beside backend/cpu/index.cpp
template <class X>
struct Indexing {
  static Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
  static Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
  static Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
  static Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
  static void check_indices(const Tensor& index, int64_t size, const char* op);
};

/// blas.cuh — beside backend/cpu/blas.cpp (cuBLAS on a GPU; a plain loop under the emulator)
template <class X>
struct Blas {
  static Tensor bmm(const Tensor& a, const Tensor& b);
};

/// nn.cuh — beside backend/cpu/nn.cpp and conv.cpp
template <class X>
struct NN {
  static Tensor im2col(const Tensor& x, const Window2d& w);
  static Tensor col2im(const Tensor& cols, int64_t C, int64_t H, int64_t W, const Window2d& w);
  static std::pair<Tensor, Tensor> max_pool2d(const Tensor& x, const Window2d& w);
  static void add_bias_rows_(Tensor& out, const Tensor& bias);
  static Tensor threshold_backward(const Tensor& grad, const Tensor& y, double threshold);
  static CrossEntropyForward cross_entropy_forward(const Tensor& logits, const Tensor& target,
                                                   int64_t ignore_index, double smoothing);
  static Tensor cross_entropy_backward(const Tensor& logits, const Tensor& lse, const Tensor& target,
                                       int64_t ignore_index, double smoothing, const Tensor& row_scale);
};

struct HostExec;
struct DeviceExec;

}  // namespace gradlab::gpu

namespace gradlab::gpu {

/// optim.cuh — fused optimizer updates, one kernel per parameter and step, running
/// math/optim.hpp's formula (as the CPU's fused loop, backend/cpu/optim.cpp, does; the composite
/// update in optim/optimizers.cpp is the reference for both). p and every state tensor are
/// updated in place; all share p's dtype (float32 or float64), any strides.
template <class X>
struct Optim {
  /// SGD: momentum_buf may be undefined when momentum == 0; first_step writes buf = d.
  static void sgd_step_(const Tensor& p, const Tensor& grad, const Tensor& momentum_buf, double lr, double momentum,
                        double dampening, double weight_decay, bool nesterov, bool first_step);
  /// Adam (decoupled = false: L2 added to the gradient) or AdamW (decoupled = true); `step` is
  /// the already incremented step count. No amsgrad.
  static void adam_step_(const Tensor& p, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                         double lr, double beta1, double beta2, double eps, double weight_decay, double step,
                         bool decoupled);
};

}  // namespace gradlab::gpu

#pragma once
// Tensor: a cheap handle to shared state (storage, sizes, strides, dtype, device, autograd
// metadata). Copying a Tensor copies the handle; views share storage and its version counter.
// The method names mirror LibTorch's at::Tensor.

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "gradlab/core/device.hpp"
#include "gradlab/core/dtype.hpp"
#include "gradlab/core/error.hpp"
#include "gradlab/core/options.hpp"
#include "gradlab/core/scalar.hpp"
#include "gradlab/core/shape.hpp"

namespace gradlab {

class Storage;
struct TensorImpl;
class Tensor;
class Generator;
namespace indexing {
class TensorIndex;
}
namespace autograd {
class Node;
}
using TensorList = std::vector<Tensor>;

/// A hook on a tensor's gradient: return an undefined Tensor to keep the gradient, or a
/// replacement.
using GradHook = std::function<Tensor(const Tensor&)>;

/// The n-d array with autograd that every gradlab function takes and returns.
class Tensor {
 public:
  /// An undefined tensor (`defined()` is false), like a default at::Tensor.
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- metadata -------------------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  const Shape& sizes() const;
  /// Size of one dim (negative dims count from the end).
  int64_t size(int64_t dim) const;
  const Strides& strides() const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const;
  int64_t numel() const;
  ScalarType dtype() const;
  ScalarType scalar_type() const { return dtype(); }
  Device device() const;
  bool is_cpu() const { return device().is_cpu(); }
  bool is_cuda() const { return device().is_cuda(); }
  TensorOptions options() const;
  bool is_contiguous() const;
  bool is_floating_point() const { return gradlab::is_floating_point(dtype()); }
  /// Offset of element 0 in the storage, in elements.
  int64_t storage_offset() const;
  /// True when both tensors view the same buffer.
  bool is_same_storage(const Tensor& other) const;
  /// Number of in-place writes to this tensor's storage (`_version` in PyTorch).
  uint32_t version() const;
  /// Pointer to element 0, for kernels and tests; T must match dtype().
  template <class T>
  T* data_ptr() const;
  /// The value of a one-element tensor.
  template <class T>
  T item() const;
  /// The value of a one-element tensor as a Scalar (LibTorch's x.item(); .toDouble() etc.).
  Scalar item() const;
  /// All elements in row-major order, converted to T (for tests and printing).
  template <class T>
  std::vector<T> to_vector() const;
  /// PyTorch-style text: "tensor([[1., 2.]], grad_fn=<MulBackward0>)".
  std::string str() const;
  /// "[2, 3] float32" for messages.
  std::string describe() const;

  // ---- autograd (defined in autograd/tensor_autograd.cpp) --------------------------------
  bool requires_grad() const;
  /// Marks a leaf as requiring grad (error on a non-leaf turning it off, as in PyTorch).
  const Tensor& requires_grad_(bool r = true) const;
  /// The accumulated gradient (undefined until a backward reaches it).
  const Tensor& grad() const;
  /// The gradient slot itself, to assign or reset it.
  Tensor& mutable_grad() const;
  /// Clears .grad: to none (default, as optimizers do) or to zeros.
  void zero_grad(bool set_to_none = true) const;
  /// Leaves are tensors made by the user (or not requiring grad); only leaves get .grad.
  bool is_leaf() const;
  /// The node that made this tensor, or nullptr for a leaf.
  std::shared_ptr<autograd::Node> grad_fn() const;
  /// Which output of grad_fn this tensor is.
  uint32_t output_nr() const;
  /// Keeps .grad on a non-leaf after backward.
  void retain_grad() const;
  bool retains_grad() const;
  /// Backpropagates from this tensor. A non-scalar needs `gradient`. Errors name `site`.
  void backward(const Tensor& gradient = {}, std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false, Site site = {}) const;
  /// Calls `hook(grad)` when this tensor's gradient is computed; a defined result replaces it.
  /// Returns a handle for remove_hook.
  unsigned register_hook(GradHook hook) const;
  /// Same, for a hook that only looks.
  unsigned register_hook(std::function<void(const Tensor&)> hook) const;
  /// A lambda: one returning a Tensor may replace the gradient, one returning void only looks.
  /// NOTE: without this, a Tensor-returning lambda converts to both std::function overloads.
  template <class F, std::enable_if_t<std::is_invocable_v<F&, const Tensor&>, int> = 0>
  unsigned register_hook(F&& hook) const {
    if constexpr (std::is_void_v<std::invoke_result_t<F&, const Tensor&>>)
      return register_hook(std::function<void(const Tensor&)>(std::forward<F>(hook)));
    else
      return register_hook(GradHook(std::forward<F>(hook)));
  }
  /// On a leaf that requires grad: calls `hook(leaf)` each time backward has accumulated into
  /// leaf.grad (PyTorch's register_post_accumulate_grad_hook; DistributedDataParallel starts its
  /// gradient all-reduce from it). Returns a handle for remove_hook.
  unsigned register_post_accumulate_grad_hook(std::function<void(Tensor&)> hook) const;
  void remove_hook(unsigned handle) const;
  /// Same data, cut from the graph (shares storage and version counter).
  Tensor detach() const;
  /// Cuts this tensor from the graph in place.
  const Tensor& detach_() const;

  // ---- views and copies -----------------------------------------------------------------
  Tensor view(const Shape& shape, Site site = {}) const;
  Tensor reshape(const Shape& shape, Site site = {}) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1, Site site = {}) const;
  Tensor transpose(int64_t d0, int64_t d1, Site site = {}) const;
  /// transpose(0, 1) of a matrix (rank <= 2).
  Tensor t(Site site = {}) const;
  Tensor permute(const Dims& dims, Site site = {}) const;
  /// Elements start, start+step, ... < end along dim (bounds clamp, negatives count from the end).
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1, Site site = {}) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length, Site site = {}) const;
  /// Index `index` of `dim`, removing that dim.
  Tensor select(int64_t dim, int64_t index, Site site = {}) const;
  /// select(0, i)
  Tensor operator[](int64_t i) const;
  Tensor expand(const Shape& shape, Site site = {}) const;
  Tensor expand_as(const Tensor& other, Site site = {}) const;
  Tensor squeeze(Site site = {}) const;
  Tensor squeeze(int64_t dim, Site site = {}) const;
  Tensor unsqueeze(int64_t dim, Site site = {}) const;
  /// Tiles the tensor: x.repeat({2, 1}); repeats.size() >= dim(), extra leading counts add dims.
  Tensor repeat(const Shape& repeats, Site site = {}) const;
  /// `chunks` views along dim, each of ceil(n / chunks) (the last smaller; fewer when n is small).
  TensorList chunk(int64_t chunks, int64_t dim = 0, Site site = {}) const;
  /// Views of `split_size` along dim (the last may be smaller).
  TensorList split(int64_t split_size, int64_t dim = 0, Site site = {}) const;
  /// LibTorch's x.index({Slice(), 0, None, Ellipsis, idx}) (namespace gradlab::indexing, in
  /// <gradlab/core/indexing.hpp>, which gradlab.hpp includes): ints select, Slices slice, None adds a dim, Ellipsis skips the
  /// dims not named, and one int64 tensor picks along its dim (a bool mask alone selects).
  Tensor index(std::initializer_list<indexing::TensorIndex> indices, Site site = {}) const;
  Tensor index(const std::vector<indexing::TensorIndex>& indices, Site site = {}) const;
  Tensor contiguous(Site site = {}) const;
  Tensor clone(Site site = {}) const;
  Tensor to(ScalarType dtype, Site site = {}) const;
  /// A copy on `device` (this tensor when already there); autograd carries gradients back.
  Tensor to(Device device, Site site = {}) const;
  /// to(Device(kCUDA)): throws DeviceError saying why when no GPU is available.
  Tensor cuda(Site site = {}) const;
  /// to(Device(kCPU)).
  Tensor cpu(Site site = {}) const;

  // ---- math (each also a free function in ops/ops.hpp) -----------------------------------
  Tensor add(const Tensor& o, Site site = {}) const;
  Tensor sub(const Tensor& o, Site site = {}) const;
  Tensor mul(const Tensor& o, Site site = {}) const;
  Tensor div(const Tensor& o, Site site = {}) const;
  /// LibTorch's x.add(y, alpha) = x + alpha * y, and the Scalar forms x.add(1.0), x.mul(2).
  Tensor add(const Tensor& o, const Scalar& alpha, Site site = {}) const;
  Tensor sub(const Tensor& o, const Scalar& alpha, Site site = {}) const;
  Tensor add(const Scalar& o, Site site = {}) const;
  Tensor sub(const Scalar& o, Site site = {}) const;
  Tensor mul(const Scalar& o, Site site = {}) const;
  Tensor div(const Scalar& o, Site site = {}) const;
  Tensor neg(Site site = {}) const;
  Tensor pow(const Scalar& exponent, Site site = {}) const;
  Tensor pow(const Tensor& exponent, Site site = {}) const;
  Tensor exp(Site site = {}) const;
  Tensor log(Site site = {}) const;
  Tensor sqrt(Site site = {}) const;
  Tensor abs(Site site = {}) const;
  Tensor sin(Site site = {}) const;
  Tensor cos(Site site = {}) const;
  Tensor tanh(Site site = {}) const;
  Tensor sigmoid(Site site = {}) const;
  Tensor relu(Site site = {}) const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt,
               Site site = {}) const;
  Tensor sum(Site site = {}) const;
  Tensor sum(const Dims& dims, bool keepdim = false, Site site = {}) const;
  /// Sums broadcast dims away so the result has `shape` (which must broadcast to this shape).
  Tensor sum_to_size(const Shape& shape, Site site = {}) const;
  Tensor mean(Site site = {}) const;
  Tensor mean(const Dims& dims, bool keepdim = false, Site site = {}) const;
  Tensor max(Site site = {}) const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false, Site site = {}) const;
  Tensor min(Site site = {}) const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false, Site site = {}) const;
  /// Elementwise with another tensor: x.max(y) is maximum(x, y), as in LibTorch.
  Tensor max(const Tensor& other, Site site = {}) const;
  Tensor min(const Tensor& other, Site site = {}) const;
  /// Running sum along dim: y_i = x_0 + ... + x_i. Integers and bool sum in int64, as in LibTorch.
  Tensor cumsum(int64_t dim, std::optional<ScalarType> dtype = std::nullopt, Site site = {}) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor var(const Dims& dims = {}, int64_t correction = 1, bool keepdim = false,
             Site site = {}) const;
  Tensor std(const Dims& dims = {}, int64_t correction = 1, bool keepdim = false,
             Site site = {}) const;
  Tensor logsumexp(const Dims& dims, bool keepdim = false, Site site = {}) const;
  // LibTorch's one-dim and dtype overloads: x.sum(1), x.mean(-1, true), x.var(1, true, true)
  // (dim, unbiased, keepdim), x.std(false) (unbiased), x.sum(kFloat64), x.logsumexp(1, true).
  Tensor sum(int64_t dim, bool keepdim = false, Site site = {}) const;
  Tensor sum(ScalarType dtype, Site site = {}) const;
  Tensor mean(int64_t dim, bool keepdim = false, Site site = {}) const;
  // NOTE: templates, so that a braced dim list (x.var({1}), x.var({0}, 1)) still picks the Dims
  // overload (a plain bool overload would read {1} as unbiased = true).
  template <class B, std::enable_if_t<std::is_same<B, bool>::value, int> = 0>
  Tensor var(B unbiased, Site site = {}) const {
    return var(Dims{}, unbiased ? 1 : 0, false, site);
  }
  template <class B, std::enable_if_t<std::is_same<B, bool>::value, int> = 0>
  Tensor std(B unbiased, Site site = {}) const {
    return std(Dims{}, unbiased ? 1 : 0, false, site);
  }
  template <class I, std::enable_if_t<std::is_integral<I>::value && !std::is_same<I, bool>::value, int> = 0>
  Tensor var(I dim, bool unbiased = true, bool keepdim = false, Site site = {}) const {
    return var(Dims{static_cast<int64_t>(dim)}, unbiased ? 1 : 0, keepdim, site);
  }
  template <class I, std::enable_if_t<std::is_integral<I>::value && !std::is_same<I, bool>::value, int> = 0>
  Tensor std(I dim, bool unbiased = true, bool keepdim = false, Site site = {}) const {
    return std(Dims{static_cast<int64_t>(dim)}, unbiased ? 1 : 0, keepdim, site);
  }
  Tensor logsumexp(int64_t dim, bool keepdim = false, Site site = {}) const;
  /// p-norm of all elements, or over dims (x.norm(), x.norm(2, 1)).
  Tensor norm(const Scalar& p = 2, Site site = {}) const;
  Tensor norm(const Scalar& p, int64_t dim, bool keepdim = false, Site site = {}) const;
  Tensor norm(const Scalar& p, const Dims& dims, bool keepdim = false, Site site = {}) const;
  /// Bool: every / some element nonzero.
  Tensor all() const;
  Tensor all(int64_t dim, bool keepdim = false) const;
  Tensor any() const;
  Tensor any(int64_t dim, bool keepdim = false) const;
  Tensor mm(const Tensor& o, Site site = {}) const;
  Tensor bmm(const Tensor& o, Site site = {}) const;
  Tensor matmul(const Tensor& o, Site site = {}) const;
  Tensor softmax(int64_t dim, Site site = {}) const;
  Tensor log_softmax(int64_t dim, Site site = {}) const;
  Tensor index_select(int64_t dim, const Tensor& index, Site site = {}) const;
  Tensor gather(int64_t dim, const Tensor& index, Site site = {}) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src, Site site = {}) const;
  Tensor masked_fill(const Tensor& mask, const Scalar& value, Site site = {}) const;
  Tensor gt(const Scalar& o) const;
  Tensor lt(const Scalar& o) const;
  Tensor eq(const Tensor& o) const;
  Tensor eq(const Scalar& o) const;
  Tensor ne(const Tensor& o) const;
  Tensor ne(const Scalar& o) const;

  // ---- in place (bump the version counter) ----------------------------------------------
  const Tensor& add_(const Tensor& o, const Scalar& alpha = 1, Site site = {}) const;
  const Tensor& add_(const Scalar& o, Site site = {}) const;
  const Tensor& sub_(const Tensor& o, const Scalar& alpha = 1, Site site = {}) const;
  const Tensor& sub_(const Scalar& o, Site site = {}) const;
  const Tensor& mul_(const Tensor& o, Site site = {}) const;
  const Tensor& mul_(const Scalar& o, Site site = {}) const;
  const Tensor& div_(const Tensor& o, Site site = {}) const;
  const Tensor& div_(const Scalar& o, Site site = {}) const;
  const Tensor& fill_(const Scalar& v, Site site = {}) const;
  const Tensor& zero_(Site site = {}) const;
  const Tensor& copy_(const Tensor& src, Site site = {}) const;
  const Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt,
                 Site site = {}) const;
  const Tensor& masked_fill_(const Tensor& mask, const Scalar& value, Site site = {}) const;
  /// Indexed assignment: self[index] = values, where index is a bool mask of self's shape or an
  /// int64 list of positions along dim 0. `values` broadcasts to the selected part.
  /// Repeated rows: the last write wins. With accumulate, every write is added (as PyTorch's
  /// index_put_(indices, values, /*accumulate=*/true)); a bool mask has no repeats.
  const Tensor& index_put_(const Tensor& index, const Tensor& values, Site site = {}) const;
  const Tensor& index_put_(const Tensor& index, const Tensor& values, bool accumulate, Site site = {}) const;
  const Tensor& index_put_(const Tensor& index, const Scalar& value, Site site = {}) const;
  /// x.index_put_({Slice(), 1}, v): writes v (broadcast) into x.index({...}).
  const Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& values,
                           Site site = {}) const;
  const Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& value,
                           Site site = {}) const;
  /// Fills with U(from, to) / N(mean, std) draws from `gen` (the default generator when null),
  /// written as copy_ writes (a leaf that requires grad needs NoGradGuard, as for nn::init).
  const Tensor& uniform_(double from = 0, double to = 1, Generator* gen = nullptr, Site site = {}) const;
  const Tensor& normal_(double mean = 0, double std = 1, Generator* gen = nullptr, Site site = {}) const;
  /// Becomes unsqueeze(dim) in place: the same storage, a new shape for every handle to it.
  const Tensor& unsqueeze_(int64_t dim, Site site = {}) const;

  /// The shared state (for gradlab's own internals).
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

 private:
  void check_defined(const char* what) const;
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

/// An operand of a binary operator: a tensor or a number, with the caller's line
/// (operators cannot take a defaulted Site, but the implicit conversion can).
struct Operand {
  Operand(const Tensor& t, Site l = {}) : tensor(&t), site(l) {}  // NOLINT
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  Operand(T v, Site l = {}) : scalar(v), site(l) {}  // NOLINT
  /// A Scalar, as `t + b.item()`.
  Operand(const Scalar& v, Site l = {}) : scalar(v), site(l) {}  // NOLINT
  const Tensor* tensor = nullptr;
  Scalar scalar;
  Site site;
};

/// A number on the left of an operator (`2 * x`), with the caller's line.
struct LeftScalar {
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  LeftScalar(T v, Site l = {}) : scalar(v), site(l) {}  // NOLINT
  LeftScalar(const Scalar& v, Site l = {}) : scalar(v), site(l) {}  // NOLINT
  Scalar scalar;
  Site site;
};

Tensor operator+(const Tensor& a, const Operand& b);
Tensor operator-(const Tensor& a, const Operand& b);
Tensor operator*(const Tensor& a, const Operand& b);
Tensor operator/(const Tensor& a, const Operand& b);
Tensor operator+(const LeftScalar& a, const Tensor& b);
Tensor operator-(const LeftScalar& a, const Tensor& b);
Tensor operator*(const LeftScalar& a, const Tensor& b);
Tensor operator/(const LeftScalar& a, const Tensor& b);
Tensor operator-(const Tensor& a);
/// In place: `x += 1` writes into x's storage (bumps its version); `x = x + 1` makes a new tensor.
Tensor& operator+=(Tensor& a, const Operand& b);
Tensor& operator-=(Tensor& a, const Operand& b);
Tensor& operator*=(Tensor& a, const Operand& b);
Tensor& operator/=(Tensor& a, const Operand& b);
/// Comparisons give bool tensors.
Tensor operator>(const Tensor& a, const Operand& b);
Tensor operator<(const Tensor& a, const Operand& b);
Tensor operator>=(const Tensor& a, const Operand& b);
Tensor operator<=(const Tensor& a, const Operand& b);
Tensor operator==(const Tensor& a, const Operand& b);
Tensor operator!=(const Tensor& a, const Operand& b);
/// Logical not of a bool tensor.
Tensor operator~(const Tensor& a);
Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator|(const Tensor& a, const Tensor& b);

}  // namespace gradlab

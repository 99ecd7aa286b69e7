#include "gradlab/core/tensor.hpp"

#include <cmath>
#include <cstring>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "gradlab/core/dispatch.hpp"
#include "gradlab/core/host_read.hpp"
#include "gradlab/core/tensor_impl.hpp"

namespace gradlab {

Tensor make_tensor(const Shape& shape, ScalarType dtype, Device device) {
  for (auto s : shape)
    GRADLAB_CHECK(s >= 0, ShapeError, "empty", "negative size in shape", "sizes >= 0", shape_str(shape));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(numel_of(shape)) * element_size(dtype), device);
  impl->sizes = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor make_view(const Tensor& base, Shape sizes, Strides strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.impl()->storage;
  impl->offset = offset;
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->dtype = base.dtype();
  // Views of views point at the first base (PyTorch's _base).
  impl->view_base = base.impl()->view_base ? base.impl()->view_base : base.impl_ptr();
  impl->base_history_version = impl->view_base->history_version;
  return Tensor(std::move(impl));
}

void Tensor::check_defined(const char* what) const {
  GRADLAB_CHECK(impl_ != nullptr, ValueError, what, "the tensor is undefined",
                "a defined tensor", "Tensor()", "an undefined tensor has no data or shape; "
                "for .grad(), run backward first");
}

const Shape& Tensor::sizes() const { check_defined("sizes"); return impl_->sizes; }
int64_t Tensor::size(int64_t d) const {
  check_defined("size");
  GRADLAB_CHECK(dim() > 0, ShapeError, "size", "a 0-d tensor has no dims", "a tensor with dims", "shape []");
  return impl_->sizes[wrap_dim(d, dim(), "size")];
}
const Strides& Tensor::strides() const { check_defined("strides"); return impl_->strides; }
int64_t Tensor::stride(int64_t d) const { check_defined("stride"); return impl_->strides[wrap_dim(d, dim(), "stride")]; }
int64_t Tensor::dim() const { check_defined("dim"); return static_cast<int64_t>(impl_->sizes.size()); }
int64_t Tensor::numel() const { check_defined("numel"); return impl_->numel(); }
ScalarType Tensor::dtype() const { check_defined("dtype"); return impl_->dtype; }
Device Tensor::device() const { check_defined("device"); return impl_->storage->device(); }
TensorOptions Tensor::options() const { return TensorOptions().dtype(dtype()).device(device()); }
int64_t Tensor::storage_offset() const { check_defined("storage_offset"); return impl_->offset; }
bool Tensor::is_same_storage(const Tensor& o) const {
  return defined() && o.defined() && impl_->storage == o.impl_->storage;
}
uint32_t Tensor::version() const { check_defined("version"); return impl_->storage->version(); }

bool Tensor::is_contiguous() const {
  check_defined("is_contiguous");
  int64_t expected = 1;
  for (size_t i = impl_->sizes.size(); i-- > 0;) {
    if (impl_->sizes[i] == 1) continue;
    if (impl_->strides[i] != expected) return false;
    expected *= impl_->sizes[i];
  }
  return true;
}

template <class T>
T* Tensor::data_ptr() const {
  check_defined("data_ptr");
  GRADLAB_CHECK(dtype_of<std::remove_const_t<T>>() == dtype(), DTypeError, "data_ptr",
                "element type does not match the tensor", to_string(dtype()),
                to_string(dtype_of<std::remove_const_t<T>>()));
  return reinterpret_cast<T*>(impl_->data());
}
template float* Tensor::data_ptr<float>() const;
template double* Tensor::data_ptr<double>() const;
template int64_t* Tensor::data_ptr<int64_t>() const;
template bool* Tensor::data_ptr<bool>() const;
template const float* Tensor::data_ptr<const float>() const;
template const double* Tensor::data_ptr<const double>() const;
template const int64_t* Tensor::data_ptr<const int64_t>() const;
template const bool* Tensor::data_ptr<const bool>() const;
template uint8_t* Tensor::data_ptr<uint8_t>() const;
template const uint8_t* Tensor::data_ptr<const uint8_t>() const;

namespace {
// The same values in a CPU tensor (a copy from the device for CUDA tensors).
Tensor host_copy(const Tensor& t) {
  if (!t.is_cuda()) return t;
  Tensor h = make_tensor(t.sizes(), t.dtype(), Device(kCPU));
  dispatch::core_kernels("to_vector").copy(h, t);
  return h;
}
}  // namespace

template <class T>
std::vector<T> Tensor::to_vector() const {
  check_defined("to_vector");
  if (detail::host_read_watchers.load(std::memory_order_relaxed) != 0) [[unlikely]]
    detail::notify_host_read("to_vector");
  Tensor c = make_tensor(sizes(), dtype_of<T>(), Device(kCPU));
  dispatch::core_kernels("to_vector").copy(c, host_copy(*this));
  const T* p = reinterpret_cast<const T*>(c.impl()->data());
  return std::vector<T>(p, p + c.numel());
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;

template <>
std::vector<bool> Tensor::to_vector<bool>() const {
  std::vector<int64_t> v = to(kBool).to_vector<int64_t>();
  return std::vector<bool>(v.begin(), v.end());
}

template <class T>
T Tensor::item() const {
  check_defined("item");
  if (detail::host_read_watchers.load(std::memory_order_relaxed) != 0) [[unlikely]]
    detail::notify_host_read("item");
  GRADLAB_CHECK(numel() == 1, ShapeError, "item", "only one-element tensors can be converted to a number",
                "1 element", std::to_string(numel()) + " elements (shape " + shape_str(sizes()) + ")",
                "reduce first (sum, mean) or index one element with select / operator[]");
  if constexpr (std::is_same_v<T, bool>) return to_vector<int64_t>()[0] != 0;
  else return static_cast<T>(to_vector<std::conditional_t<std::is_floating_point_v<T>, double, int64_t>>()[0]);
}
template float Tensor::item<float>() const;
template double Tensor::item<double>() const;
template int64_t Tensor::item<int64_t>() const;
template int Tensor::item<int>() const;
template bool Tensor::item<bool>() const;
Scalar Tensor::item() const {
  check_defined("item");
  if (dtype() == kBool) return Scalar(item<bool>());
  if (dtype() == kInt64) return Scalar(item<int64_t>());
  return Scalar(item<double>());
}

// ---- printing -------------------------------------------------------------------------------

namespace {

struct Formatter {
  bool integral = false;  // all finite values are whole numbers: print "1."
  bool sci = false;
  int width = 0;
  ScalarType dtype;

  std::string fmt(double v) const {
    std::ostringstream os;
    if (dtype == kBool) return v != 0 ? "True" : "False";
    if (dtype == kInt64) {
      os << static_cast<int64_t>(v);
    } else if (std::isnan(v)) {
      os << "nan";
    } else if (std::isinf(v)) {
      os << (v > 0 ? "inf" : "-inf");
    } else if (sci) {
      os << std::scientific << std::setprecision(4) << v;
    } else if (integral) {
      os << std::fixed << std::setprecision(0) << v << ".";
    } else {
      os << std::fixed << std::setprecision(4) << v;
    }
    return os.str();
  }
};

void print_rec(std::ostream& os, const std::vector<double>& v, const Shape& s, size_t d, int64_t off,
               const Strides& st, const Formatter& f, int indent, bool summarize) {
  if (s.empty()) {
    os << f.fmt(v[0]);
    return;
  }
  os << "[";
  const int64_t n = s[d];
  const bool cut = summarize && n > 6;
  for (int64_t i = 0; i < n; ++i) {
    if (cut && i == 3) {
      os << (d + 1 == s.size() ? " ..., " : "...,\n" + std::string(indent + d + 1, ' '));  // PyTorch's " ..."
      i = n - 3;
    }
    if (d + 1 == s.size()) {
      std::string x = f.fmt(v[off + i * st[d]]);
      os << std::string(std::max<int>(0, f.width - static_cast<int>(x.size())), ' ') << x;
    } else {
      print_rec(os, v, s, d + 1, off + i * st[d], st, f, indent, summarize);
    }
    if (i + 1 < n) {
      os << ",";
      if (d + 1 == s.size()) os << " ";
      else os << std::string(s.size() - d - 1, '\n') << std::string(indent + d + 1, ' ');
    }
  }
  os << "]";
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  std::ostringstream os;
  const std::vector<double> v = to_vector<double>();
  Formatter f{.dtype = dtype()};
  bool all_int = true;
  double amax = 0, amin = INFINITY;
  for (double x : v) {
    if (!std::isfinite(x)) continue;
    if (x != std::floor(x)) all_int = false;
    amax = std::max(amax, std::abs(x));
    if (x != 0) amin = std::min(amin, std::abs(x));
  }
  f.integral = all_int;
  // PyTorch's rule over nonzero finite |x|: whole numbers go scientific only above 1e8; others
  // also when the smallest is below 1e-4 or the largest / smallest exceeds 1000.
  f.sci = is_floating_point() && amin != INFINITY &&
          (amax > 1e8 || (!all_int && (amin < 1e-4 || amax / amin > 1e3)));
  for (double x : v) f.width = std::max<int>(f.width, static_cast<int>(f.fmt(x).size()));
  os << "tensor(";
  if (numel() == 0) {
    os << "[]";
    if (dim() > 1) os << ", size=" << shape_str(sizes());
  } else {
    print_rec(os, v, sizes(), 0, 0, contiguous_strides(sizes()), f, 7, numel() > 1000);
  }
  if (is_cuda()) os << ", device='" << device().str() << "'";
  if (dtype() != kFloat32 && dtype() != kInt64 && dtype() != kBool) os << ", dtype=" << to_string(dtype());
  else if (numel() == 0 && dtype() != kFloat32) os << ", dtype=" << to_string(dtype());
  if (auto fn = grad_fn()) os << ", grad_fn=<" << autograd::node_name(*fn) << ">";
  else if (requires_grad()) os << ", requires_grad=True";
  os << ")";
  return os.str();
}

std::string Tensor::describe() const {
  if (!defined()) return "undefined";
  return shape_str(sizes()) + " " + to_string(dtype());
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace gradlab

// ---- the host-read watcher (core/host_read.hpp) ------------------------------------------------

namespace gradlab::detail {

std::atomic<int> host_read_watchers{0};

namespace {
struct Watcher {
  HostReadHook hook = nullptr;
  void* watcher = nullptr;
};
thread_local Watcher t_watcher;
}  // namespace

void set_host_read_hook(HostReadHook hook, void* watcher) { t_watcher = {hook, watcher}; }
void notify_host_read(const char* what) {
  if (t_watcher.hook != nullptr) t_watcher.hook(t_watcher.watcher, what);
}

}  // namespace gradlab::detail

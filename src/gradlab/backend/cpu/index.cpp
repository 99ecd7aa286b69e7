// Index kernels: gather / scatter_add along a dim, index_select / index_add of whole slices.
// Inputs are made contiguous; the loops are written over (outer, dim, inner) coordinates.

#include <cstring>

#include "gradlab/backend/cpu/cpu.hpp"
#include "gradlab/backend/cpu/loops.hpp"

namespace gradlab::cpu {

namespace {
// Sizes before and after `dim`.
std::pair<int64_t, int64_t> outer_inner(const Shape& s, int64_t dim) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
    if (d < dim) outer *= s[d];
    if (d > dim) inner *= s[d];
  }
  return {outer, inner};
}
int64_t size_or_1(const Shape& s, int64_t dim) { return s.empty() ? 1 : s[dim]; }
}  // namespace

void check_indices(const Tensor& index, int64_t size, const char* op) {
  GRADLAB_CHECK(index.dtype() == kInt64, DTypeError, op, "indices must be int64", "int64",
                to_string(index.dtype()), "convert with .to(kInt64)");
  Tensor ic = contiguous(index);
  const int64_t* p = ptr<const int64_t>(ic);
  for (int64_t i = 0; i < ic.numel(); ++i) {
    if (p[i] < 0 || p[i] >= size) {
      throw ShapeError(error_message(op, "index out of range at position " + std::to_string(i),
                                     "an index in [0, " + std::to_string(size) + ")",
                                     std::to_string(p[i]),
                                     "class labels and indices must be smaller than the size of the "
                                     "dim they index"));
    }
  }
}

Tensor gather(const Tensor& x_in, int64_t dim, const Tensor& index_in) {
  Tensor x = contiguous(x_in), index = contiguous(index_in);
  Tensor out = make_tensor(index.sizes(), x.dtype());
  // x may be larger than index in dims other than `dim`: walk x with its own strides.
  const Strides xs = x.strides();
  const Shape is = index.sizes();
  visit_dtype(x.dtype(), "gather", [&]<class T>() {
    const T* px = ptr<const T>(x);
    const int64_t* pi = ptr<const int64_t>(index);
    T* po = ptr<T>(out);
    std::vector<int64_t> coord(is.size(), 0);
    for (int64_t k = 0; k < out.numel(); ++k) {
      int64_t off = 0;
      for (size_t d = 0; d < is.size(); ++d)
        off += (static_cast<int64_t>(d) == dim ? pi[k] : coord[d]) * xs[d];
      po[k] = px[off];
      for (size_t d = is.size(); d-- > 0;) {
        if (++coord[d] < is[d]) break;
        coord[d] = 0;
      }
    }
  });
  return out;
}

Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index_in, const Tensor& src_in) {
  Tensor out = make_tensor(self.sizes(), self.dtype());
  copy(out, self);
  Tensor index = contiguous(index_in), src = contiguous(src_in);
  const Strides os = out.strides(), ss = src.strides();
  const Shape is = index.sizes();
  visit_dtype(self.dtype(), "scatter_add", [&]<class T>() {
    T* po = ptr<T>(out);
    const T* ps = ptr<const T>(src);
    const int64_t* pi = ptr<const int64_t>(index);
    std::vector<int64_t> coord(is.size(), 0);
    for (int64_t k = 0; k < index.numel(); ++k) {
      int64_t off_o = 0, off_s = 0;
      for (size_t d = 0; d < is.size(); ++d) {
        off_o += (static_cast<int64_t>(d) == dim ? pi[k] : coord[d]) * os[d];
        off_s += coord[d] * ss[d];
      }
      if constexpr (std::is_same_v<T, bool>) po[off_o] = po[off_o] || ps[off_s];
      else po[off_o] += ps[off_s];
      for (size_t d = is.size(); d-- > 0;) {
        if (++coord[d] < is[d]) break;
        coord[d] = 0;
      }
    }
  });
  return out;
}

Tensor index_select(const Tensor& x_in, int64_t dim, const Tensor& index_in) {
  Tensor x = contiguous(x_in), index = contiguous(index_in);
  Shape os = x.sizes();
  const int64_t n = index.numel();
  if (!os.empty()) os[dim] = n;
  Tensor out = make_tensor(os, x.dtype());
  if (out.numel() == 0) return out;  // NOTE: an empty tensor's data may be null (memcpy(null) is UB)
  auto [outer, inner] = outer_inner(x.sizes(), dim);
  const int64_t nx = size_or_1(x.sizes(), dim);
  const int64_t* pi = ptr<const int64_t>(index);
  const size_t es = element_size(x.dtype());
  const char* px = x.impl()->data();
  char* po = out.impl()->data();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(po + ((o * n + i) * inner) * es, px + ((o * nx + pi[i]) * inner) * es, inner * es);
  return out;
}

Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index_in, const Tensor& src_in) {
  Tensor out = make_tensor(self.sizes(), self.dtype());
  copy(out, self);
  Tensor index = contiguous(index_in), src = contiguous(src_in);
  auto [outer, inner] = outer_inner(self.sizes(), dim);
  const int64_t n = index.numel(), nself = size_or_1(self.sizes(), dim);
  const int64_t* pi = ptr<const int64_t>(index);
  visit_dtype(self.dtype(), "index_add", [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      throw DTypeError(error_message("index_add", "bool tensors cannot be added", "a number dtype", "bool"));
    } else {
      T* po = ptr<T>(out);
      const T* ps = ptr<const T>(src);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < n; ++i) {
          T* dst = po + (o * nself + pi[i]) * inner;
          const T* s = ps + (o * n + i) * inner;
          for (int64_t j = 0; j < inner; ++j) dst[j] += s[j];
        }
    }
  });
  return out;
}

}  // namespace gradlab::cpu

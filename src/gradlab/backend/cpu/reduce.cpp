// Reductions. The reduced dims are moved last and made contiguous, so every output element is
// the reduction of one contiguous row; reducing leading dims of a contiguous tensor (a bias
// gradient: [N, C] -> [C]) adds whole rows instead, with no copy.
//
// Threads: the bits never depend on the thread count. A row longer than kBlock is reduced in
// fixed blocks of kBlock elements whose partial results are combined left to right, whether the
// blocks ran on one thread or many; rows (and columns of the leading-dims path) are independent.

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "gradlab/backend/cpu/cpu.hpp"
#include "gradlab/backend/cpu/loops.hpp"
#include "gradlab/backend/cpu/parallel.hpp"

namespace gradlab::cpu {

namespace {

template <class T>
using Acc = math::ReduceAcc<T>;

// ⊕ over one contiguous row (n > 0 for max / min). Sums keep 4 interleaved partial sums.
template <class T>
Acc<T> row_reduce(Reduce op, const T* p, int64_t n) {
  if (op == Reduce::Sum) {
    Acc<T> s[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
      for (int k = 0; k < 4; ++k) s[k] += p[i + k];
    for (; i < n; ++i) s[0] += p[i];
    return (s[0] + s[1]) + (s[2] + s[3]);
  }
  Acc<T> m = p[0];
  for (int64_t i = 1; i < n; ++i) m = math::reduce_combine<Acc<T>>(op, m, static_cast<Acc<T>>(p[i]));
  return m;
}

// Elements per block of a long row: fixed, never derived from the thread count.
constexpr int64_t kBlock = 16384;

// ⊕ over one contiguous row of any length: blocks of kBlock, their results combined in order.
// One row that is the whole reduction (a full sum) runs its blocks in parallel.
template <class T>
Acc<T> blocked_reduce(Reduce op, const T* p, int64_t n) {
  if (n <= kBlock) return row_reduce<T>(op, p, n);
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<Acc<T>> part(static_cast<size_t>(blocks));
  parallel_for(0, blocks, kGrain / kBlock, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      part[b] = row_reduce<T>(op, p + b * kBlock, std::min(kBlock, n - b * kBlock));
  });
  Acc<T> r = part[0];
  for (int64_t b = 1; b < blocks; ++b)
    r = op == Reduce::Sum ? r + part[b] : math::reduce_combine<Acc<T>>(op, r, part[b]);
  return r;
}

using math::reduce_name;

// x permuted so that the dims in `dims` come last (order kept), plus the kept sizes.
Tensor move_dims_last(const Tensor& x, const Dims& dims, Shape& kept) {
  Dims perm;
  kept.clear();
  for (int64_t d = 0; d < x.dim(); ++d)
    if (!std::binary_search(dims.begin(), dims.end(), d)) {
      perm.push_back(d);
      kept.push_back(x.size(d));
    }
  for (auto d : dims) perm.push_back(d);
  Shape sizes;
  Strides strides;
  for (auto d : perm) {
    sizes.push_back(x.size(d));
    strides.push_back(x.stride(d));
  }
  return contiguous(make_view(x, sizes, strides, x.storage_offset()));
}

Shape out_shape(const Tensor& x, const Dims& dims, bool keepdim) {
  Shape s;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (std::binary_search(dims.begin(), dims.end(), d)) {
      if (keepdim) s.push_back(1);
    } else {
      s.push_back(x.size(d));
    }
  }
  return s;
}

}  // namespace

Tensor reduce(Reduce op, const Tensor& x, const Dims& dims, bool keepdim) {
  const Shape oshape = out_shape(x, dims, keepdim);
  int64_t reduced = 1;
  for (auto d : dims) reduced *= x.size(d);
  if (reduced == 0 && (op == Reduce::Max || op == Reduce::Min)) {
    throw ShapeError(error_message(reduce_name(op), "cannot reduce over an empty dimension",
                                   "a non-empty reduced dim", "shape " + shape_str(x.sizes()),
                                   "max/min of nothing is undefined; check the size first"));
  }
  Tensor out = make_tensor(oshape, x.dtype() == kBool ? kInt64 : x.dtype());
  const int64_t nout = out.numel();
  visit_dtype(x.dtype(), reduce_name(op), [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      Tensor xi = cast(x, kInt64);
      out = reduce(op, xi, dims, keepdim);
    } else {
      T* o = ptr<T>(out);
      // Leading dims of a contiguous tensor: add rows into an accumulator.
      bool leading = x.is_contiguous() && op == Reduce::Sum;
      for (size_t i = 0; i < dims.size() && leading; ++i) leading = dims[i] == static_cast<int64_t>(i);
      if (leading && nout > 1) {
        // Columns [j0, j1) per chunk, each column summed over r in order.
        const T* p = ptr<const T>(x);
        parallel_for(0, nout, std::max<int64_t>(1, kGrain / std::max<int64_t>(reduced, 1)),
                     [&](int64_t j0, int64_t j1) {
                       std::vector<Acc<T>> acc(j1 - j0, 0);
                       for (int64_t r = 0; r < reduced; ++r) {
                         const T* row = p + r * nout;
                         for (int64_t j = j0; j < j1; ++j) acc[j - j0] += row[j];
                       }
                       for (int64_t j = j0; j < j1; ++j) o[j] = static_cast<T>(acc[j - j0]);
                     });
        return;
      }
      Shape kept;
      Tensor xc = move_dims_last(x, dims, kept);
      const T* p = ptr<const T>(xc);
      parallel_for(0, nout, std::max<int64_t>(1, kGrain / std::max<int64_t>(reduced, 1)),
                   [&](int64_t j0, int64_t j1) {
                     for (int64_t j = j0; j < j1; ++j)
                       o[j] = static_cast<T>(blocked_reduce<T>(op, p + j * reduced, reduced));
                   });
    }
  });
  return out;
}

std::pair<Tensor, Tensor> reduce_index(Reduce op, const Tensor& x, int64_t dim, bool keepdim) {
  const char* name = op == Reduce::Max ? "max" : "min";
  GRADLAB_CHECK(x.dim() == 0 || x.size(dim) > 0, ShapeError, name,
                "cannot reduce over an empty dimension", "a non-empty dim " + std::to_string(dim),
                "shape " + shape_str(x.sizes()));
  Dims dims = x.dim() == 0 ? Dims{} : Dims{dim};
  const Shape oshape = out_shape(x, dims, keepdim);
  Shape kept;
  Tensor xc = move_dims_last(x, dims, kept);
  const int64_t n = x.dim() == 0 ? 1 : x.size(dim);
  Tensor values = make_tensor(oshape, x.dtype());
  Tensor index = make_tensor(oshape, kInt64);
  const int64_t nout = values.numel();
  visit_dtype(x.dtype(), name, [&]<class T>() {
    const T* p = ptr<const T>(xc);
    T* v = ptr<T>(values);
    int64_t* ix = ptr<int64_t>(index);
    parallel_for(0, nout, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)),
                 [&](int64_t j0, int64_t j1) {
                   for (int64_t j = j0; j < j1; ++j) {
                     const T* row = p + j * n;
                     int64_t best = 0;
                     for (int64_t i = 1; i < n; ++i) {
                       if constexpr (std::is_floating_point_v<T>) {
                         if (row[best] != row[best]) break;  // NaN found first: keep it
                         if (row[i] != row[i]) {
                           best = i;
                           break;
                         }
                       }
                       if (op == Reduce::Max ? row[i] > row[best] : row[i] < row[best]) best = i;
                     }
                     v[j] = row[best];
                     ix[j] = best;
                   }
                 });
  });
  return {values, index};
}

}  // namespace gradlab::cpu

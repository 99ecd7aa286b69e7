// Reductions. The reduced dims are moved last and made contiguous, so every output element is
// the reduction of one contiguous row; a float sum over a run of consecutive dims of a
// contiguous tensor with dims after it (a bias gradient: [N, C] -> [C]; [B, T, C] -> [B, C]) adds
// whole rows instead, with no copy and the same order (sum_columns).
//
// Threads: the bits never depend on the thread count. A row longer than kBlock is reduced in
// fixed blocks of kBlock elements whose partial results are combined left to right, whether the
// blocks ran on one thread or many; rows (and columns of sum_columns) are independent.
//
// SIMD: float32 / float64 sum, max and min of a row (or block) run in vec/reduce.hpp's kernels,
// picked by cpuid like the elementwise ones: 32 double lanes, element i into lane i mod 32, the
// lanes folded in halves. That order is the same at every level, so the bits are too, and
// sum_columns keeps it per column. Other dtypes keep the scalar loop below.

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "gradlab/backend/cpu/cpu.hpp"
#include "gradlab/backend/cpu/loops.hpp"
#include "gradlab/backend/cpu/parallel.hpp"
#include "gradlab/backend/cpu/vec/reduce.hpp"

namespace gradlab::cpu {

namespace {

template <class T>
using Acc = math::ReduceAcc<T>;

// ⊕ over one contiguous row (n > 0 for max / min). float / double: vec/reduce.hpp's kernels;
// other dtypes here (sums keep 4 interleaved partial sums).
template <class T>
Acc<T> row_reduce(Reduce op, const T* p, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    const vec::ReduceKernels& k = vec::reduce_kernels();
    return op == Reduce::Sum ? k.sum_f32(p, n) : k.minmax_f32(op == Reduce::Max, p, n);
  } else if constexpr (std::is_same_v<T, double>) {
    const vec::ReduceKernels& k = vec::reduce_kernels();
    return op == Reduce::Sum ? k.sum_f64(p, n) : k.minmax_f64(op == Reduce::Max, p, n);
  }
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

// Sums down the columns of x = [outer, reduced, inner] (contiguous): out[o, j] = Σ_r x[o, r, j],
// in exactly blocked_reduce's order for the row x[o, :, j], so a sum over a middle or leading
// dim has the bits of moving that dim last and summing rows (vec/reduce.hpp): row r of a block
// goes to lane r mod 32 (32 lane rows of up to kTile doubles), the lanes fold in halves, and
// blocks of kBlock rows combine left to right. Each column's order is fixed, so tiles and threads
// do not change the bits. No copy: each row's kTile columns are read in place, contiguously.
// NOTE: lanes no row reached are +0 and a lane's sum is never -0 (it starts at +0, and x + -x is
// +0), so skipping them in the fold changes no bit.
template <class T>
void sum_columns(const T* p, int64_t reduced, int64_t inner, int64_t nout, T* out) {
  constexpr int64_t L = vec::kSumLanes;
  // Wide tiles: the rows are then read as one stream. Measured on [4096, 4096] float32 sum(0)
  // (bench_vs_libtorch, 1 thread): tiles of 64 / 1024 / 2048 columns took 2.7x / 2x / 1.9x the
  // CPU time of 4096 (whole rows), since narrow ones walk the rows at a 16 KiB stride. The cap
  // keeps the 32 lanes of a tile at 2 MiB.
  constexpr int64_t kTile = 8192;
  const vec::ReduceKernels& k = vec::reduce_kernels();
  auto add_row = [&](const T* row, double* acc, int64_t n) {
    if constexpr (std::is_same_v<T, float>) k.add_row_f32(row, acc, n);
    else k.add_row_f64(row, acc, n);
  };
  parallel_for(0, nout, std::max<int64_t>(1, kGrain / std::max<int64_t>(reduced, 1)), [&](int64_t q0, int64_t q1) {
    const int64_t tile = std::min(kTile, q1 - q0);
    std::vector<double> lanes(static_cast<size_t>(L * tile)), total(static_cast<size_t>(tile));
    for (int64_t q = q0; q < q1;) {
      const int64_t ob = q / inner, j0 = q % inner, jn = std::min({tile, inner - j0, q1 - q});
      const T* base = p + ob * reduced * inner + j0;
      std::fill(total.begin(), total.begin() + jn, 0.0);
      for (int64_t b0 = 0; b0 < reduced; b0 += kBlock) {
        const int64_t bn = std::min(kBlock, reduced - b0), used = std::min(L, bn);
        std::fill(lanes.begin(), lanes.begin() + used * jn, 0.0);
        for (int64_t r = 0; r < bn; ++r) add_row(base + (b0 + r) * inner, lanes.data() + (r % L) * jn, jn);
        for (int64_t w = L / 2; w >= 1; w /= 2)
          for (int64_t l = 0; l < w && l + w < used; ++l)
            k.add_row_f64(lanes.data() + (l + w) * jn, lanes.data() + l * jn, jn);
        // the first block is the running total (0 + x would turn -0 into +0), later ones add on
        if (b0 == 0) std::copy(lanes.begin(), lanes.begin() + jn, total.begin());
        else k.add_row_f64(lanes.data(), total.data(), jn);
      }
      for (int64_t j = 0; j < jn; ++j) out[ob * inner + j0 + j] = static_cast<T>(total[j]);
      q += jn;
    }
  });
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
      // A run of consecutive dims of a contiguous float tensor with dims after it: x is
      // [outer, reduced, inner] with no copy (leading dims, a bias gradient [N, C] -> [C], are
      // outer = 1); sum_columns keeps the row path's order exactly.
      constexpr bool kFloat = std::is_same_v<T, float> || std::is_same_v<T, double>;
      bool run = kFloat && op == Reduce::Sum && x.is_contiguous() && !dims.empty();
      for (size_t i = 1; i < dims.size() && run; ++i) run = dims[i] == dims[i - 1] + 1;
      int64_t inner = 1;
      if (run)
        for (int64_t d = dims.back() + 1; d < x.dim(); ++d) inner *= x.size(d);
      if constexpr (kFloat) {
        if (run && inner > 1) {
          sum_columns<T>(ptr<const T>(x), reduced, inner, nout, o);
          return;
        }
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
                     if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
                       // Two passes, the same answer as the loop below: the value by the vector
                       // kernel (NaN wins), then its first index (-0 == +0, so among zeros the
                       // first one, as the strict comparison below keeps).
                       const vec::ReduceKernels& k = vec::reduce_kernels();
                       double m;
                       if constexpr (std::is_same_v<T, float>) m = k.minmax_f32(op == Reduce::Max, row, n);
                       else m = k.minmax_f64(op == Reduce::Max, row, n);
                       int64_t i = 0;
                       if (m != m) {
                         while (row[i] == row[i]) ++i;
                       } else {
                         while (static_cast<double>(row[i]) != m) ++i;
                       }
                       v[j] = row[i];
                       ix[j] = i;
                       continue;
                     }
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

#pragma once
// Reduction CUDA kernels: sum / max / min over dims, max / min with their index over one
// dim, and the column sums of a matrix (a bias gradient). CPU reference: cpu/reduce.cpp and
// sum_rows in cpu/nn.cpp.
//
// Shapes: x's dims split into kept dims K (one output each: nout elements) and reduced dims R
// (nred elements per output). Two Indexers with x's own strides give
//   element (j, r) = x[ik(j) + ir(r)],   j in [0, nout), r in [0, nred),
// so transposed, sliced and expanded inputs are read in place, with no copy.
//
// Threads: one per output, looping over r, when there are many outputs or short rows. With few
// outputs and a long extent (a full sum of 16M elements) the work goes in rounds:
//   round 1: thread (j, c), c in [0, C), reduces r = c, c + C, c + 2C, ... -> partial[j, c]
//            (neighbouring threads read neighbouring elements);
//   round 2: the partials [nout, C] are reduced the same way, ... until C = 1.
// No shared memory and no warp shuffles, so the host emulator runs exactly the device code.
// Partials hold the accumulator type (double for floats, as the CPU's Acc<T>; int64 otherwise).

#include <algorithm>
#include <utility>

#include "gradlab/backend/cuda/exec.hpp"
#include "gradlab/backend/cuda/gpu.hpp"
#include "gradlab/core/shape.hpp"

namespace gradlab::gpu::detail {

/// Elements one thread reduces in a round (about), and the output count from which one thread
/// per output is parallel enough without rounds.
inline constexpr int64_t kReduceChunk = 1024;
inline constexpr int64_t kManyOutputs = int64_t{1} << 16;

/// Partials per output for a pass over rows of length nred: 1 means "finish in this pass".
inline int64_t reduce_width(int64_t nout, int64_t nred) {
  if (nout >= kManyOutputs || nred <= 2 * kReduceChunk) return 1;
  return (nred + kReduceChunk - 1) / kReduceChunk;  // <= nred: every slice is non-empty
}

template <class T>
using ReduceAcc = math::ReduceAcc<T>;

template <class A>
inline constexpr ScalarType kAccDtype = std::is_same_v<A, double> ? kFloat64 : kInt64;

using math::reduce_combine;
using math::reduce_name;

// One pass: out[j * C + c] = ⊕ over r = c, c + C, c + 2C, ... < nred of in[ik(j) + ir(r)].
// Sum starts at 0 (an empty row gives 0); max/min start at the slice's first element (nred > 0
// there, and c < C <= nred).
// S: element type read, A: accumulator, O: type stored (A for partials, the output dtype last).
template <class X, class S, class A, class O>
void reduce_pass(Reduce op, const S* in, Indexer ik, Indexer ir, int64_t nout, int64_t nred, int64_t C, O* out,
                 const char* name) {
  X::for_each(
      nout * C,
      [=] GRADLAB_HD(int64_t t) {
        const int64_t j = t / C, c = t % C;
        const S* row = in + ik(j);
        const bool from_first = math::reduce_from_first(op);
        A acc = from_first ? static_cast<A>(row[ir(c)]) : A(0);
        for (int64_t r = from_first ? c + C : c; r < nred; r += C) acc = reduce_combine<A>(op, acc, static_cast<A>(row[ir(r)]));
        out[t] = static_cast<O>(acc);
      },
      name);
}

// out (contiguous, nout elements) = ⊕ of x over `dims` (wrapped, sorted, unique). S: x's storage
// type; the output type is S, except int64 for bool (a sum of a mask counts it).
template <class X, class S>
void reduce_t(Reduce op, const Tensor& x, const Dims& dims, const Tensor& out, const char* name) {
  using A = ReduceAcc<S>;
  using O = std::conditional_t<std::is_same_v<S, bool>, int64_t, S>;
  Shape ks, rs;
  Strides kst, rst;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const bool reduced = std::binary_search(dims.begin(), dims.end(), d);
    (reduced ? rs : ks).push_back(x.size(d));
    (reduced ? rst : kst).push_back(x.stride(d));
  }
  const int64_t nout = numel_of(ks);
  int64_t nred = numel_of(rs);
  if (nout == 0) return;
  int64_t C = reduce_width(nout, nred);
  const Indexer ik = make_indexer(ks, kst, name), ir = make_indexer(rs, rst, name);
  if (C == 1) return reduce_pass<X, S, A, O>(op, dptr<const S>(x), ik, ir, nout, nred, 1, dptr<O>(out), name);

  // Rounds: partials [nout, C] (contiguous), reduced along their last dim until one is left.
  Tensor part = make_tensor({nout, C}, kAccDtype<A>, x.device());
  reduce_pass<X, S, A, A>(op, dptr<const S>(x), ik, ir, nout, nred, C, dptr<A>(part), name);
  for (;;) {
    nred = C;
    C = reduce_width(nout, nred);
    const Indexer pk = make_indexer(Shape{nout}, Strides{nred}, name), pr = make_indexer(Shape{nred}, Strides{1}, name);
    if (C == 1) return reduce_pass<X, A, A, O>(op, dptr<const A>(part), pk, pr, nout, nred, 1, dptr<O>(out), name);
    Tensor next = make_tensor({nout, C}, kAccDtype<A>, x.device());
    reduce_pass<X, A, A, A>(op, dptr<const A>(part), pk, pr, nout, nred, C, dptr<A>(next), name);
    part = next;
  }
}

/// True when (v, i) beats the best so far (b, bi) for max (min likewise): a NaN beats any
/// number, a larger value a smaller one, and on equal values (or two NaNs) the smaller index wins.
/// A total order, so partials may be combined in any order and still give the CPU's answer:
/// the first NaN if there is one, else the first position of the max.
template <class T>
GRADLAB_HD inline bool arg_beats(Reduce op, T v, int64_t i, T b, int64_t bi) {
  const bool vn = math::isnan(v), bn = math::isnan(b);
  if (vn || bn) return vn && (!bn || i < bi);
  if (v == b) return i < bi;
  return op == Reduce::Max ? v > b : v < b;
}

// One pass of max/min with index: (val, idx)[j * C + c] = best of rows r = c, c + C, ... < nred.
// The first pass reads x (in_idx null: the index is r); later ones read partials (in_idx set,
// laid out like the partial values).
template <class X, class T>
void arg_pass(Reduce op, const T* in, const int64_t* in_idx, Indexer ik, Indexer ir, int64_t nout, int64_t nred,
              int64_t C, T* val, int64_t* idx, const char* name) {
  X::for_each(
      nout * C,
      [=] GRADLAB_HD(int64_t t) {
        const int64_t j = t / C, c = t % C;
        const int64_t base = ik(j);
        int64_t off = base + ir(c);
        T b = in[off];
        int64_t bi = in_idx ? in_idx[off] : c;
        for (int64_t r = c + C; r < nred; r += C) {
          off = base + ir(r);
          const T v = in[off];
          const int64_t i = in_idx ? in_idx[off] : r;
          if (arg_beats<T>(op, v, i, b, bi)) {
            b = v;
            bi = i;
          }
        }
        val[t] = b;
        idx[t] = bi;
      },
      name);
}

// values, index (contiguous, nout elements) = max/min of x over `dim` and its first position.
template <class X, class T>
void reduce_index_t(Reduce op, const Tensor& x, int64_t dim, const Tensor& values, const Tensor& index,
                    const char* name) {
  Shape ks, rs;
  Strides kst, rst;
  for (int64_t d = 0; d < x.dim(); ++d) {
    (d == dim ? rs : ks).push_back(x.size(d));
    (d == dim ? rst : kst).push_back(x.stride(d));
  }
  const int64_t nout = numel_of(ks);
  int64_t nred = numel_of(rs);  // 1 for a 0-d x
  if (nout == 0) return;
  int64_t C = reduce_width(nout, nred);
  const Indexer ik = make_indexer(ks, kst, name), ir = make_indexer(rs, rst, name);
  if (C == 1)
    return arg_pass<X, T>(op, dptr<const T>(x), nullptr, ik, ir, nout, nred, 1, dptr<T>(values), dptr<int64_t>(index),
                          name);

  Tensor pv = make_tensor({nout, C}, x.dtype(), x.device()), pi = make_tensor({nout, C}, kInt64, x.device());
  arg_pass<X, T>(op, dptr<const T>(x), nullptr, ik, ir, nout, nred, C, dptr<T>(pv), dptr<int64_t>(pi), name);
  for (;;) {
    nred = C;
    C = reduce_width(nout, nred);
    const Indexer pk = make_indexer(Shape{nout}, Strides{nred}, name), pr = make_indexer(Shape{nred}, Strides{1}, name);
    if (C == 1)
      return arg_pass<X, T>(op, dptr<const T>(pv), dptr<const int64_t>(pi), pk, pr, nout, nred, 1, dptr<T>(values),
                            dptr<int64_t>(index), name);
    Tensor nv = make_tensor({nout, C}, x.dtype(), x.device()), ni = make_tensor({nout, C}, kInt64, x.device());
    arg_pass<X, T>(op, dptr<const T>(pv), dptr<const int64_t>(pi), pk, pr, nout, nred, C, dptr<T>(nv),
                   dptr<int64_t>(ni), name);
    pv = nv;
    pi = ni;
  }
}

/// x's shape with `dims` dropped (or kept as size 1).
inline Shape reduced_shape(const Tensor& x, const Dims& dims, bool keepdim) {
  Shape s;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (!std::binary_search(dims.begin(), dims.end(), d)) s.push_back(x.size(d));
    else if (keepdim) s.push_back(1);
  }
  return s;
}

}  // namespace gradlab::gpu::detail

namespace gradlab::gpu {

template <class X>
Tensor Reductions<X>::reduce(Reduce op, const Tensor& x, const Dims& dims, bool keepdim) {
  const char* name = detail::reduce_name(op);
  int64_t nred = 1;
  for (auto d : dims) nred *= x.size(d);
  if (nred == 0 && (op == Reduce::Max || op == Reduce::Min)) {
    throw ShapeError(error_message(name, "cannot reduce over an empty dimension", "a non-empty reduced dim",
                                   "shape " + shape_str(x.sizes()),
                                   "max/min of nothing is undefined; check the size first"));
  }
  Tensor out = make_tensor(detail::reduced_shape(x, dims, keepdim), x.dtype() == kBool ? kInt64 : x.dtype(), x.device());
  visit_dtype(x.dtype(), name, [&]<class T>() { detail::reduce_t<X, T>(op, x, dims, out, name); });
  return out;
}

template <class X>
std::pair<Tensor, Tensor> Reductions<X>::reduce_index(Reduce op, const Tensor& x, int64_t dim, bool keepdim) {
  const char* name = op == Reduce::Max ? "max" : "min";
  GRADLAB_CHECK(x.dim() == 0 || x.size(dim) > 0, ShapeError, name, "cannot reduce over an empty dimension",
                "a non-empty dim " + std::to_string(dim), "shape " + shape_str(x.sizes()));
  const int64_t d = x.dim() == 0 ? -1 : dim;  // a 0-d x is its own max, at index 0
  const Shape oshape = detail::reduced_shape(x, x.dim() == 0 ? Dims{} : Dims{dim}, keepdim);
  Tensor values = make_tensor(oshape, x.dtype(), x.device());
  Tensor index = make_tensor(oshape, kInt64, x.device());
  visit_dtype(x.dtype(), name, [&]<class T>() { detail::reduce_index_t<X, T>(op, x, d, values, index, name); });
  return {values, index};
}

// Σ over rows of x [M, N] -> [N]: a sum over dim 0 (CPU: visit_float, so floats only).
template <class X>
Tensor Reductions<X>::sum_rows(const Tensor& x) {
  GRADLAB_CHECK(x.dtype() == kFloat32 || x.dtype() == kFloat64, DTypeError, "sum", "expected a floating point tensor",
                "float32 or float64", to_string(x.dtype()));
  Tensor out = make_tensor({x.size(1)}, x.dtype(), x.device());
  visit_dtype(x.dtype(), "sum", [&]<class T>() { detail::reduce_t<X, T>(Reduce::Sum, x, Dims{0}, out, "sum"); });
  return out;
}

}  // namespace gradlab::gpu

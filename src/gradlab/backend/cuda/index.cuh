#pragma once
// Index CUDA kernels: gather / scatter_add along a dim, index_select / index_add of whole slices,
// and the range check of an index tensor. CPU reference: cpu/index.cpp.
//
// One thread per element of the tensor that is walked (gather: the output; scatter_add: index;
// index_select: the output; index_add: src). The coordinate along `dim` comes from an index
// value, every other coordinate from the thread's own position, so the target offset is
//   off = io(k) + index[..] * step,   io = an Indexer over the walked shape with the target's
// strides and stride 0 at `dim`, step = the target's stride at `dim`.
// Inputs are read in place through their strides (no contiguous copies).
// scatter_add / index_add: several threads may add into one element (a repeated index), so they
// use atomic_add (exec.hpp); float sums then come out in thread order, not the CPU's index order.
// Bad indices: check_indices (below) reports them through the device error record (runtime.hpp),
// read by the host only at the next synchronization, so these kernels may meet an index outside
// [0, size): they never follow it (gather / index_select write 0 there, the adds skip it).

#include <string>

#include "gradlab/backend/cuda/exec.hpp"
#include "gradlab/backend/cuda/gpu.hpp"
#include "gradlab/backend/cuda/reduce.cuh"
#include "gradlab/backend/cuda/runtime.hpp"
#include "gradlab/core/shape.hpp"

namespace gradlab::gpu::detail {

/// t's strides with the one at `dim` set to 0 (an index value supplies that coordinate); `step`
/// gets the stride it had. A 0-d t has no strides: step 0.
inline Strides strides_but_dim(const Tensor& t, int64_t dim, int64_t& step) {
  Strides s = t.strides();
  step = 0;
  if (!s.empty()) {
    step = s[dim];
    s[dim] = 0;
  }
  return s;
}

/// Number of slots along `dim` that an index may name (a 0-d tensor has one).
inline int64_t dim_size(const Tensor& t, int64_t dim) { return t.dim() == 0 ? 1 : t.size(dim); }

/// True when an index value names a slot: 0 <= v < size.
GRADLAB_HD inline bool in_range(int64_t v, int64_t size) { return v >= 0 && v < size; }

/// Product of the sizes after `dim` (1 for a 0-d shape).
inline int64_t inner_size(const Shape& s, int64_t dim) {
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < static_cast<int64_t>(s.size()); ++d) inner *= s[d];
  return inner;
}

/// The CPU's wording when two tensors of one op live on different devices (a kernel must not
/// read a host pointer on the GPU).
inline void check_index_device(const char* op, const Tensor& x, const Tensor& other) {
  if (x.device() == other.device()) return;
  throw DeviceError(error_message(op, "expected all tensors to be on the same device, but found two devices",
                                  "both on one device", x.device().str() + " and " + other.device().str(),
                                  "move one with .to(device) before combining them"));
}

// out (contiguous, x's shape and dtype) = x.
template <class X, class T>
void clone_into_t(const Tensor& x, const Tensor& out, const char* op) {
  const Indexer ix = make_indexer(x, op);
  const T* px = dptr<const T>(x);
  T* po = dptr<T>(out);
  X::for_each(out.numel(), [=] GRADLAB_HD(int64_t k) { po[k] = px[ix(k)]; }, op);
}

// out[k] = x[coords(k) with coordinate `dim` replaced by index[k]],   k over index's shape
// (x may be larger than index in the other dims).
template <class X, class T>
void gather_t(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out) {
  int64_t step = 0;
  const int64_t size = dim_size(x, dim);
  const Indexer ix = make_indexer(index.sizes(), strides_but_dim(x, dim, step), "gather");
  const Indexer ii = make_indexer(index, "gather");
  const T* px = dptr<const T>(x);
  const int64_t* pi = dptr<const int64_t>(index);
  T* po = dptr<T>(out);
  X::for_each(
      out.numel(),
      [=] GRADLAB_HD(int64_t k) {
        const int64_t v = pi[ii(k)];
        po[k] = in_range(v, size) ? px[ix(k) + v * step] : T{};
      },
      "gather");
}

// out[coords(k) with coordinate `dim` replaced by index[k]] += src[coords(k)],   k over index's shape.
template <class X, class T>
void scatter_add_t(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  int64_t step = 0;
  const int64_t size = dim_size(out, dim);
  const Indexer io = make_indexer(index.sizes(), strides_but_dim(out, dim, step), "scatter_add");
  const Indexer ii = make_indexer(index, "scatter_add");
  const Indexer is = make_indexer(index.sizes(), src.strides(), "scatter_add");
  const int64_t* pi = dptr<const int64_t>(index);
  const T* ps = dptr<const T>(src);
  T* po = dptr<T>(out);
  X::for_each(
      index.numel(),
      [=] GRADLAB_HD(int64_t k) {
        const int64_t v = pi[ii(k)];
        if (in_range(v, size)) atomic_add<T>(po + io(k) + v * step, ps[is(k)]);
      },
      "scatter_add");
}

// bool: out[..] ||= src[..]. Threads that meet in one element all store `true`: no atomic needed.
template <class X>
void scatter_or_t(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  int64_t step = 0;
  const int64_t size = dim_size(out, dim);
  const Indexer io = make_indexer(index.sizes(), strides_but_dim(out, dim, step), "scatter_add");
  const Indexer ii = make_indexer(index, "scatter_add");
  const Indexer is = make_indexer(index.sizes(), src.strides(), "scatter_add");
  const int64_t* pi = dptr<const int64_t>(index);
  const bool* ps = dptr<const bool>(src);
  bool* po = dptr<bool>(out);
  X::for_each(
      index.numel(),
      [=] GRADLAB_HD(int64_t k) {
        const int64_t v = pi[ii(k)];
        if (ps[is(k)] && in_range(v, size)) po[io(k) + v * step] = true;
      },
      "scatter_add");
}

// out[.., i, ..] = x[.., index[i], ..]   (out: x's shape with n = index.numel() at dim; i is
// thread t's coordinate along dim: (t / inner) % n for a contiguous out).
template <class X, class T>
void index_select_t(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out) {
  const int64_t n = index.numel(), inner = inner_size(out.sizes(), dim), size = dim_size(x, dim);
  if (n == 0) return;
  int64_t step = 0;
  const Indexer ix = make_indexer(out.sizes(), strides_but_dim(x, dim, step), "index_select");
  const Indexer ii = make_indexer(index, "index_select");
  const T* px = dptr<const T>(x);
  const int64_t* pi = dptr<const int64_t>(index);
  T* po = dptr<T>(out);
  X::for_each(
      out.numel(),
      [=] GRADLAB_HD(int64_t t) {
        const int64_t v = pi[ii((t / inner) % n)];
        po[t] = in_range(v, size) ? px[ix(t) + v * step] : T{};
      },
      "index_select");
}

// out[.., index[i], ..] += src[.., i, ..]   (t over src, which is out's shape with n at dim).
template <class X, class T>
void index_add_t(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t n = index.numel(), inner = inner_size(src.sizes(), dim), size = dim_size(out, dim);
  if (n == 0) return;
  int64_t step = 0;
  const Indexer io = make_indexer(src.sizes(), strides_but_dim(out, dim, step), "index_add");
  const Indexer is = make_indexer(src, "index_add"), ii = make_indexer(index, "index_add");
  const int64_t* pi = dptr<const int64_t>(index);
  const T* ps = dptr<const T>(src);
  T* po = dptr<T>(out);
  X::for_each(
      src.numel(),
      [=] GRADLAB_HD(int64_t t) {
        const int64_t v = pi[ii((t / inner) % n)];
        if (in_range(v, size)) atomic_add<T>(po + io(t) + v * step, ps[is(t)]);
      },
      "index_add");
}

// first[c] = the first position p = c, c + C, c + 2C, ... < n (index's row-major order) whose
// value is outside [0, size); n when there is none.
template <class X>
void first_bad_index_t(const Tensor& index, int64_t size, int64_t C, const Tensor& first, const char* op) {
  const Indexer ii = make_indexer(index, op);
  const int64_t* pi = dptr<const int64_t>(index);
  int64_t* pf = dptr<int64_t>(first);
  const int64_t n = index.numel();
  X::for_each(
      C,
      [=] GRADLAB_HD(int64_t c) {
        int64_t f = n;
        for (int64_t p = c; p < n; p += C) {
          const int64_t v = pi[ii(p)];
          if (v < 0 || v >= size) {
            f = p;
            break;
          }
        }
        pf[c] = f;
      },
      op);
}

// One thread: when *pos < n (the first bad position, from first_bad_index_t + a min reduction)
// and the record is still empty, fill it with that position, the index there and the bound.
// NOTE: every gradlab kernel runs on the one default stream, in order, so "still empty" means
// that no check queued earlier has failed: the first failure is the one the host raises.
template <class X>
void record_bad_index_t(const Tensor& index, const Tensor& pos, int64_t size, int64_t site,
                        cuda_rt::DeviceErrorRecord* rec, const char* op) {
  const Indexer ii = make_indexer(index, op);
  const int64_t* pi = dptr<const int64_t>(index);
  const int64_t* pp = dptr<const int64_t>(pos);
  const int64_t n = index.numel();
  X::for_each(
      1,
      [=] GRADLAB_HD(int64_t) {
        const int64_t p = *pp;
        if (p >= n || rec->set) return;
        rec->site = site;
        rec->pos = p;
        rec->value = pi[ii(p)];
        rec->bound = size;
        rec->set = 1;
      },
      op);
}

}  // namespace gradlab::gpu::detail

namespace gradlab::gpu {

// Queues the check that every index is in [0, size); nothing waits for it. Kernels find the first
// bad position (per slice, then the min of those, in rounds as a reduction) and leave it, with
// its value, in the device error record; the host raises the CPU's ShapeError (the first bad
// position and its value) at the next synchronization (runtime.hpp), or here when checks block.
template <class X>
void Indexing<X>::check_indices(const Tensor& index, int64_t size, const char* op) {
  GRADLAB_CHECK(index.dtype() == kInt64, DTypeError, op, "indices must be int64", "int64", to_string(index.dtype()),
                "convert with .to(kInt64)");
  const int64_t n = index.numel();
  if (n == 0) return;
  const int64_t C = detail::reduce_width(1, n);
  Tensor first = make_tensor({C}, kInt64, index.device());
  detail::first_bad_index_t<X>(index, size, C, first, op);
  Tensor pos = make_tensor(Shape{}, kInt64, index.device());
  detail::reduce_t<X, int64_t>(Reduce::Min, first, Dims{0}, pos, op);
  detail::record_bad_index_t<X>(index, pos, size, cuda_rt::error_site(op, cuda_rt::CheckKind::Index),
                                cuda_rt::device_error_record(op), op);
  cuda_rt::check_queued(op);
}

template <class X>
Tensor Indexing<X>::gather(const Tensor& x, int64_t dim, const Tensor& index) {
  detail::check_index_device("gather", x, index);
  Tensor out = make_tensor(index.sizes(), x.dtype(), x.device());
  visit_dtype(x.dtype(), "gather", [&]<class T>() { detail::gather_t<X, T>(x, dim, index, out); });
  return out;
}

template <class X>
Tensor Indexing<X>::scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  detail::check_index_device("scatter_add", self, index);
  detail::check_index_device("scatter_add", self, src);
  Tensor out = make_tensor(self.sizes(), self.dtype(), self.device());
  visit_dtype(self.dtype(), "scatter_add", [&]<class T>() {
    detail::clone_into_t<X, T>(self, out, "scatter_add");
    if constexpr (std::is_same_v<T, bool>) detail::scatter_or_t<X>(out, dim, index, src);
    else detail::scatter_add_t<X, T>(out, dim, index, src);
  });
  return out;
}

template <class X>
Tensor Indexing<X>::index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  detail::check_index_device("index_select", x, index);
  const int64_t n = index.numel();
  // NOTE: a 0-d x has one slot, so exactly one index (as PyTorch); more would overrun out.
  GRADLAB_CHECK(x.dim() > 0 || n == 1, ShapeError, "index_select", "a 0-d input takes exactly one index",
                "1 index", std::to_string(n) + " indices");
  Shape os = x.sizes();
  if (!os.empty()) os[dim] = n;
  Tensor out = make_tensor(os, x.dtype(), x.device());
  // A copy of slices: every storage dtype, half types included (as the CPU's memcpy).
  visit_storage_dtype(x.dtype(), [&]<class T>() { detail::index_select_t<X, T>(x, dim, index, out); });
  return out;
}

template <class X>
Tensor Indexing<X>::index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  detail::check_index_device("index_add", self, index);
  detail::check_index_device("index_add", self, src);
  GRADLAB_CHECK(self.dim() > 0 || index.numel() <= 1, ShapeError, "index_add", "a 0-d self takes at most one index",
                "1 index", std::to_string(index.numel()) + " indices");
  Tensor out = make_tensor(self.sizes(), self.dtype(), self.device());
  visit_dtype(self.dtype(), "index_add", [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      throw DTypeError(error_message("index_add", "bool tensors cannot be added", "a number dtype", "bool"));
    } else {
      detail::clone_into_t<X, T>(self, out, "index_add");
      detail::index_add_t<X, T>(out, dim, index, src);
    }
  });
  return out;
}

}  // namespace gradlab::gpu

// The fused program's CPU loop (backend/fused.hpp): for each tile of kFusedTile elements, every
// step runs over the tile (xsimd batches for the formulas that allow it, the same formulas the
// eager kernels use), so a chain of k ops reads its inputs and writes its outputs once instead of
// k times. Contiguous inputs are read in place; outputs leave the tile with streaming stores.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <sstream>
#include <xsimd/xsimd.hpp>
#if defined(__SSE2__)
#include <emmintrin.h>  // _mm_stream_ps / _mm_stream_pd
#endif

#include "gradlab/backend/cpu/loops.hpp"
#include "gradlab/backend/fused.hpp"

namespace gradlab::kern {

namespace {

using Kind = FusedStep::Kind;
using Reduce = FusedOutput::Reduce;

// A register's tile: values at p. A scalar register (the same value s for every element: a
// constant, a broadcast single value, or a formula of those) is computed once, on the first
// tile, and p then points at a tile filled with s, so the loops below never branch on it.
template <class T>
struct Reg {
  const T* p = nullptr;
  bool scalar = false;
  T s = T(0);
};

template <class T>
using Batch = xsimd::batch<T>;

// c ? a : b for a number (bool c) and for a batch (a batch_bool c).
template <class T>
T math_select(bool c, T a, T b) {
  return c ? a : b;
}
template <class T>
Batch<T> math_select(const xsimd::batch_bool<T>& c, const Batch<T>& a, const Batch<T>& b) {
  return xsimd::select(c, a, b);
}

template <class T>
[[gnu::always_inline]] inline Batch<T> load(const Reg<T>& r, int64_t i) {
  return Batch<T>::load_unaligned(r.p + i);
}
template <class T>
[[gnu::always_inline]] inline T at(const Reg<T>& r, int64_t i) {
  return r.p[i];
}

// out[i] = f(regs...[i]) over a tile; a formula of kind F or N runs in xsimd batches.
template <bool Vec, class T, class F, class... R>
void map_tile(T* out, int64_t n, F f, const R&... r) {
  int64_t i = 0;
  if constexpr (Vec) {
    constexpr int64_t W = static_cast<int64_t>(Batch<T>::size);
    for (; i + W <= n; i += W) f(load(r, i)...).store_unaligned(out + i);
  }
  for (; i < n; ++i) out[i] = f(at(r, i)...);
}

// Copies a strided input's elements [i0, i0 + n) (in row-major order of `shape`) into out, one
// run of the last dim at a time: a copy where its stride is 1, a fill where it is 0 (a row
// broadcast: [N, 1] -> [N, D]).
template <class T>
void gather(const T* base, const Shape& shape, const Strides& st, int64_t i0, int64_t n, T* out) {
  const size_t rank = shape.size();
  std::vector<int64_t> idx(rank);
  int64_t off = 0, rest = i0;
  for (size_t d = rank; d-- > 0;) {
    idx[d] = rest % shape[d];
    rest /= shape[d];
    off += idx[d] * st[d];
  }
  const size_t last = rank - 1;
  const int64_t inner = st[last];
  for (int64_t k = 0; k < n;) {
    const int64_t run = std::min(n - k, shape[last] - idx[last]);
    const T* src = base + off;
    if (inner == 1) std::copy(src, src + run, out + k);
    else if (inner == 0) std::fill(out + k, out + k + run, *src);
    else
      for (int64_t j = 0; j < run; ++j) out[k + j] = src[j * inner];
    k += run;
    off += (run - 1) * inner;  // now at the run's last element; step like a counter from there
    idx[last] += run - 1;
    for (size_t d = rank; d-- > 0;) {
      off += st[d];
      if (++idx[d] < shape[d]) break;
      off -= st[d] * shape[d];
      idx[d] = 0;
    }
  }
}

// Σ r[k], k in [k0, k0 + n), in batches of T (a tile's partial sum; the caller adds in double).
template <class T>
double tile_sum(const Reg<T>& r, int64_t k0, int64_t n) {
  if (r.scalar) return static_cast<double>(r.s) * static_cast<double>(n);
  constexpr int64_t W = static_cast<int64_t>(Batch<T>::size);
  Batch<T> acc(T(0));
  int64_t k = 0;
  for (; k + W <= n; k += W) acc += Batch<T>::load_unaligned(r.p + k0 + k);
  double s = static_cast<double>(xsimd::hadd(acc));
  for (; k < n; ++k) s += static_cast<double>(r.p[k0 + k]);
  return s;
}

// dst[k] = src[k] with streaming stores where aligned: the output is not read again by this
// loop, so skipping the cache saves the read-for-ownership of every written line (memcpy does
// the same for large copies).
template <class T>
void store_out(T* dst, const T* src, int64_t n, bool stream) {
  int64_t k = 0;
#if defined(__SSE2__)
  if (stream && reinterpret_cast<uintptr_t>(dst) % 16 == 0) {
    if constexpr (std::is_same_v<T, float>)
      for (; k + 4 <= n; k += 4) _mm_stream_ps(dst + k, _mm_loadu_ps(src + k));
    else
      for (; k + 2 <= n; k += 2) _mm_stream_pd(dst + k, _mm_loadu_pd(src + k));
  }
#endif
  for (; k < n; ++k) dst[k] = src[k];
}

template <class T>
std::vector<Tensor> run(const FusedProgram& prog, const std::vector<Tensor>& inputs) {
  const Shape& shape = prog.shape;
  const int64_t n = numel_of(shape);
  const int64_t D = shape.empty() ? 1 : shape.back();
  const size_t S = prog.steps.size();

  // Outputs, and which registers write straight into an output's memory.
  std::vector<Tensor> outs;
  std::vector<std::vector<double>> acc(prog.outputs.size());
  for (size_t o = 0; o < prog.outputs.size(); ++o) {
    const FusedOutput& out = prog.outputs[o];
    Shape s = shape;
    if (out.reduce == Reduce::All) s = {};
    if (out.reduce == Reduce::LastDim && !s.empty()) s.pop_back();
    outs.push_back(make_tensor(s, prog.dtype));
    if (out.reduce != Reduce::None)
      acc[o].assign(static_cast<size_t>(numel_of(s)), 0.0);
  }

  // Inputs: contiguous ones are read in place, broadcast single values once, others gathered.
  enum class In { Dense, Scalar, Strided };
  std::vector<In> in_kind(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k)
    in_kind[k] = inputs[k].is_contiguous() ? In::Dense
                 : cpu::is_broadcast_scalar(inputs[k]) ? In::Scalar : In::Strided;

  // Streaming stores and prefetches pay only on tensors far larger than the caches: a small
  // output is read again soon (by the next op) and should stay in cache.
  const bool large = n * static_cast<int64_t>(sizeof(T)) >= (int64_t{8} << 20);
  std::vector<const T*> base(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) base[k] = cpu::ptr<const T>(inputs[k]);
  std::unique_ptr<T[]> buf(new T[S * kFusedTile]);  // every register's tile (not zeroed: written first)
  std::vector<Reg<T>> reg(S);
  for (int64_t i0 = 0; i0 < n; i0 += kFusedTile) {
    const int64_t len = std::min(kFusedTile, n - i0);
    // The next tile of each dense input is fetched while this one is computed.
    for (size_t k = 0; k < inputs.size() && large; ++k)
      if (in_kind[k] == In::Dense && i0 + kFusedTile < n) {
        const char* next = reinterpret_cast<const char*>(base[k] + i0 + kFusedTile);
        const int64_t bytes = std::min(kFusedTile, n - i0 - kFusedTile) * static_cast<int64_t>(sizeof(T));
        for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(next + b);
      }
    for (size_t s = 0; s < S; ++s) {
      const FusedStep& st = prog.steps[s];
      T* dst = buf.get() + s * kFusedTile;
      Reg<T>& r = reg[s];
      if (r.scalar) continue;  // computed on the first tile
      r = Reg<T>{dst, false, T(0)};
      switch (st.kind) {
        case Kind::Input: {
          const Tensor& x = inputs[static_cast<size_t>(st.index)];
          const T* b = base[static_cast<size_t>(st.index)];
          if (in_kind[st.index] == In::Dense) r.p = b + i0;
          else if (in_kind[st.index] == In::Scalar) r = Reg<T>{nullptr, true, *b};
          else gather(b, x.sizes(), x.strides(), i0, len, dst);
          break;
        }
        case Kind::Const: r = Reg<T>{nullptr, true, static_cast<T>(st.p)}; break;
        case Kind::Unary: {
          const Reg<T>& a = reg[st.a];
          const T p = static_cast<T>(st.p), q = static_cast<T>(st.q);
          math::visit_unary(static_cast<math::Unary>(st.op), [&]<class F>() {
            constexpr bool vec = math::vectorizable(F::kKind);
            if (a.scalar) {
              r = Reg<T>{nullptr, true, F{}(a.s, p, q)};
              return;
            }
            if constexpr (vec) {
              const Batch<T> bp(p), bq(q);
              map_tile<true, T>(dst, len, [&](auto x) {
                if constexpr (std::is_same_v<decltype(x), T>) return F{}(x, p, q);
                else return F{}(x, bp, bq);
              }, a);
            } else {
              map_tile<false, T>(dst, len, [&](T x) { return F{}(x, p, q); }, a);
            }
          });
          break;
        }
        case Kind::Binary:
        case Kind::Compare: {
          const Reg<T>& a = reg[st.a];
          const Reg<T>& b = reg[st.b];
          math::visit_binary(static_cast<math::Binary>(st.op), [&]<class F>() {
            auto f = [](auto x, auto y) {
              using V = decltype(x);
              if constexpr (math::is_comparison(F::kOp)) return math_select(F{}(x, y), V(1), V(0));
              else return F{}(x, y);
            };
            if (a.scalar && b.scalar) {
              r = Reg<T>{nullptr, true, f(a.s, b.s)};
              return;
            }
            // NOTE: && and || of batches are not batch_bool: those two run one element at a time.
            constexpr bool logical = F::kOp == math::Binary::And || F::kOp == math::Binary::Or;
            map_tile<math::vectorizable(F::kKind) && !logical, T>(dst, len, f, a, b);
          });
          break;
        }
        case Kind::Select: {
          const Reg<T>& c = reg[st.a];
          const Reg<T>& x = reg[st.b];
          const Reg<T>& y = reg[st.c];
          auto f = [](auto m, auto u, auto v) {
            using V = decltype(m);
            return math_select(m != V(0), u, v);
          };
          if (c.scalar && x.scalar && y.scalar) r = Reg<T>{nullptr, true, f(c.s, x.s, y.s)};
          else map_tile<true, T>(dst, len, f, c, x, y);
          break;
        }
      }
      if (r.scalar) {
        std::fill(dst, dst + kFusedTile, r.s);
        r.p = dst;
      }
    }
    // Outputs: whole ones not written in place are copied; reductions accumulate in double.
    for (size_t o = 0; o < prog.outputs.size(); ++o) {
      const FusedOutput& out = prog.outputs[o];
      const Reg<T>& r = reg[out.reg];
      if (out.reduce == Reduce::None) {
        T* dst = cpu::ptr<T>(outs[o]) + i0;
        if (r.scalar) std::fill(dst, dst + len, r.s);
        else store_out(dst, r.p, len, large);
      } else if (out.reduce == Reduce::All) {
        acc[o][0] += tile_sum(r, 0, len);
      } else {  // LastDim: row by row through the tile
        int64_t k = 0, row = i0 / D, col = i0 % D;
        while (k < len) {
          const int64_t seg = std::min(len - k, D - col);
          acc[o][static_cast<size_t>(row)] += tile_sum(r, k, seg);
          k += seg, ++row, col = 0;
        }
      }
    }
  }
  // NOTE: streaming stores are weakly ordered: fence them before another thread may read.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (size_t o = 0; o < prog.outputs.size(); ++o) {
    if (prog.outputs[o].reduce == Reduce::None) continue;
    T* dst = cpu::ptr<T>(outs[o]);
    for (size_t k = 0; k < acc[o].size(); ++k)
      dst[k] = static_cast<T>(acc[o][k] * prog.outputs[o].scale);
  }
  return outs;
}

}  // namespace

std::string FusedProgram::str() const {
  std::ostringstream os;
  for (size_t s = 0; s < steps.size(); ++s) {
    const FusedStep& st = steps[s];
    os << "r" << s << " = ";
    switch (st.kind) {
      case Kind::Input: os << "input " << st.index; break;
      case Kind::Const: os << st.p; break;
      case Kind::Unary: os << "unary " << st.op << "(r" << st.a << "; " << st.p << ", " << st.q << ")"; break;
      case Kind::Binary: os << "binary " << st.op << "(r" << st.a << ", r" << st.b << ")"; break;
      case Kind::Compare: os << "compare " << st.op << "(r" << st.a << ", r" << st.b << ")"; break;
      case Kind::Select: os << "select(r" << st.a << ", r" << st.b << ", r" << st.c << ")"; break;
    }
    os << "\n";
  }
  for (const auto& o : outputs)
    os << "out r" << o.reg << (o.reduce == Reduce::All ? " sum" : o.reduce == Reduce::LastDim ? " sum(-1)" : "")
       << (o.scale != 1 ? " * " + std::to_string(o.scale) : "") << "\n";
  return os.str();
}

std::vector<Tensor> run_cpu_fused(const FusedProgram& program, const std::vector<Tensor>& inputs) {
  GRADLAB_CHECK(program.dtype == kFloat32 || program.dtype == kFloat64, DTypeError, "fused kernel",
                "fused programs run on floating point tensors", "float32 or float64",
                to_string(program.dtype));
  for (const auto& t : inputs)
    GRADLAB_CHECK(t.sizes() == program.shape && t.dtype() == program.dtype, ShapeError,
                  "fused kernel", "an input does not match the program",
                  to_string(program.dtype) + shape_str(program.shape),
                  to_string(t.dtype()) + shape_str(t.sizes()));
  if (program.dtype == kFloat32) return run<float>(program, inputs);
  return run<double>(program, inputs);
}

}  // namespace gradlab::kern

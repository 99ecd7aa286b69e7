// The fused program's CPU loop (backend/fused.hpp): for each tile of kFusedTile elements, every
// step runs over the tile, so a chain of k ops reads its inputs and writes its outputs once
// instead of k times, and no step allocates. Arithmetic and unary steps run through the eager
// kernels' own per-level loops (vec/vec.hpp: SSE2, AVX2 or AVX-512, picked once by cpuid; the
// formulas of backend/math), so a compiled elementwise chain gives the eager one's bits at each level;
// comparisons and selects run in baseline xsimd batches. Tiles are split over the intra-op
// threads (parallel_for); contiguous inputs are read in place; large outputs leave the tile with
// streaming stores.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <sstream>
#include <xsimd/xsimd.hpp>
#include <string>
#if defined(__x86_64__)
#include <immintrin.h>  // streaming stores (store_out)
#endif

#include "gradlab/backend/cpu/loops.hpp"
#include "gradlab/backend/cpu/parallel.hpp"
#include "gradlab/backend/cpu/vec/vec.hpp"
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

// Streaming copies: the output is not read again by this loop, so skipping the cache saves the
// read-for-ownership of every written line (memcpy does the same for large copies). Each copies
// the first `bytes` rounded down to its store width (dst aligned to it) and returns that count.
// NOTE: the width matters on its own: on the AMD EPYC (Zen) this was measured on, relu(x*2+1)
// over 16M floats ran at 0.67x memcpy's speed with 16-byte streaming stores and at 0.97-1.0x
// with 64-byte ones (bench_vs_libtorch, one thread, CPU time). The wider ones are
// compiled for their ISA by function attributes and called only at that level (as vec/vec.hpp's
// tables are: picked by cpuid, or lowered by GRADLAB_CPU_CAPABILITY), so the library still runs
// on any x86-64 CPU.
using StreamFn = int64_t (*)(char* dst, const char* src, int64_t bytes);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GRADLAB_FUSED_STREAM 1
__attribute__((target("avx512f"))) int64_t stream_64(char* dst, const char* src, int64_t bytes) {
  int64_t k = 0;
  for (; k + 64 <= bytes; k += 64)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + k), _mm512_loadu_si512(src + k));
  return k;
}
__attribute__((target("avx"))) int64_t stream_32(char* dst, const char* src, int64_t bytes) {
  int64_t k = 0;
  for (; k + 32 <= bytes; k += 32)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + k), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + k)));
  return k;
}
int64_t stream_16(char* dst, const char* src, int64_t bytes) {
  int64_t k = 0;
  for (; k + 16 <= bytes; k += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + k), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k)));
  return k;
}
#endif

// The streaming copy of `level` (a vec::Kernels name) and its store width; nullptr off x86-64.
StreamFn stream_for(const char* level, int64_t* width) {
#if GRADLAB_FUSED_STREAM
  const std::string l = level;
  if (l == "avx512") return *width = 64, stream_64;
  if (l == "avx2") return *width = 32, stream_32;
  return *width = 16, stream_16;
#else
  (void)level;
  *width = 1;
  return nullptr;
#endif
}

// dst[k] = src[k], k < n: streaming stores through `stream` where dst is aligned to its width.
template <class T>
void store_out(T* dst, const T* src, int64_t n, StreamFn stream, int64_t width) {
  int64_t k = 0;
  if (stream && reinterpret_cast<uintptr_t>(dst) % static_cast<uintptr_t>(width) == 0)
    k = stream(reinterpret_cast<char*>(dst), reinterpret_cast<const char*>(src), n * static_cast<int64_t>(sizeof(T))) /
        static_cast<int64_t>(sizeof(T));
  for (; k < n; ++k) dst[k] = src[k];
}

// One contiguous range of tiles [t0, t1) of a program, on one thread: every step over each tile,
// then the tile's outputs. The chunks parallel_for hands out start at tile boundaries, so every
// element takes the same path (vector body or scalar tail) for any thread count.
template <class T>
struct Runner {
  enum class In { Dense, Scalar, Strided };
  const FusedProgram& prog;
  const std::vector<Tensor>& inputs;
  const cpu::vec::Kernels& K;  // this CPU's level (vec/vec.hpp), picked once
  int64_t n = 0, D = 1;
  bool large = false;
  StreamFn stream = nullptr;  // streaming copy of the level in use (large outputs)
  int64_t stream_width = 1;
  std::vector<In> in_kind;
  std::vector<const T*> base;
  std::vector<T*> out_ptr;  // Reduce::None outputs, else nullptr
  // Reductions, per tile t and output o (index t * outputs + o): the sum of the tile's first
  // row segment (All: of the whole tile) and, when the tile reaches into a later row, of its last
  // one. Rows wholly inside one tile go straight to acc. finish() adds head / tail in tile order,
  // so every row's sum is the same sequence of double additions for any thread count.
  std::vector<double> head, tail;
  std::vector<std::vector<double>> acc;

  Runner(const FusedProgram& p, const std::vector<Tensor>& in, const cpu::vec::Kernels& k)
      : prog(p), inputs(in), K(k) {}

  void chunk(int64_t t0, int64_t t1) {
    const size_t S = prog.steps.size();
    std::unique_ptr<T[]> buf(new T[S * kFusedTile]);  // every register's tile (not zeroed: written first)
    std::vector<Reg<T>> reg(S);
    for (int64_t t = t0; t < t1; ++t) tile(t, buf.get(), reg);
    // NOTE: streaming stores are weakly ordered: fenced on the thread that made them, before it
    // reports the chunk done and another thread may read the output.
    if (large) std::atomic_thread_fence(std::memory_order_seq_cst);
  }

  void tile(int64_t t, T* buf, std::vector<Reg<T>>& reg) {
    const int64_t i0 = t * kFusedTile;
    const int64_t len = std::min(kFusedTile, n - i0);
    // The next tile of each dense input is fetched while this one is computed.
    for (size_t k = 0; k < inputs.size() && large; ++k)
      if (in_kind[k] == In::Dense && i0 + kFusedTile < n) {
        const char* next = reinterpret_cast<const char*>(base[k] + i0 + kFusedTile);
        const int64_t bytes = std::min(kFusedTile, n - i0 - kFusedTile) * static_cast<int64_t>(sizeof(T));
        for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(next + b);
      }
    for (size_t s = 0; s < prog.steps.size(); ++s) step(s, i0, len, buf + s * kFusedTile, reg);
    outputs(t, i0, len, reg);
  }

  void step(size_t s, int64_t i0, int64_t len, T* dst, std::vector<Reg<T>>& reg) const {
    const FusedStep& st = prog.steps[s];
    Reg<T>& r = reg[s];
    if (r.scalar) return;  // computed on the chunk's first tile
    r = Reg<T>{dst, false, T(0)};
    switch (st.kind) {
      case Kind::Input: {
        const size_t k = static_cast<size_t>(st.index);
        const Tensor& x = inputs[k];
        if (in_kind[k] == In::Dense) r.p = base[k] + i0;
        else if (in_kind[k] == In::Scalar) r = Reg<T>{nullptr, true, *base[k]};
        else gather(base[k], x.sizes(), x.strides(), i0, len, dst);
        break;
      }
      case Kind::Const: r = Reg<T>{nullptr, true, static_cast<T>(st.p)}; break;
      case Kind::Unary: {
        const Reg<T>& a = reg[st.a];
        const T p = static_cast<T>(st.p), q = static_cast<T>(st.q);
        const auto op = static_cast<math::Unary>(st.op);
        math::visit_unary(op, [&]<class F>() {
          if (a.scalar) {
            r = Reg<T>{nullptr, true, F{}(a.s, p, q)};
            return;
          }
          // Whole batches at the CPU's level (the eager kernel's own loop), the tail through the
          // formula on numbers, as the eager kernel does: compiled and eager give the same bits.
          int64_t i = 0;
          if constexpr (math::vectorizable(F::kKind)) i = cpu::vec::unary(K, op, a.p, dst, len, p, q);
          for (; i < len; ++i) dst[i] = F{}(a.p[i], p, q);
        });
        break;
      }
      case Kind::Binary:
      case Kind::Compare: {
        const Reg<T>& a = reg[st.a];
        const Reg<T>& b = reg[st.b];
        const auto op = static_cast<math::Binary>(st.op);
        math::visit_binary(op, [&]<class F>() {
          auto f = [](auto x, auto y) {
            using V = decltype(x);
            if constexpr (math::is_comparison(F::kOp)) return math_select(F{}(x, y), V(1), V(0));
            else return F{}(x, y);
          };
          if (a.scalar && b.scalar) {
            r = Reg<T>{nullptr, true, f(a.s, b.s)};
            return;
          }
          if constexpr (math::vectorizable(F::kKind) && !math::is_comparison(F::kOp)) {
            // Arithmetic: the level's kernel (a scalar operand read once), the tail on numbers.
            int64_t i = cpu::vec::binary(K, op, a.scalar ? &a.s : a.p, a.scalar, b.scalar ? &b.s : b.p, b.scalar,
                                    dst, len);
            for (; i < len; ++i) dst[i] = f(a.scalar ? a.s : a.p[i], b.scalar ? b.s : b.p[i]);
          } else {
            // Comparisons (1 / 0 in the program's dtype) in baseline batches. NOTE: && and || of
            // batches are not batch_bool: those two run one element at a time.
            constexpr bool logical = F::kOp == math::Binary::And || F::kOp == math::Binary::Or;
            map_tile<math::vectorizable(F::kKind) && !logical, T>(dst, len, f, a, b);
          }
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
    if (r.scalar) {  // a tile filled with s, so the batch loops read it like any other
      std::fill(dst, dst + kFusedTile, r.s);
      r.p = dst;
    }
  }

  // Whole outputs are copied out of the tile; reductions leave per-tile partial sums.
  void outputs(int64_t t, int64_t i0, int64_t len, const std::vector<Reg<T>>& reg) {
    const size_t O = prog.outputs.size();
    for (size_t o = 0; o < O; ++o) {
      const FusedOutput& out = prog.outputs[o];
      const Reg<T>& r = reg[out.reg];
      const size_t at = static_cast<size_t>(t) * O + o;
      if (out.reduce == Reduce::None) {
        T* dst = out_ptr[o] + i0;
        if (r.scalar) std::fill(dst, dst + len, r.s);
        else if (large) store_out(dst, r.p, len, stream, stream_width);
        else std::copy(r.p, r.p + len, dst);
      } else if (out.reduce == Reduce::All) {
        head[at] = tile_sum(r, 0, len);
      } else {  // LastDim: the first row segment, whole rows, the last row segment
        const int64_t first = i0 / D, last = (i0 + len - 1) / D;
        const int64_t k1 = std::min(len, (first + 1) * D - i0);  // end of the first segment
        head[at] = tile_sum(r, 0, k1);
        if (last == first) continue;
        for (int64_t row = first + 1; row < last; ++row)  // only this tile writes these rows
          acc[o][static_cast<size_t>(row)] = 0.0 + tile_sum(r, row * D - i0, D);
        const int64_t k2 = last * D - i0;
        tail[at] = tile_sum(r, k2, len - k2);
      }
    }
  }

  // The reductions' partial sums, added in tile order.
  void finish(std::vector<Tensor>& outs) {
    const size_t O = prog.outputs.size();
    const int64_t tiles = (n + kFusedTile - 1) / kFusedTile;
    for (size_t o = 0; o < O; ++o) {
      const FusedOutput& out = prog.outputs[o];
      if (out.reduce == Reduce::None) continue;
      for (int64_t t = 0; t < tiles; ++t) {
        const size_t at = static_cast<size_t>(t) * O + o;
        const int64_t i0 = t * kFusedTile, len = std::min(kFusedTile, n - i0);
        if (out.reduce == Reduce::All) {
          acc[o][0] += head[at];
          continue;
        }
        const int64_t first = i0 / D, last = (i0 + len - 1) / D;
        acc[o][static_cast<size_t>(first)] += head[at];
        if (last != first) acc[o][static_cast<size_t>(last)] += tail[at];
      }
      T* dst = cpu::ptr<T>(outs[o]);
      for (size_t k = 0; k < acc[o].size(); ++k) dst[k] = static_cast<T>(acc[o][k] * out.scale);
    }
  }
};

template <class T>
std::vector<Tensor> run(const FusedProgram& prog, const std::vector<Tensor>& inputs) {
  const Shape& shape = prog.shape;
  Runner<T> R(prog, inputs, cpu::vec::kernels());
  R.n = numel_of(shape);
  R.D = shape.empty() ? 1 : shape.back();
  const int64_t tiles = (R.n + kFusedTile - 1) / kFusedTile;
  const size_t O = prog.outputs.size();

  // Outputs: new storage from the allocator's cache, not zeroed (every element is written).
  std::vector<Tensor> outs;
  R.acc.resize(O);
  R.out_ptr.assign(O, nullptr);
  bool reduces = false;
  for (size_t o = 0; o < O; ++o) {
    const FusedOutput& out = prog.outputs[o];
    Shape s = shape;
    if (out.reduce == Reduce::All) s = {};
    if (out.reduce == Reduce::LastDim && !s.empty()) s.pop_back();
    outs.push_back(make_tensor(s, prog.dtype));
    if (out.reduce == Reduce::None) R.out_ptr[o] = cpu::ptr<T>(outs.back());
    else R.acc[o].assign(static_cast<size_t>(numel_of(s)), 0.0), reduces = true;
  }
  if (reduces) {
    R.head.assign(static_cast<size_t>(tiles) * O, 0.0);
    R.tail.assign(static_cast<size_t>(tiles) * O, 0.0);
  }

  // Inputs: contiguous ones are read in place, broadcast single values once, others gathered.
  using In = typename Runner<T>::In;
  R.in_kind.resize(inputs.size());
  R.base.resize(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    R.in_kind[k] = inputs[k].is_contiguous() ? In::Dense
                   : cpu::is_broadcast_scalar(inputs[k]) ? In::Scalar : In::Strided;
    R.base[k] = cpu::ptr<const T>(inputs[k]);
  }

  // Streaming stores and prefetches pay only on tensors far larger than the caches: a small
  // output is read again soon (by the next op) and should stay in cache.
  R.large = R.n * static_cast<int64_t>(sizeof(T)) >= (int64_t{8} << 20);
  R.stream = stream_for(R.K.name, &R.stream_width);
  // Tiles split over the intra-op threads (grain: kGrain elements); a tile is a multiple of
  // kAlign, so chunk boundaries are too.
  static_assert(kFusedTile % cpu::kAlign == 0, "tiles must keep the elementwise chunk alignment");
  cpu::parallel_for(0, tiles, cpu::kGrain / kFusedTile, [&](int64_t t0, int64_t t1) { R.chunk(t0, t1); });
  R.finish(outs);
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

// bfloat16 matmul / convolution through oneDNN on AVX-512 BF16 (see bf16_native.hpp).
// oneDNN 2.6 picks brgemm (matmul) and jit avx512_core_bf16 (convolution) kernels for bf16
// operands on such a CPU; on one without it, its bf16 kernels emulate the dot products and run
// slower than float32 (a 4096x512 @ 512x512 matmul: 26 ms emulated, 4.5 ms native, 9 ms float32
// oneDNN, 19-25 ms OpenBLAS sgemm here), so native() also asks the ISA, not only the build.
// Primitives are built once per shape and layout and kept (process-wide caches, as
// conv_onednn.cpp does for float32).

#include "gradlab/backend/cpu/bf16_native.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "gradlab/backend/cpu/vec/vec.hpp"

#if GRADLAB_HAVE_DNNL

#include <array>
#include <dnnl.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "gradlab/backend/cpu/loops.hpp"
#include "gradlab/backend/cpu/parallel.hpp"

namespace gradlab::cpu::bf16 {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
constexpr auto kBf16 = memory::data_type::bf16;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

std::atomic<bool>& enabled() {
  static std::atomic<bool> on{[] {
    const char* v = std::getenv("GRADLAB_BF16_NATIVE");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }()};
  return on;
}

std::atomic<int64_t> g_runs{0};

// One cached primitive with the layouts it wants and buffers in them (allocated once, reused).
struct Entry {
  dnnl::primitive prim;
  memory::desc a, b, out, a_plain, b_plain, out_plain;
  memory ma, mb, mo;
  std::mutex mu;  // two threads running the same shape take turns on the buffers
};

// Keyed by the shape and the OpenMP thread count too: a oneDNN primitive keeps the count it was
// built with, so after set_num_threads (or in a forked child, 1 thread) another one is built
// (as conv_onednn.cpp does).
template <class Key>
std::shared_ptr<Entry> cached(const Key& k, std::shared_ptr<Entry> (*build)(const Key&)) {
  static std::mutex mu;
  static std::map<std::pair<Key, int>, std::shared_ptr<Entry>> cache;
  cpu::detail::sync_runtime_threads();  // build and run with set_num_threads' count (1 in a fork)
  const std::pair<Key, int> key{k, cpu::detail::runtime_threads()};
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  std::shared_ptr<Entry> e;
  try {
    e = build(k);
  } catch (const dnnl::error&) {
    // no bf16 implementation for this shape / layout: null, cached too; the fallback runs it
  }
  return cache.emplace(key, e).first->second;
}

void* data(const Tensor& t) { return const_cast<uint16_t*>(ptr<const uint16_t>(t)); }

// `plain` memory over p, or its reordered copy in `buf` when the primitive wants another layout.
// NOTE: matmul entries have no buffers (their layouts are the plain ones): compare descs, not
// buf.get_desc() (an empty memory throws "object is not initialized").
memory in_layout(const memory::desc& plain, const memory::desc& want, memory buf, void* p, dnnl::stream& st) {
  memory m(plain, engine(), p);
  if (plain == want) return m;
  dnnl::reorder(m, buf).execute(st, m, buf);
  return buf;
}

void run(Entry& e, int arg_a, const Tensor& a, int arg_b, const Tensor& b, int arg_out, const Tensor& out,
         const Tensor& bias) {
  std::lock_guard<std::mutex> lock(e.mu);
  dnnl::stream st(engine());
  memory ma = in_layout(e.a_plain, e.a, e.ma, data(a), st);
  memory mb = in_layout(e.b_plain, e.b, e.mb, data(b), st);
  memory plain_out(e.out_plain, engine(), data(out));
  const bool direct = e.out == e.out_plain;
  memory mo = direct ? plain_out : e.mo;
  std::unordered_map<int, memory> args{{arg_a, ma}, {arg_b, mb}, {arg_out, mo}};
  if (bias.defined()) args.emplace(DNNL_ARG_BIAS, memory(memory::desc({bias.numel()}, kBf16, tag::x), engine(), data(bias)));
  e.prim.execute(st, args);
  if (!direct) dnnl::reorder(mo, plain_out).execute(st, mo, plain_out);
  st.wait();
  g_runs.fetch_add(1, std::memory_order_relaxed);
}

bool applies(const Tensor& t) { return native() && t.defined() && t.dtype() == kBFloat16 && !t.is_cuda(); }

// ---- matmul ---------------------------------------------------------------------------------
// Key: B, M, K, N and the element strides of a [B, M, K] and b [B, K, N] (oneDNN takes any
// strides for plain row-/column-major matrices: a transposed view needs no copy).
using MmKey = std::array<int64_t, 10>;

std::shared_ptr<Entry> build_mm(const MmKey& k) {
  const memory::dims ad{k[0], k[1], k[2]}, bd{k[0], k[2], k[3]}, cd{k[0], k[1], k[3]};
  const memory::desc a(ad, kBf16, memory::dims{k[4], k[5], k[6]}), b(bd, kBf16, memory::dims{k[7], k[8], k[9]}),
      c(cd, kBf16, tag::abc);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), engine());
  auto e = std::make_shared<Entry>();
  e->prim = dnnl::matmul(pd);
  e->a = e->a_plain = a, e->b = e->b_plain = b, e->out = e->out_plain = c;
  return e;
}

// A matrix's strides as oneDNN should see them: plain row- or column-major with a leading
// dimension of at least the row / column length, else {} (the caller makes it contiguous).
// NOTE: a size-1 dim's stride is arbitrary (is_contiguous ignores it): normalize it first.
bool plain_matrix(int64_t rows, int64_t cols, int64_t& rs, int64_t& cs) {
  if (cols == 1) cs = 1;
  if (rows == 1) rs = std::max<int64_t>(cols, 1);
  if (cs == 1 && rs >= cols) return true;
  if (rs == 1 && cs >= rows) return true;
  return false;
}

}  // namespace

bool native_supported() {
  static const bool s = [] {
    if (&vec::kernels() != &vec::kAvx512) return false;  // gradlab's level (GRADLAB_CPU_CAPABILITY)
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());  // honours DNNL_MAX_CPU_ISA
    return (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
  }();
  return s;
}
bool native() { return enabled().load() && native_supported(); }
bool set_native(bool on) { return enabled().exchange(on); }
int64_t native_runs() { return g_runs.load(); }

Tensor bmm(const Tensor& a_in, const Tensor& b_in) {
  if (!applies(a_in) || !applies(b_in)) return {};
  const int64_t B = a_in.size(0), M = a_in.size(1), K = a_in.size(2), N = b_in.size(2);
  if (B == 0 || M == 0 || K == 0 || N == 0) return {};
  Tensor a = a_in, b = b_in;
  int64_t ar = a.stride(1), ac = a.stride(2), br = b.stride(1), bc = b.stride(2);
  if (!plain_matrix(M, K, ar, ac)) a = contiguous(a), ar = K, ac = 1;
  if (!plain_matrix(K, N, br, bc)) b = contiguous(b), br = N, bc = 1;
  // batch strides: any value when B == 1; a broadcast batch (stride 0) is made dense
  auto batch_stride = [&](Tensor& t, int64_t rows, int64_t cols, int64_t& r, int64_t& c) {
    if (B == 1) return rows * cols;
    if (t.stride(0) == 0) t = contiguous(t), r = cols, c = 1;
    return t.stride(0);
  };
  const int64_t as = batch_stride(a, M, K, ar, ac), bs = batch_stride(b, K, N, br, bc);
  const auto e = cached<MmKey>({B, M, K, N, as, ar, ac, bs, br, bc}, &build_mm);
  if (!e) return {};
  Tensor out = make_tensor({B, M, N}, kBFloat16);
  run(*e, DNNL_ARG_SRC, a, DNNL_ARG_WEIGHTS, b, DNNL_ARG_DST, out, Tensor());
  return out;
}

// ---- convolution ----------------------------------------------------------------------------
namespace {

enum class Dir : int64_t { Forward, BackwardData, BackwardWeights };
using ConvKey = std::array<int64_t, 18>;

ConvKey conv_key(Dir dir, const Conv2dGeom& g, bool bias) {
  const Window2d& w = g.win;
  return {static_cast<int64_t>(dir), bias, g.N, g.C, g.H, g.W, g.O, g.oh, g.ow, g.groups, w.kh, w.kw, w.sh, w.sw,
          w.ph, w.pw, w.dh, w.dw};
}

std::shared_ptr<Entry> build_conv(const ConvKey& k) {
  using namespace dnnl;
  const auto dir = static_cast<Dir>(k[0]);
  const bool bias = k[1] != 0;
  const int64_t N = k[2], C = k[3], H = k[4], W = k[5], O = k[6], oh = k[7], ow = k[8], G = k[9], kh = k[10],
                kw = k[11];
  const memory::dims src{N, C, H, W}, dst{N, O, oh, ow}, bdims{O};
  const memory::dims wts = G == 1 ? memory::dims{O, C, kh, kw} : memory::dims{G, O / G, C / G, kh, kw};
  const tag wtag = G == 1 ? tag::oihw : tag::goihw;
  // oneDNN's dilation counts the gaps (0 = dense); padding right = left (floor window count)
  const memory::dims strides{k[12], k[13]}, pad{k[14], k[15]}, dil{k[16] - 1, k[17] - 1};
  const memory::desc any_src(src, kBf16, tag::any), any_dst(dst, kBf16, tag::any), any_w(wts, kBf16, tag::any),
      b_md(bdims, kBf16, tag::x);
  const memory::desc src_p(src, kBf16, tag::nchw), dst_p(dst, kBf16, tag::nchw), w_p(wts, kBf16, wtag);
  const auto alg = algorithm::convolution_direct;
  auto fwd_d = bias ? convolution_forward::desc(prop_kind::forward_training, alg, any_src, any_w, b_md, any_dst,
                                                strides, dil, pad, pad)
                    : convolution_forward::desc(prop_kind::forward_training, alg, any_src, any_w, any_dst,
                                                strides, dil, pad, pad);
  const convolution_forward::primitive_desc fpd(fwd_d, engine());
  auto e = std::make_shared<Entry>();
  switch (dir) {
    case Dir::Forward:
      e->prim = convolution_forward(fpd);
      e->a = fpd.src_desc(), e->b = fpd.weights_desc(), e->out = fpd.dst_desc();
      e->a_plain = src_p, e->b_plain = w_p, e->out_plain = dst_p;
      break;
    case Dir::BackwardData: {
      const convolution_backward_data::primitive_desc pd(
          convolution_backward_data::desc(alg, any_src, any_w, any_dst, strides, dil, pad, pad), engine(), fpd);
      e->prim = convolution_backward_data(pd);
      e->a = pd.diff_dst_desc(), e->b = pd.weights_desc(), e->out = pd.diff_src_desc();
      e->a_plain = dst_p, e->b_plain = w_p, e->out_plain = src_p;
      break;
    }
    case Dir::BackwardWeights: {
      const convolution_backward_weights::primitive_desc pd(
          convolution_backward_weights::desc(alg, any_src, any_w, any_dst, strides, dil, pad, pad), engine(), fpd);
      e->prim = convolution_backward_weights(pd);
      e->a = pd.diff_dst_desc(), e->b = pd.src_desc(), e->out = pd.diff_weights_desc();
      e->a_plain = dst_p, e->b_plain = src_p, e->out_plain = w_p;
      break;
    }
  }
  e->ma = memory(e->a, engine()), e->mb = memory(e->b, engine()), e->mo = memory(e->out, engine());
  return e;
}

// oneDNN derives the window count by the floor formula: conv_transpose2d with output_padding
// >= stride has more windows, and stays on the fallback.
bool conv_applies(const Conv2dGeom& g, const Tensor& a, const Tensor& b) {
  return applies(a) && applies(b) && g.N > 0 && g.O > 0 && g.C > 0 && g.win.out_h(g.H) == g.oh &&
         g.win.out_w(g.W) == g.ow;
}

}  // namespace

Tensor conv2d_forward(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in, const Conv2dGeom& g) {
  if (!conv_applies(g, x_in, w_in) || (b_in.defined() && !applies(b_in))) return {};
  const Tensor x = contiguous(x_in), w = contiguous(w_in), b = b_in.defined() ? contiguous(b_in) : Tensor();
  const auto e = cached(conv_key(Dir::Forward, g, b.defined()), &build_conv);
  if (!e) return {};
  Tensor y = make_tensor({g.N, g.O, g.oh, g.ow}, kBFloat16);
  run(*e, DNNL_ARG_SRC, x, DNNL_ARG_WEIGHTS, w, DNNL_ARG_DST, y, b);
  return y;
}

Tensor conv2d_backward_input(const Tensor& dy_in, const Tensor& w_in, const Tensor& b_in, const Conv2dGeom& g) {
  // conv_transpose2d's bias (added to every dx[n, c]) stays on the fallback
  if (b_in.defined() || !conv_applies(g, dy_in, w_in)) return {};
  const Tensor dy = contiguous(dy_in), w = contiguous(w_in);
  const auto e = cached(conv_key(Dir::BackwardData, g, false), &build_conv);
  if (!e) return {};
  Tensor dx = make_tensor({g.N, g.C, g.H, g.W}, kBFloat16);
  run(*e, DNNL_ARG_DIFF_DST, dy, DNNL_ARG_WEIGHTS, w, DNNL_ARG_DIFF_SRC, dx, Tensor());
  return dx;
}

Tensor conv2d_backward_weight(const Tensor& x_in, const Tensor& dy_in, const Conv2dGeom& g) {
  if (!conv_applies(g, x_in, dy_in)) return {};
  const Tensor x = contiguous(x_in), dy = contiguous(dy_in);
  const auto e = cached(conv_key(Dir::BackwardWeights, g, false), &build_conv);
  if (!e) return {};
  Tensor dw = make_tensor({g.O, g.C / g.groups, g.win.kh, g.win.kw}, kBFloat16);
  run(*e, DNNL_ARG_DIFF_DST, dy, DNNL_ARG_SRC, x, DNNL_ARG_DIFF_WEIGHTS, dw, Tensor());
  return dw;
}

}  // namespace gradlab::cpu::bf16

#else  // no oneDNN: every bfloat16 matmul / convolution widens to float32

namespace gradlab::cpu::bf16 {
bool native_supported() { return false; }
bool native() { return false; }
bool set_native(bool) { return false; }
int64_t native_runs() { return 0; }
Tensor bmm(const Tensor&, const Tensor&) { return {}; }
Tensor conv2d_forward(const Tensor&, const Tensor&, const Tensor&, const Conv2dGeom&) { return {}; }
Tensor conv2d_backward_input(const Tensor&, const Tensor&, const Tensor&, const Conv2dGeom&) { return {}; }
Tensor conv2d_backward_weight(const Tensor&, const Tensor&, const Conv2dGeom&) { return {}; }
}  // namespace gradlab::cpu::bf16

#endif

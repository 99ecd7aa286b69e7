// bfloat16 matmul / convolution through oneDNN on AVX-512 BF16 (see bf16_native.hpp).
// oneDNN 2.6 picks brgemm (matmul) and jit avx512_core_bf16 (convolution) kernels for bf16
// operands on such a CPU; on one without it, its bf16 kernels emulate the dot products and run
// slower than float32 (a 4096x512 @ 512x512 matmul: 26 ms emulated, 4.5 ms native, 9 ms float32
// oneDNN, 19-25 ms OpenBLAS sgemm here), so native() also asks the ISA, not only the build.
// Primitives are built once per shape, layout and thread count and kept (onednn_prim.hpp's
// caches; the convolutions are the float32 ones of conv_onednn.cpp at another data type).

#include "gradlab/backend/cpu/bf16_native.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "gradlab/backend/cpu/vec/vec.hpp"

#if GRADLAB_HAVE_DNNL

#include <array>

#include "gradlab/backend/cpu/loops.hpp"
#include "gradlab/backend/cpu/onednn_prim.hpp"

namespace gradlab::cpu::bf16 {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
constexpr auto kBf16 = memory::data_type::bf16;

std::atomic<bool>& enabled() {
  static std::atomic<bool> on{[] {
    const char* v = std::getenv("GRADLAB_BF16_NATIVE");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }()};
  return on;
}

std::atomic<int64_t> g_runs{0};

using onednn::Entry;
using onednn::cached;
using onednn::engine;

void* data(const Tensor& t) { return const_cast<uint16_t*>(ptr<const uint16_t>(t)); }

// Runs one cached primitive on bfloat16 tensors (onednn::run) and counts it.
void run(Entry& e, int arg_a, const Tensor& a, int arg_b, const Tensor& b, int arg_out, const Tensor& out,
         const Tensor& bias) {
  onednn::run(e, arg_a, data(a), arg_b, data(b), arg_out, data(out), bias.defined() ? data(bias) : nullptr,
              bias.defined() ? bias.numel() : 0, kBf16);
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

using onednn::Dir;

std::shared_ptr<Entry> conv_primitive(Dir dir, const Conv2dGeom& g, bool bias) {
  return cached(onednn::conv_key(dir, g, bias, kBf16), &onednn::build_conv);
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
  const auto e = conv_primitive(Dir::Forward, g, b.defined());
  if (!e) return {};
  Tensor y = make_tensor({g.N, g.O, g.oh, g.ow}, kBFloat16);
  run(*e, DNNL_ARG_SRC, x, DNNL_ARG_WEIGHTS, w, DNNL_ARG_DST, y, b);
  return y;
}

Tensor conv2d_backward_input(const Tensor& dy_in, const Tensor& w_in, const Tensor& b_in, const Conv2dGeom& g) {
  // conv_transpose2d's bias (added to every dx[n, c]) stays on the fallback
  if (b_in.defined() || !conv_applies(g, dy_in, w_in)) return {};
  const Tensor dy = contiguous(dy_in), w = contiguous(w_in);
  const auto e = conv_primitive(Dir::BackwardData, g, false);
  if (!e) return {};
  Tensor dx = make_tensor({g.N, g.C, g.H, g.W}, kBFloat16);
  run(*e, DNNL_ARG_DIFF_DST, dy, DNNL_ARG_WEIGHTS, w, DNNL_ARG_DIFF_SRC, dx, Tensor());
  return dx;
}

Tensor conv2d_backward_weight(const Tensor& x_in, const Tensor& dy_in, const Conv2dGeom& g) {
  if (!conv_applies(g, x_in, dy_in)) return {};
  const Tensor x = contiguous(x_in), dy = contiguous(dy_in);
  const auto e = conv_primitive(Dir::BackwardWeights, g, false);
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

// float32 convolutions through oneDNN (Debian libdnnl-dev; PyTorch's CPU convolution), when CMake
// found it (GRADLAB_HAVE_DNNL): forward, backward data (= conv_transpose2d) and backward weights
// primitives, in the blocked layouts oneDNN picks ("any"), with reorders from / to gradlab's NCHW.
// Primitives and reorders are built once per shape and kept (a process-wide cache). float64,
// and shapes whose window count is not the usual floor formula (conv_transpose2d with
// output_padding >= stride), stay on the GEMM path (conv_gemm.cpp). bench_conv measures both.
// GRADLAB_CONV_ONEDNN=0 turns this path off (the GEMM path then runs float32 too).

#include "gradlab/backend/cpu/conv_onednn.hpp"

#if GRADLAB_HAVE_DNNL

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "gradlab/backend/cpu/loops.hpp"
#include "gradlab/backend/cpu/parallel.hpp"

namespace gradlab::cpu::onednn {

namespace {

using dnnl::memory;
using tag = memory::format_tag;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

enum class Dir : int64_t { Forward, BackwardData, BackwardWeights };

// One cached primitive: its argument descriptors in oneDNN's layouts, and the plain ones.
// The buffers in oneDNN's layouts are allocated once here and reused by every call (no new pages
// per step); `mu` serializes two threads running the same shape.
struct Entry {
  dnnl::primitive prim;
  memory::desc a, b, out;  // the primitive's layouts (src/diff_dst, weights/src, result)
  memory::desc a_plain, b_plain, out_plain;
  memory ma, mb, mo;  // buffers in those layouts (used where they differ from the plain ones)
  std::mutex mu;
};

using Key = std::array<int64_t, 19>;

// The last entry is the OpenMP thread count: a oneDNN primitive keeps the count it was created
// with, so after set_num_threads (or in a forked child, where only 1 thread exists) another one
// is built.
Key key_of(Dir dir, const Conv2dGeom& g, bool bias) {
  const Window2d& w = g.win;
  return {static_cast<int64_t>(dir),
          bias,
          g.N,
          g.C,
          g.H,
          g.W,
          g.O,
          g.oh,
          g.ow,
          g.groups,
          w.kh,
          w.kw,
          w.sh,
          w.sw,
          w.ph,
          w.pw,
          w.dh,
          w.dw,
          cpu::detail::runtime_threads()};
}

std::shared_ptr<Entry> build(Dir dir, const Conv2dGeom& g, bool bias) {
  using namespace dnnl;
  const Window2d& w = g.win;
  const auto f32 = memory::data_type::f32;
  const memory::dims src{g.N, g.C, g.H, g.W}, dst{g.N, g.O, g.oh, g.ow}, bdims{g.O};
  const memory::dims wts = g.groups == 1
                               ? memory::dims{g.O, g.C, w.kh, w.kw}
                               : memory::dims{g.groups, g.O / g.groups, g.C / g.groups, w.kh, w.kw};
  const tag wtag = g.groups == 1 ? tag::oihw : tag::goihw;
  // oneDNN's dilation counts the gaps (0 = dense); padding right = left (oneDNN, as PyTorch,
  // floors the window count).
  const memory::dims strides{w.sh, w.sw}, dil{w.dh - 1, w.dw - 1}, pad{w.ph, w.pw};
  const memory::desc any_src(src, f32, tag::any), any_dst(dst, f32, tag::any),
      any_w(wts, f32, tag::any), b_md(bdims, f32, tag::x);
  const memory::desc src_p(src, f32, tag::nchw), dst_p(dst, f32, tag::nchw), w_p(wts, f32, wtag);
  const auto alg = algorithm::convolution_direct;
  auto fwd_d = bias ? convolution_forward::desc(prop_kind::forward_training, alg, any_src, any_w,
                                                b_md, any_dst, strides, dil, pad, pad)
                    : convolution_forward::desc(prop_kind::forward_training, alg, any_src, any_w,
                                                any_dst, strides, dil, pad, pad);
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
          convolution_backward_data::desc(alg, any_src, any_w, any_dst, strides, dil, pad, pad),
          engine(), fpd);
      e->prim = convolution_backward_data(pd);
      e->a = pd.diff_dst_desc(), e->b = pd.weights_desc(), e->out = pd.diff_src_desc();
      e->a_plain = dst_p, e->b_plain = w_p, e->out_plain = src_p;
      break;
    }
    case Dir::BackwardWeights: {
      const convolution_backward_weights::primitive_desc pd(
          convolution_backward_weights::desc(alg, any_src, any_w, any_dst, strides, dil, pad, pad),
          engine(), fpd);
      e->prim = convolution_backward_weights(pd);
      e->a = pd.diff_dst_desc(), e->b = pd.src_desc(), e->out = pd.diff_weights_desc();
      e->a_plain = dst_p, e->b_plain = src_p, e->out_plain = w_p;
      break;
    }
  }
  e->ma = memory(e->a, engine()), e->mb = memory(e->b, engine()), e->mo = memory(e->out, engine());
  return e;
}

std::shared_ptr<Entry> cached(Dir dir, const Conv2dGeom& g, bool bias) {
  static std::mutex mu;
  static std::map<Key, std::shared_ptr<Entry>> cache;
  cpu::detail::sync_runtime_threads();  // build and run with set_num_threads' count (1 in a fork)
  const Key k = key_of(dir, g, bias);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(k);
  if (it != cache.end()) return it->second;
  std::shared_ptr<Entry> e;
  try {
    e = build(dir, g, bias);
  } catch (const dnnl::error&) {
    // a shape oneDNN has no implementation for: null, cached too; the GEMM path runs it
  }
  return cache.emplace(k, e).first->second;
}

// `plain` memory over p, or its reordered copy in `buf` when the layouts differ.
memory in_layout(const memory::desc& plain, memory buf, void* p, dnnl::stream& st) {
  memory m(plain, engine(), p);
  if (plain == buf.get_desc()) return m;
  dnnl::reorder(m, buf).execute(st, m, buf);
  return buf;
}

// Runs one cached primitive: a and b read from gradlab tensors, the result written to out.
void run(Entry& e, int arg_a, const Tensor& a, int arg_b, const Tensor& b, int arg_out,
         const Tensor& out, const Tensor& bias) {
  std::lock_guard<std::mutex> lock(e.mu);
  dnnl::stream st(engine());
  memory ma = in_layout(e.a_plain, e.ma, const_cast<float*>(ptr<const float>(a)), st);
  memory mb = in_layout(e.b_plain, e.mb, const_cast<float*>(ptr<const float>(b)), st);
  memory plain_out(e.out_plain, engine(), ptr<float>(out));
  const bool direct = e.out == e.out_plain;
  memory mo = direct ? plain_out : e.mo;
  std::unordered_map<int, memory> args{{arg_a, ma}, {arg_b, mb}, {arg_out, mo}};
  if (bias.defined())
    args.emplace(DNNL_ARG_BIAS, memory(memory::desc({bias.numel()}, memory::data_type::f32, tag::x),
                                       engine(), const_cast<float*>(ptr<const float>(bias))));
  e.prim.execute(st, args);
  if (!direct) dnnl::reorder(mo, plain_out).execute(st, mo, plain_out);
  st.wait();
}

std::atomic<bool>& enabled() {
  static std::atomic<bool> on{[] {
    const char* v = std::getenv("GRADLAB_CONV_ONEDNN");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }()};
  return on;
}

}  // namespace

bool built() { return true; }
bool set_enabled(bool on) { return enabled().exchange(on); }

// NOTE: few input channels per group stay on the GEMM path: bench_conv's conv1 (1 channel, 3x3)
// runs 2.6x faster there, conv2 (16 channels) 2-3x slower; the cut at 4 between them is a guess,
// not a measurement.
constexpr int64_t kMinChannelsPerGroup = 4;

bool usable(const Conv2dGeom& g, ScalarType dtype) {
  return enabled().load() && dtype == kFloat32 && g.N > 0 && g.O > 0 &&
         g.C / g.groups >= kMinChannelsPerGroup && g.win.out_h(g.H) == g.oh &&
         g.win.out_w(g.W) == g.ow;
}

Tensor forward(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in, const Conv2dGeom& g) {
  const Tensor x = contiguous(x_in), w = contiguous(w_in);
  const Tensor b = b_in.defined() ? contiguous(b_in) : Tensor();
  const auto e = cached(Dir::Forward, g, b.defined());
  if (!e) return {};
  Tensor y = make_tensor({g.N, g.O, g.oh, g.ow}, kFloat32);
  run(*e, DNNL_ARG_SRC, x, DNNL_ARG_WEIGHTS, w, DNNL_ARG_DST, y, b);
  return y;
}

Tensor backward_input(const Tensor& dy_in, const Tensor& w_in, const Tensor& b_in,
                      const Conv2dGeom& g) {
  const Tensor dy = contiguous(dy_in), w = contiguous(w_in);
  const auto e = cached(Dir::BackwardData, g, false);
  if (!e) return {};
  Tensor dx = make_tensor({g.N, g.C, g.H, g.W}, kFloat32);
  run(*e, DNNL_ARG_DIFF_DST, dy, DNNL_ARG_WEIGHTS, w, DNNL_ARG_DIFF_SRC, dx, Tensor());
  if (b_in.defined()) {  // conv_transpose2d's bias: dx[n, c] += b[c]
    const Tensor b = contiguous(b_in);
    const float* pb = ptr<const float>(b);
    float* p = ptr<float>(dx);
    const int64_t HW = g.H * g.W;
    for (int64_t nc = 0; nc < g.N * g.C; ++nc)
      for (int64_t i = 0; i < HW; ++i) p[nc * HW + i] += pb[nc % g.C];
  }
  return dx;
}

Tensor backward_weight(const Tensor& x_in, const Tensor& dy_in, const Conv2dGeom& g) {
  const Tensor x = contiguous(x_in), dy = contiguous(dy_in);
  const auto e = cached(Dir::BackwardWeights, g, false);
  if (!e) return {};
  Tensor dw = make_tensor({g.O, g.C / g.groups, g.win.kh, g.win.kw}, kFloat32);
  run(*e, DNNL_ARG_DIFF_DST, dy, DNNL_ARG_SRC, x, DNNL_ARG_DIFF_WEIGHTS, dw, Tensor());
  return dw;
}

}  // namespace gradlab::cpu::onednn

#else  // no oneDNN: the GEMM path runs every case

namespace gradlab::cpu::onednn {
bool usable(const Conv2dGeom&, ScalarType) { return false; }
bool built() { return false; }
bool set_enabled(bool) { return false; }
Tensor forward(const Tensor&, const Tensor&, const Tensor&, const Conv2dGeom&) { return {}; }
Tensor backward_input(const Tensor&, const Tensor&, const Tensor&, const Conv2dGeom&) { return {}; }
Tensor backward_weight(const Tensor&, const Tensor&, const Conv2dGeom&) { return {}; }
}  // namespace gradlab::cpu::onednn

#endif

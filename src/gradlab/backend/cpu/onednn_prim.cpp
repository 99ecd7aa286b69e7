// The oneDNN pieces conv_onednn.cpp and bf16_native.cpp share (onednn_prim.hpp).

#if GRADLAB_HAVE_DNNL

#include "gradlab/backend/cpu/onednn_prim.hpp"

#include <unordered_map>

namespace gradlab::cpu::onednn {

using dnnl::memory;
using tag = memory::format_tag;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

ConvKey conv_key(Dir dir, const Conv2dGeom& g, bool bias, memory::data_type dt) {
  const Window2d& w = g.win;
  return {static_cast<int64_t>(dir), bias, g.N, g.C, g.H, g.W, g.O, g.oh, g.ow, g.groups, w.kh, w.kw,
          w.sh, w.sw, w.ph, w.pw, w.dh, w.dw, static_cast<int64_t>(dt)};
}

std::shared_ptr<Entry> build_conv(const ConvKey& k) {
  using namespace dnnl;
  const auto dir = static_cast<Dir>(k[0]);
  const bool bias = k[1] != 0;
  const int64_t N = k[2], C = k[3], H = k[4], W = k[5], O = k[6], oh = k[7], ow = k[8], G = k[9],
                kh = k[10], kw = k[11];
  const auto dt = static_cast<memory::data_type>(k[18]);
  const memory::dims src{N, C, H, W}, dst{N, O, oh, ow}, bdims{O};
  const memory::dims wts = G == 1 ? memory::dims{O, C, kh, kw} : memory::dims{G, O / G, C / G, kh, kw};
  const tag wtag = G == 1 ? tag::oihw : tag::goihw;
  // oneDNN's dilation counts the gaps (0 = dense); padding right = left (oneDNN, as PyTorch,
  // floors the window count).
  const memory::dims strides{k[12], k[13]}, pad{k[14], k[15]}, dil{k[16] - 1, k[17] - 1};
  const memory::desc any_src(src, dt, tag::any), any_dst(dst, dt, tag::any), any_w(wts, dt, tag::any),
      b_md(bdims, dt, tag::x);
  const memory::desc src_p(src, dt, tag::nchw), dst_p(dst, dt, tag::nchw), w_p(wts, dt, wtag);
  const auto alg = algorithm::convolution_direct;
  auto fwd_d = bias ? convolution_forward::desc(prop_kind::forward_training, alg, any_src, any_w, b_md,
                                                any_dst, strides, dil, pad, pad)
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
          convolution_backward_weights::desc(alg, any_src, any_w, any_dst, strides, dil, pad, pad), engine(),
          fpd);
      e->prim = convolution_backward_weights(pd);
      e->a = pd.diff_dst_desc(), e->b = pd.src_desc(), e->out = pd.diff_weights_desc();
      e->a_plain = dst_p, e->b_plain = src_p, e->out_plain = w_p;
      break;
    }
  }
  e->ma = memory(e->a, engine()), e->mb = memory(e->b, engine()), e->mo = memory(e->out, engine());
  return e;
}

namespace {
// `plain` memory over p, or its reordered copy in `buf` when the primitive wants another layout.
// NOTE: compare descs, not buf.get_desc(): an entry whose layouts are the plain ones (a matmul)
// has no buffers, and an empty memory throws "object is not initialized".
memory in_layout(const memory::desc& plain, const memory::desc& want, memory buf, const void* p,
                 dnnl::stream& st) {
  memory m(plain, engine(), const_cast<void*>(p));
  if (plain == want) return m;
  dnnl::reorder(m, buf).execute(st, m, buf);
  return buf;
}
}  // namespace

void run(Entry& e, int arg_a, const void* a, int arg_b, const void* b, int arg_out, void* out,
         const void* bias, int64_t n_bias, memory::data_type dt) {
  std::lock_guard<std::mutex> lock(e.mu);
  dnnl::stream st(engine());
  memory ma = in_layout(e.a_plain, e.a, e.ma, a, st);
  memory mb = in_layout(e.b_plain, e.b, e.mb, b, st);
  memory plain_out(e.out_plain, engine(), out);
  const bool direct = e.out == e.out_plain;
  memory mo = direct ? plain_out : e.mo;
  std::unordered_map<int, memory> args{{arg_a, ma}, {arg_b, mb}, {arg_out, mo}};
  if (bias)
    args.emplace(DNNL_ARG_BIAS, memory(memory::desc({n_bias}, dt, tag::x), engine(), const_cast<void*>(bias)));
  e.prim.execute(st, args);
  if (!direct) dnnl::reorder(mo, plain_out).execute(st, mo, plain_out);
  st.wait();
}

}  // namespace gradlab::cpu::onednn

#endif  // GRADLAB_HAVE_DNNL

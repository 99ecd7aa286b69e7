// float32 convolutions through oneDNN (Debian libdnnl-dev; PyTorch's CPU convolution), when CMake
// found it (GRADLAB_HAVE_DNNL): forward, backward data (= conv_transpose2d) and backward weights
// primitives, in the blocked layouts oneDNN picks ("any"), with reorders from / to gradlab's NCHW.
// Primitives and reorders are built once per shape and kept (a process-wide cache). float64,
// and shapes whose window count is not the usual floor formula (conv_transpose2d with
// output_padding >= stride), stay on the GEMM path (conv_gemm.cpp). bench_conv measures both.
// GRADLAB_CONV_ONEDNN=0 turns this path off (the GEMM path then runs float32 too).

#include "gradlab/backend/cpu/conv_onednn.hpp"

#if GRADLAB_HAVE_DNNL

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "gradlab/backend/cpu/loops.hpp"
#include "gradlab/backend/cpu/onednn_prim.hpp"

namespace gradlab::cpu::onednn {

namespace {

constexpr auto kF32 = dnnl::memory::data_type::f32;

std::shared_ptr<Entry> primitive(Dir dir, const Conv2dGeom& g, bool bias) {
  return cached(conv_key(dir, g, bias, kF32), &build_conv);
}

// Runs one cached primitive: a and b read from float32 tensors, the result written to out.
void run_f32(Entry& e, int arg_a, const Tensor& a, int arg_b, const Tensor& b, int arg_out, const Tensor& out,
             const Tensor& bias) {
  run(e, arg_a, ptr<const float>(a), arg_b, ptr<const float>(b), arg_out, ptr<float>(out),
      bias.defined() ? ptr<const float>(bias) : nullptr, bias.defined() ? bias.numel() : 0, kF32);
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
// not a measurement. Depthwise convolutions (groups == C > 1) go to oneDNN, whose depthwise kernel
// beats one [Og, 9] x [9, L] GEMM per image and group: bench_vs_libtorch's
// depthwise_conv_32x64x56x56 (forward + backward, 1 thread) 38 ms against 95-100 ms.
constexpr int64_t kMinChannelsPerGroup = 4;

bool usable(const Conv2dGeom& g, ScalarType dtype) {
  return enabled().load() && dtype == kFloat32 && g.N > 0 && g.O > 0 &&
         (g.C / g.groups >= kMinChannelsPerGroup || (g.groups > 1 && g.C == g.groups)) &&
         g.win.out_h(g.H) == g.oh &&
         g.win.out_w(g.W) == g.ow;
}

Tensor forward(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in, const Conv2dGeom& g) {
  const Tensor x = contiguous(x_in), w = contiguous(w_in);
  const Tensor b = b_in.defined() ? contiguous(b_in) : Tensor();
  const auto e = primitive(Dir::Forward, g, b.defined());
  if (!e) return {};
  Tensor y = make_tensor({g.N, g.O, g.oh, g.ow}, kFloat32);
  run_f32(*e, DNNL_ARG_SRC, x, DNNL_ARG_WEIGHTS, w, DNNL_ARG_DST, y, b);
  return y;
}

Tensor backward_input(const Tensor& dy_in, const Tensor& w_in, const Tensor& b_in,
                      const Conv2dGeom& g) {
  const Tensor dy = contiguous(dy_in), w = contiguous(w_in);
  const auto e = primitive(Dir::BackwardData, g, false);
  if (!e) return {};
  Tensor dx = make_tensor({g.N, g.C, g.H, g.W}, kFloat32);
  run_f32(*e, DNNL_ARG_DIFF_DST, dy, DNNL_ARG_WEIGHTS, w, DNNL_ARG_DIFF_SRC, dx, Tensor());
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
  const auto e = primitive(Dir::BackwardWeights, g, false);
  if (!e) return {};
  Tensor dw = make_tensor({g.O, g.C / g.groups, g.win.kh, g.win.kw}, kFloat32);
  run_f32(*e, DNNL_ARG_DIFF_DST, dy, DNNL_ARG_SRC, x, DNNL_ARG_DIFF_WEIGHTS, dw, Tensor());
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

// Autocast's bfloat16 matmul / linear / conv2d on the CPU: the native path (AVX-512 BF16 through
// oneDNN, backend/cpu/bf16_native.hpp) and the fallback (operands widened to float32, the float32
// kernel, the result rounded once) both stay within bfloat16's bound of the float32 result, on
// odd shapes and non-contiguous operands, forward and backward; the native path runs when the
// CPU has it and not when it is switched off (set_native(false), GRADLAB_BF16_NATIVE=0,
// GRADLAB_CPU_CAPABILITY below avx512, DNNL_MAX_CPU_ISA below AVX512_CORE_BF16: ctest runs this
// file under those too, checks/amp/extras.cmake).
//
// The bound, per output element, u = 2^-8 (bfloat16's unit roundoff): each operand is rounded
// once (relative error u), so each product a_k b_k is off by at most (2u + u^2) |a_k| |b_k|; the
// float32 sums add K * 2^-24 of the same scale (far below); the result is rounded once more
// (u |y|). So |y_bf16 - y_f32| <= 2.01 u (|A| |B|) + u |y_f32| (1 + 2.01u) + ... : checked as
// 3u (|A||B|) + 2u |y_f32|, with (|A||B|) computed in float32 by the same op on |A|, |B|.
// Backward adds the rounding of the upstream gradient and of the result: k = 4 there.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <strings.h>
#include <string>

#include "gradlab/backend/cpu/bf16_native.hpp"
#include "gradlab/backend/cpu/conv_onednn.hpp"
#include "gradlab/backend/kernels.hpp"
#include "gradlab/core/tensor_impl.hpp"
#include "gradlab/gradlab.hpp"

namespace {

using namespace gradlab;
namespace F = gradlab::nn::functional;
namespace bf = gradlab::cpu::bf16;

const double kU = std::ldexp(1.0, -8);

// bf::set_native(on) for one scope.
struct Native {
  bool before;
  explicit Native(bool on) : before(bf::set_native(on)) {}
  ~Native() { bf::set_native(before); }
};

// max over elements of |got - ref| - (k u scale + 2u |ref|): <= 0 when within the bound.
double excess(const Tensor& got, const Tensor& ref, const Tensor& scale, double k) {
  Tensor g = got.to(kFloat64), r = ref.to(kFloat64), s = scale.to(kFloat64);
  return ((g - r).abs() - (s * (k * kU) + r.abs() * (2 * kU))).max().item<double>();
}

// The two paths a CPU bfloat16 matmul can take here: native (where the CPU has it) and fallback.
std::vector<bool> paths() {
  std::vector<bool> p{false};
  if (bf::native_supported()) p.push_back(true);
  return p;
}

std::string name(bool native) { return native ? "native" : "fallback"; }

TEST(Bf16Native, MatmulWithinBf16BoundOnOddShapesAndLayouts) {
  manual_seed(10);
  // (M, K, N): ones, primes, a K that is no multiple of the vector width, a wide N
  const int64_t shapes[][3] = {{1, 1, 1}, {1, 7, 1}, {7, 13, 5}, {33, 65, 17}, {64, 257, 3}, {5, 3, 130}};
  for (bool native : paths()) {
    Native guard(native);
    for (const auto& s : shapes) {
      const int64_t M = s[0], K = s[1], N = s[2];
      Tensor a = randn({M, K}), b = randn({K, N});
      Tensor bt = randn({N, K}).t();                                  // column-major view
      Tensor as = randn({M, 2 * K}).narrow(1, 0, K);                  // row stride 2K
      Tensor ac = randn({M, 2 * K}).slice(1, 0, 2 * K, 2);             // column stride 2: copied
      for (const auto& [x, y] : std::vector<std::pair<Tensor, Tensor>>{{a, b}, {a, bt}, {as, b}, {ac, bt}}) {
        const int64_t before = bf::native_runs();
        Tensor got;
        {
          amp::autocast ac16(kCPU);
          got = matmul(x, y);
        }
        ASSERT_EQ(got.dtype(), kBFloat16);
        EXPECT_EQ(bf::native_runs() > before, native) << name(native);
        const Tensor ref = matmul(x, y), scale = matmul(x.abs(), y.abs());
        EXPECT_LE(excess(got, ref, scale, 3), 0.0)
            << name(native) << " M=" << M << " K=" << K << " N=" << N << " strides " << x.stride(0) << ","
            << x.stride(1) << " / " << y.stride(0) << "," << y.stride(1);
      }
    }
  }
}

TEST(Bf16Native, BmmWithBatchesAndABroadcastBatch) {
  manual_seed(11);
  for (bool native : paths()) {
    Native guard(native);
    Tensor a = randn({3, 9, 11}), b = randn({3, 11, 6});
    Tensor b1 = randn({1, 11, 6}).expand({3, 11, 6});  // batch stride 0
    Tensor at = randn({3, 11, 9}).transpose(1, 2);
    for (const auto& [x, y] : std::vector<std::pair<Tensor, Tensor>>{{a, b}, {a, b1}, {at, b}}) {
      Tensor got;
      {
        amp::autocast ac(kCPU);
        got = bmm(x, y);
      }
      ASSERT_EQ(got.dtype(), kBFloat16);
      EXPECT_LE(excess(got, bmm(x, y), bmm(x.abs(), y.abs()), 3), 0.0) << name(native);
    }
  }
}

// linear forward and its three gradients under autocast against float32.
TEST(Bf16Native, LinearForwardAndBackwardWithinBound) {
  manual_seed(12);
  for (bool native : paths()) {
    Native guard(native);
    for (const auto& s : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {37, 19, 23}, {128, 64, 10}}) {
      const int64_t M = s[0], K = s[1], N = s[2];
      Tensor x = randn({M, K}), w = randn({N, K}), b = randn({N}), g = randn({M, N});
      auto leaf = [](const Tensor& t) { return t.detach().requires_grad_(true); };
      Tensor x1 = leaf(x), w1 = leaf(w), b1 = leaf(b);
      Tensor y;
      {
        amp::autocast ac(kCPU);
        y = F::linear(x1, w1, b1);
      }
      ASSERT_EQ(y.dtype(), kBFloat16);
      sum(y.to(kFloat32) * g).backward();
      Tensor x2 = leaf(x), w2 = leaf(w), b2 = leaf(b);
      Tensor y2 = F::linear(x2, w2, b2);
      sum(y2 * g).backward();
      // scales: the same op on absolute values (|x| |w|ᵀ + |b|, |g| |w|, |g|ᵀ |x|, Σ |g|)
      Tensor xa = leaf(x.abs()), wa = leaf(w.abs()), ba = leaf(b.abs());
      sum(F::linear(xa, wa, ba) * g.abs()).backward();
      const Tensor ys = F::linear(x.abs(), w.abs(), b.abs());
      const std::string at = name(native) + " M=" + std::to_string(M) + " K=" + std::to_string(K);
      EXPECT_LE(excess(y, y2, ys, 3), 0.0) << at;
      EXPECT_LE(excess(x1.grad(), x2.grad(), xa.grad(), 4), 0.0) << at;
      EXPECT_LE(excess(w1.grad(), w2.grad(), wa.grad(), 4), 0.0) << at;
      EXPECT_LE(excess(b1.grad(), b2.grad(), ba.grad(), 4), 0.0) << at;
    }
  }
}

// The fallback GEMM of half operands runs in cache-sized blocks (backend/kernels.cpp,
// half_mm_fallback, 2^17 float32 elements): with K = N = 64, rows of x in blocks of 2048 (x Wᵀ,
// dy W) and, for dW = dyᵀ x, the batch in blocks of 2048 summed in float32. M = 4101: two whole
// blocks and a partial one; a row-strided x; float16 too (always the fallback). The bias
// gradient (Σ over rows) runs in blocks of 65536 elements.
TEST(Bf16Native, BlockedFallbackGemmWithinBoundPastBlockEdges) {
  manual_seed(16);
  Native guard(false);
  const int64_t M = 2 * 2048 + 5, K = 64, N = 64;
  for (const auto& [dt, strided] : std::vector<std::pair<ScalarType, bool>>{{kBFloat16, false}, {kBFloat16, true}, {kFloat16, false}}) {
    {
      Tensor x = strided ? randn({M, 2 * K}).narrow(1, 3, K) : randn({M, K});
      // g positive: no cancellation in Σ_rows g, so a dropped block shows in the bias gradient
      Tensor w = randn({N, K}), b = randn({N}), g = randn({M, N}).abs();
      auto leaf = [](const Tensor& t) { return t.detach().requires_grad_(true); };
      Tensor x1 = leaf(x), w1 = leaf(w), b1 = leaf(b);
      Tensor y;
      {
        amp::autocast ac(kCPU, dt);
        y = F::linear(x1, w1, b1);
      }
      ASSERT_EQ(y.dtype(), dt);
      sum(y.to(kFloat32) * g).backward();
      Tensor x2 = leaf(x), w2 = leaf(w), b2 = leaf(b);
      sum(F::linear(x2, w2, b2) * g).backward();
      Tensor xa = leaf(x.abs()), wa = leaf(w.abs()), ba = leaf(b.abs());
      sum(F::linear(xa, wa, ba) * g.abs()).backward();
      const std::string at = to_string(dt) + (strided ? " strided x" : "");
      EXPECT_LE(excess(y, F::linear(x, w, b), F::linear(x.abs(), w.abs(), b.abs()), 3), 0.0) << at;
      EXPECT_LE(excess(x1.grad(), x2.grad(), xa.grad(), 4), 0.0) << at;
      EXPECT_LE(excess(w1.grad(), w2.grad(), wa.grad(), 4), 0.0) << at;
      EXPECT_LE(excess(b1.grad(), b2.grad(), ba.grad(), 4), 0.0) << at;
      // matmul with a transposed a: the K-blocked branch on its own
      Tensor at_ = randn({M, N}).t(), bm = randn({M, K});
      Tensor got;
      {
        amp::autocast ac(kCPU, dt);
        got = matmul(at_, bm);
      }
      EXPECT_LE(excess(got, matmul(at_, bm), matmul(at_.abs(), bm.abs()), 3), 0.0) << at;
    }
  }
}

// conv2d forward and its three gradients under autocast against float32: odd channel counts,
// stride, padding, dilation, one channel, a non-contiguous (channels-last) input, batches the
// fallback splits into chunks.
TEST(Bf16Native, Conv2dForwardAndBackwardWithinBound) {
  manual_seed(13);
  struct Case {
    int64_t N, C, O, H, W, k, stride, pad, dil;
    bool channels_last;
  };
  const Case cases[] = {{2, 3, 16, 9, 11, 3, 1, 1, 1, false}, {3, 16, 5, 8, 8, 3, 2, 0, 1, false},
                        {1, 1, 1, 5, 5, 1, 1, 0, 1, false},   {2, 8, 12, 10, 7, 3, 1, 2, 2, false},
                        {2, 5, 7, 6, 9, 2, 1, 1, 1, true},
                        // the fallback runs 2^17-element chunks of images (backend/kernels.cpp,
                        // conv_by_images): 16 x 32 x 32 outputs -> chunks of 8, 8 and 1 images,
                        // through oneDNN (8 channels) and through im2col + GEMM (3 channels)
                        {17, 8, 16, 32, 32, 3, 1, 1, 1, false},   {17, 3, 16, 32, 32, 3, 1, 1, 1, true}};
  for (bool native : paths()) {
    Native guard(native);
    for (const Case& c : cases) {
      Tensor x = c.channels_last ? randn({c.N, c.H, c.W, c.C}).permute({0, 3, 1, 2}) : randn({c.N, c.C, c.H, c.W});
      Tensor w = randn({c.O, c.C, c.k, c.k}), b = randn({c.O});
      auto conv = [&](const Tensor& xx, const Tensor& ww, const Tensor& bb) {
        return F::conv2d(xx, ww, bb, {c.stride, c.stride}, {c.pad, c.pad}, {c.dil, c.dil});
      };
      // positive: no cancellation in Σ dy, so a dropped chunk of images shows in the bias gradient
      const Tensor g = randn(conv(x, w, b).sizes()).abs();
      auto leaf = [](const Tensor& t) { return t.detach().requires_grad_(true); };
      Tensor x1 = leaf(x), w1 = leaf(w), b1 = leaf(b);
      const int64_t before = bf::native_runs();
      Tensor y;
      {
        amp::autocast ac(kCPU);
        y = conv(x1, w1, b1);
      }
      ASSERT_EQ(y.dtype(), kBFloat16);
      sum(y.to(kFloat32) * g).backward();
      EXPECT_EQ(bf::native_runs() >= before + 3, native) << name(native) << ": forward, data and weights";
      Tensor x2 = leaf(x), w2 = leaf(w), b2 = leaf(b);
      sum(conv(x2, w2, b2) * g).backward();
      Tensor xa = leaf(x.abs()), wa = leaf(w.abs()), ba = leaf(b.abs());
      Tensor ys = conv(xa, wa, ba);
      sum(ys * g.abs()).backward();
      const std::string at = name(native) + " C=" + std::to_string(c.C) + " O=" + std::to_string(c.O) +
                             " k=" + std::to_string(c.k) + " stride=" + std::to_string(c.stride);
      EXPECT_LE(excess(y, conv(x2, w2, b2), ys, 3), 0.0) << at;
      EXPECT_LE(excess(x1.grad(), x2.grad(), xa.grad(), 4), 0.0) << at;
      EXPECT_LE(excess(w1.grad(), w2.grad(), wa.grad(), 4), 0.0) << at;
      EXPECT_LE(excess(b1.grad(), b2.grad(), ba.grad(), 4), 0.0) << at;
    }
  }
}

// Which path runs: native exactly when the CPU and build have it and nothing switched it off.
TEST(Bf16Native, NativePathRunsExactlyWhenAvailableAndOn) {
  auto env_is = [](const char* var, std::initializer_list<const char*> values) {
    const char* v = std::getenv(var);
    if (v == nullptr) return false;
    for (const char* x : values)
      if (strcasecmp(v, x) == 0) return true;
    return false;
  };
  const bool forced_off = env_is("GRADLAB_CPU_CAPABILITY", {"default", "avx2"}) ||
                          env_is("DNNL_MAX_CPU_ISA", {"SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX512_CORE",
                                                      "AVX512_CORE_VNNI"});
  if (forced_off) {
    EXPECT_FALSE(bf::native_supported());
  }
  if (env_is("GRADLAB_BF16_NATIVE", {"0"})) {
    EXPECT_FALSE(bf::native());
  }
  // A CPU with AVX-512 BF16 (cpuid, asked apart from oneDNN) and a build with oneDNN: the native
  // path must be there, so a broken detection cannot pass by running the fallback twice.
  const bool cpu_has = __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512f");
  if (cpu_has && cpu::onednn::built() && !forced_off) {
    EXPECT_TRUE(bf::native_supported());
  }
  manual_seed(14);
  Tensor x = randn({8, 16}), w = randn({4, 16}), img = randn({1, 4, 6, 6}), k = randn({2, 4, 3, 3});
  for (bool on : {true, false}) {
    Native guard(on);
    const int64_t before = bf::native_runs();
    {
      amp::autocast ac(kCPU);
      (void)F::linear(x, w, Tensor());
      (void)F::conv2d(img, k, Tensor());
    }
    EXPECT_EQ(bf::native_runs() - before, on && bf::native_supported() ? 2 : 0) << (on ? "on" : "off");
  }
  // float16 never takes it (no native float16 here): widened to float32
  Native guard(true);
  const int64_t before = bf::native_runs();
  {
    amp::autocast ac(kCPU, kFloat16);
    EXPECT_EQ(F::linear(x, w, Tensor()).dtype(), kFloat16);
    EXPECT_EQ(F::conv2d(img, k, Tensor()).dtype(), kFloat16);
  }
  EXPECT_EQ(bf::native_runs(), before);
}

// relu, its gradient, linear's bias add, max-pool and its backward on large contiguous half
// tensors run block by block (backend/kernels.cpp, about 65536 elements): bit for bit what
// widening the whole tensor gives, also past a block boundary and in a last partial block.
TEST(Bf16Native, BlockedHalfElementwiseIsBitExact) {
  manual_seed(15);
  const int64_t M = 3 * 65536 / 512 + 3, N = 512;  // 3 blocks and a partial one
  for (ScalarType dt : {kBFloat16, kFloat16}) {
    Tensor x = randn({M, N}).to(dt).requires_grad_(true), g = randn({M, N}).to(dt);
    Tensor y = relu(x);
    y.backward(g);
    const Tensor x32 = x.detach().to(kFloat32), g32 = g.to(kFloat32);
    EXPECT_TRUE(equal(y.detach(), relu(x32).to(dt)));
    EXPECT_TRUE(equal(x.grad(), where(x32 > 0, g32, zeros_like(g32)).to(dt)));
    // linear's bias: the float32 sum of the rounded product and the bias, rounded once
    Tensor a = randn({M, 8}).to(dt), w = randn({N, 8}).to(dt), b = randn({N}).to(dt);
    const Tensor prod = mm(a, w.t()).to(kFloat32);
    EXPECT_TRUE(equal(F::linear(a, w, b), (prod + b.to(kFloat32)).to(dt))) << to_string(dt);
    // max-pool and its backward (scatter_add), image by image: overlapping windows, so some
    // gradients add up; 9 images of 16 x 24 x 24, past a block boundary
    Tensor img = randn({9, 16, 24, 24}).to(dt).requires_grad_(true);
    Tensor pooled = max_pool2d(img, 3, 1, 1);
    Tensor gp = randn(pooled.sizes()).to(dt);
    pooled.backward(gp);
    Tensor img32 = img.detach().to(kFloat32).requires_grad_(true);
    Tensor pooled32 = max_pool2d(img32, 3, 1, 1);
    pooled32.backward(gp.to(kFloat32));
    EXPECT_TRUE(equal(pooled.detach(), pooled32.detach().to(dt))) << to_string(dt);
    EXPECT_TRUE(equal(img.grad(), img32.grad().to(dt))) << to_string(dt);
  }
}

// ---- the fallback's one-pass kernels: bit for bit the formula (widen, float32, round once) --------
// A bfloat16 tensor from raw bits, and its bits back (any layout).
Tensor bf16_from_bits(const std::vector<uint16_t>& bits) {
  Tensor t = make_tensor({static_cast<int64_t>(bits.size())}, kBFloat16);
  std::memcpy(t.impl()->data(), bits.data(), bits.size() * 2);
  return t;
}
std::vector<uint16_t> bits_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<uint16_t> b(static_cast<size_t>(c.numel()));
  std::memcpy(b.data(), c.impl()->data(), b.size() * 2);
  return b;
}
// Index of the first element whose bits differ (-1: none), for the failure message.
int64_t first_difference(const Tensor& a, const Tensor& b) {
  const std::vector<uint16_t> x = bits_of(a), y = bits_of(b);
  if (x.size() != y.size()) return 0;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i] != y[i]) return static_cast<int64_t>(i);
  return -1;
}

// set_num_threads(n) for one scope.
struct Threads {
  int before;
  explicit Threads(int n) : before(get_num_threads()) { set_num_threads(n); }
  ~Threads() { set_num_threads(before); }
};

// relu and its gradient on CPU bfloat16 run on the 16-bit data in one pass (backend/cpu/nn.cpp):
// every one of the 65536 bit patterns as y (and x), each paired with another pattern as the
// gradient (NaNs signalling and quiet, ±0, ±inf, subnormals), thresholds 0, ±1.5 and 0.1 (not a
// bfloat16: compared in float32), contiguous, transposed and an odd slice, 1 and 2 threads: the
// bits of the float32 kernel on the widened tensors, rounded once. Also through autograd (relu's
// backward). The vector code differs per level: run under GRADLAB_CPU_CAPABILITY=default|avx2 too.
TEST(Bf16Native, ReluAndItsGradientOnBf16BitsAreTheFloat32Bits) {
  std::vector<uint16_t> ybits(65536), gbits(65536);
  std::iota(ybits.begin(), ybits.end(), uint16_t{0});
  for (uint32_t i = 0; i < 65536; ++i) gbits[i] = static_cast<uint16_t>(i * 40503u + 7u);  // odd: a permutation
  for (int threads : {1, 2}) {
    Threads t(threads);
    const Tensor y = bf16_from_bits(ybits).reshape({256, 256}), g = bf16_from_bits(gbits).reshape({256, 256});
    // contiguous, transposed, and a flat slice of odd length at an odd offset (the vector
    // code's tail and misaligned loads)
    for (int layout : {0, 1, 2}) {
      auto lay = [&](const Tensor& t) { return layout == 0 ? t : layout == 1 ? t.t() : t.reshape({65536}).narrow(0, 3, 65531); };
      const Tensor yy = lay(y), gg = lay(g);
      const std::string at = "threads=" + std::to_string(threads) + " layout=" + std::to_string(layout);
      EXPECT_EQ(first_difference(relu(yy), relu(yy.to(kFloat32)).to(kBFloat16)), -1) << "relu " << at;
      for (double th : {0.0, 1.5, -1.5, 0.1}) {
        const Tensor got = threshold_backward(gg, yy, th);
        const Tensor want = threshold_backward(gg.to(kFloat32), yy.to(kFloat32), th).to(kBFloat16);
        ASSERT_EQ(got.dtype(), kBFloat16);
        EXPECT_EQ(first_difference(got, want), -1) << "threshold " << th << " " << at;
      }
    }
    Tensor x = y.detach().requires_grad_(true);
    Tensor r = relu(x);
    r.backward(g);
    EXPECT_EQ(first_difference(x.grad(), where(y.to(kFloat32) > 0, g.to(kFloat32), zeros({256, 256})).to(kBFloat16)),
              -1) << "autograd, threads=" << threads;
  }
}

// conv2d's three gradients from one bfloat16 dy on the fallback (kern::conv2d_backward: dy
// widened once per chunk of images for dx, dW and db; kern::conv2d_backward_input / _weight take
// the same path for one gradient), against an oracle written here from the float32 kernels on
// the widened operands: dx (and conv_transpose2d's dx with a bias) rounded once, images being
// independent; dW the chunks' float32 results summed in chunk order, then rounded; db the float32
// kernel's on the whole widened dy rounded once (also from kern::conv2d_backward_bias, chunked
// its own way). Batches of 1 to 3 chunks, groups, stride / padding / dilation, a channels-last
// x, only some gradients wanted, 1 and 2 threads.
TEST(Bf16Native, FallbackConvGradientsShareOneWidenedDyBitExactly) {
  manual_seed(16);
  Native guard(false);
  struct Case {
    int64_t N, C, O, H, W, k, stride, pad, dil, groups;
    bool channels_last;
  };
  // 16 x 32 x 32 outputs: 2^17-element chunks of 8 images (backend/kernels.cpp, conv_by_images)
  const Case cases[] = {{17, 8, 16, 32, 32, 3, 1, 1, 1, 1, false}, {17, 3, 16, 32, 32, 3, 1, 1, 1, 1, true},
                        {3, 6, 4, 9, 11, 3, 2, 2, 2, 2, false},     {1, 1, 1, 5, 5, 1, 1, 0, 1, 1, false},
                        {9, 16, 16, 30, 30, 3, 1, 1, 1, 1, false}};
  for (int threads : {1, 2}) {
    Threads th(threads);
    for (const Case& c : cases) {
      const Tensor x = (c.channels_last ? randn({c.N, c.H, c.W, c.C}).permute({0, 3, 1, 2})
                                        : randn({c.N, c.C, c.H, c.W})).to(kBFloat16);
      const Tensor w = randn({c.O, c.C / c.groups, c.k, c.k}).to(kBFloat16), b = randn({c.O}).to(kBFloat16);
      kern::Conv2dGeom g;
      g.N = c.N, g.C = c.C, g.H = c.H, g.W = c.W, g.O = c.O, g.groups = c.groups;
      g.win = {c.k, c.k, c.stride, c.stride, c.pad, c.pad, c.dil, c.dil};
      g.oh = g.win.out_h(c.H), g.ow = g.win.out_w(c.W);
      const Tensor dy = randn({c.N, c.O, g.oh, g.ow}).to(kBFloat16);
      const std::string at = "N=" + std::to_string(c.N) + " C=" + std::to_string(c.C) +
                             " groups=" + std::to_string(c.groups) + " threads=" + std::to_string(threads);
      const Tensor dyf = dy.to(kFloat32), xf = x.to(kFloat32), wf = w.to(kFloat32);
      const Tensor bt = randn({c.C}).to(kBFloat16);  // conv_transpose2d's bias: one per channel of dx
      const Tensor dx_want = cpu::conv2d_backward_input(dyf, wf, Tensor(), g).to(kBFloat16);
      const Tensor dxb_want = cpu::conv2d_backward_input(dyf, wf, bt.to(kFloat32), g).to(kBFloat16);
      // the fallback's chunks: as many images as fit 2^17 float32 elements of input or output
      const int64_t per = std::max(c.C * c.H * c.W, c.O * g.oh * g.ow), step = std::max<int64_t>(1, (1 << 17) / per);
      Tensor dw32;
      for (int64_t n0 = 0; n0 < c.N; n0 += step) {
        kern::Conv2dGeom gc = g;
        gc.N = std::min(c.N, n0 + step) - n0;
        const Tensor part = cpu::conv2d_backward_weight(xf.narrow(0, n0, gc.N), dyf.narrow(0, n0, gc.N), gc);
        dw32 = dw32.defined() ? dw32 + part : part;
      }
      const Tensor dw_want = dw32.to(kBFloat16);
      const Tensor db_want = cpu::conv2d_backward_bias(dyf).to(kBFloat16);
      EXPECT_EQ(first_difference(kern::conv2d_backward_input(dy, w, Tensor(), g), dx_want), -1) << "dx alone " << at;
      EXPECT_EQ(first_difference(kern::conv2d_backward_input(dy, w, bt, g), dxb_want), -1) << "dx + bias alone " << at;
      EXPECT_EQ(first_difference(kern::conv2d_backward_weight(x, dy, g), dw_want), -1) << "dW alone " << at;
      EXPECT_EQ(first_difference(kern::conv2d_backward_bias(dy), db_want), -1) << "db alone " << at;
      const kern::Conv2dGrads all = kern::conv2d_backward(x, w, dy, g, true);
      EXPECT_EQ(first_difference(all.dx, dx_want), -1) << "dx " << at;
      EXPECT_EQ(first_difference(all.dw, dw_want), -1) << "dW " << at;
      EXPECT_EQ(first_difference(all.db, db_want), -1) << "db " << at;
      const kern::Conv2dGrads some = kern::conv2d_backward(Tensor(), w, dy, g, false);
      EXPECT_FALSE(some.dw.defined());
      EXPECT_FALSE(some.db.defined());
      EXPECT_EQ(first_difference(some.dx, dx_want), -1) << "dx only " << at;
      const kern::Conv2dGrads wb = kern::conv2d_backward(x, Tensor(), dy, g, true);
      EXPECT_FALSE(wb.dx.defined());
      EXPECT_EQ(first_difference(wb.dw, dw_want), -1) << "dW + db only " << at;
      EXPECT_EQ(first_difference(wb.db, db_want), -1) << "db with dW " << at;
      // the same through autograd: the conv node's backward under autocast (conv2d has no groups)
      if (c.groups != 1) continue;
      Tensor xl = x.detach().requires_grad_(true), wl = w.detach().requires_grad_(true),
             bl = b.detach().requires_grad_(true);
      Tensor y;
      {
        amp::autocast ac(kCPU);
        y = F::conv2d(xl, wl, bl, {c.stride, c.stride}, {c.pad, c.pad}, {c.dil, c.dil});
      }
      y.backward(dy);
      EXPECT_EQ(first_difference(xl.grad(), dx_want), -1) << "autograd dx " << at;
      EXPECT_EQ(first_difference(wl.grad(), dw_want), -1) << "autograd dW " << at;
      EXPECT_EQ(first_difference(bl.grad(), db_want), -1) << "autograd db " << at;
    }
  }
  // no images: dW is zeros of the weight's shape and dtype, dx an empty batch
  kern::Conv2dGeom g;
  g.N = 0, g.C = 2, g.H = 5, g.W = 5, g.O = 3, g.groups = 1;
  g.win = {3, 3, 1, 1, 1, 1, 1, 1};
  g.oh = g.win.out_h(5), g.ow = g.win.out_w(5);
  const Tensor x = zeros({0, 2, 5, 5}, kBFloat16), w = randn({3, 2, 3, 3}).to(kBFloat16),
               dy = zeros({0, 3, 5, 5}, kBFloat16);
  const Tensor dw = kern::conv2d_backward_weight(x, dy, g);
  ASSERT_TRUE(dw.defined());
  EXPECT_EQ(dw.sizes(), (Shape{3, 2, 3, 3}));
  EXPECT_EQ(dw.dtype(), kBFloat16);
  EXPECT_EQ(dw.abs().sum().item<double>(), 0.0);
  EXPECT_EQ(kern::conv2d_backward_input(dy, w, Tensor(), g).sizes(), (Shape{0, 2, 5, 5}));
}

}  // namespace

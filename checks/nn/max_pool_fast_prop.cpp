// The fast max-pool kernels (backend/cpu/conv.cpp) against their readable references, over random
// shapes: kernel, stride, padding (at most half the kernel), dilation, ties and NaNs.
//   forward   cpu::max_pool2d == cpu::max_pool2d_reference (math::max_pool_window per window):
//             the same scan, so values and indices agree bit for bit (a claim about bits: compared
//             exactly, NaN equal to NaN)
//   backward  the one-pass kernel == scatter_add(zeros, 2, idx, dy) (set_conv_reference(true)):
//             the same sums in the same order, so bit for bit too
// Both for 1 and 2 threads (the planes split over threads; the bits must not move), plus a
// float64 gradcheck of max_pool2d through the fast backward.

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gradlab/backend/cpu/cpu.hpp"
#include "gradlab/gradlab.hpp"
#include "gradlab/testing/gradcheck.hpp"

namespace {

using namespace gradlab;

struct Threads {
  int before;
  explicit Threads(int n) : before(get_num_threads()) { set_num_threads(n); }
  ~Threads() { set_num_threads(before); }
};

struct ConvPath {
  bool before;
  explicit ConvPath(bool reference) : before(conv_reference()) { set_conv_reference(reference); }
  ~ConvPath() { set_conv_reference(before); }
};

struct Case {
  int64_t N, C, H, W;
  cpu::Window2d w;
  uint64_t seed;
  std::string str() const {
    return "N=" + std::to_string(N) + " C=" + std::to_string(C) + " HxW=" + std::to_string(H) +
           "x" + std::to_string(W) + " k=" + std::to_string(w.kh) + "x" + std::to_string(w.kw) +
           " s=" + std::to_string(w.sh) + "," + std::to_string(w.sw) + " p=" +
           std::to_string(w.ph) + "," + std::to_string(w.pw) + " d=" + std::to_string(w.dh) +
           "," + std::to_string(w.dw);
  }
};

Case draw_case(bool small = false) {
  Case c{};
  c.N = *rc::gen::inRange<int64_t>(1, small ? 3 : 4);
  c.C = *rc::gen::inRange<int64_t>(1, small ? 3 : 5);
  auto& w = c.w;
  // Half the cases: the CNN's 2x2 window, stride 2 (the kernel's own SSE2 path, 4 windows at a
  // time: W from 2 to 25 covers rows of 1 to 12 windows, tails included).
  if (*rc::gen::arbitrary<bool>()) {
    w.kh = w.kw = w.sh = w.sw = 2;
  } else {
    w.kh = *rc::gen::inRange<int64_t>(1, 5);
    w.kw = *rc::gen::inRange<int64_t>(1, 5);
    w.sh = *rc::gen::inRange<int64_t>(1, 4);
    w.sw = *rc::gen::inRange<int64_t>(1, 4);
    w.dh = *rc::gen::inRange<int64_t>(1, 3);
    w.dw = *rc::gen::inRange<int64_t>(1, 3);
    w.ph = *rc::gen::inRange<int64_t>(0, w.kh / 2 + 1);  // max_pool2d: 2 p <= k
    w.pw = *rc::gen::inRange<int64_t>(0, w.kw / 2 + 1);
  }
  const int64_t extra = small ? 4 : 24;
  c.H = std::max<int64_t>(1, w.dh * (w.kh - 1) + 1 - 2 * w.ph) + *rc::gen::inRange<int64_t>(0, extra);
  c.W = std::max<int64_t>(1, w.dw * (w.kw - 1) + 1 - 2 * w.pw) + *rc::gen::inRange<int64_t>(0, extra);
  c.seed = *rc::gen::arbitrary<uint64_t>();
  return c;
}

// Small integers (many ties inside a window, -0 and +0 among them) with, when `specials`, about
// 2% NaNs and 2% -inf (most rows of windows keep no NaN: the fast path runs beside the NaN one).
Tensor draw_input(const Case& c, ScalarType dt, bool specials) {
  Generator gen(c.seed);
  std::vector<double> v = randn({c.N, c.C, c.H, c.W}, TensorOptions().dtype(kFloat64), &gen)
                              .to_vector<double>();
  for (size_t i = 0; i < v.size(); ++i) {
    const double r = v[i];
    v[i] = std::floor(r * 2);
    if (v[i] == 0 && i % 2 == 1) v[i] = -0.0;
    if (specials && r > 2.05) v[i] = std::nan("");
    if (specials && r < -2.05) v[i] = -INFINITY;
  }
  return from_vector(v, {c.N, c.C, c.H, c.W}, TensorOptions().dtype(dt));
}

// "" when a and b hold the same values bit for bit (NaN equal to NaN), else the first mismatch.
std::string same_bits(const char* what, const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  if (x.size() != y.size()) return std::string(what) + ": sizes differ";
  for (size_t i = 0; i < x.size(); ++i)
    if (!(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i]))) ||
        std::signbit(x[i]) != std::signbit(y[i]))
      return std::string(what) + "[" + std::to_string(i) + "]: fast " + std::to_string(x[i]) +
             ", reference " + std::to_string(y[i]);
  return "";
}

RC_GTEST_PROP(MaxPoolFast, ForwardMatchesTheReferenceBitForBit, ()) {
  const Case c = draw_case();
  const bool specials = *rc::gen::arbitrary<bool>();
  for (ScalarType dt : {kFloat32, kFloat64}) {
    const Tensor x = draw_input(c, dt, specials);
    const auto [rv, ri] = cpu::max_pool2d_reference(x, c.w);
    for (int threads : {1, 2}) {
      Threads t(threads);
      const auto [v, i] = cpu::max_pool2d(x, c.w);
      for (const std::string& bad : {same_bits("values", v, rv), same_bits("indices", i, ri)})
        if (!bad.empty())
          RC_FAIL(to_string(dt) + " threads=" + std::to_string(threads) + " " + c.str() + ": " + bad);
    }
  }
}

RC_GTEST_PROP(MaxPoolFast, BackwardMatchesScatterAddBitForBit, ()) {
  const Case c = draw_case();
  for (ScalarType dt : {kFloat32, kFloat64}) {
    auto grad = [&](bool reference, int threads) {
      ConvPath path(reference);
      Threads t(threads);
      Tensor x = draw_input(c, dt, false).requires_grad_();
      Tensor y = max_pool2d(x, {c.w.kh, c.w.kw}, IntPair(c.w.sh, c.w.sw), {c.w.ph, c.w.pw},
                            {c.w.dh, c.w.dw});
      Generator gen(c.seed + 1);
      y.backward(randn(y.sizes(), TensorOptions().dtype(dt), &gen));
      return x.grad();
    };
    const Tensor ref = grad(true, 1);
    for (int threads : {1, 2})
      if (std::string bad = same_bits("dx", grad(false, threads), ref); !bad.empty())
        RC_FAIL(to_string(dt) + " threads=" + std::to_string(threads) + " " + c.str() + ": " + bad);
  }
}

// float64 central differences through the fast backward (distinct values: no ties, no kinks).
RC_GTEST_PROP(MaxPoolFast, GradcheckOfTheFastBackward, ()) {
  const Case c = draw_case(true);
  ConvPath path(false);
  Generator gen(c.seed);
  Tensor x = randn({c.N, c.C, c.H, c.W}, TensorOptions().dtype(kFloat64), &gen).requires_grad_();
  auto f = [&](const TensorList& in) {
    return max_pool2d(in[0], {c.w.kh, c.w.kw}, IntPair(c.w.sh, c.w.sw), {c.w.ph, c.w.pw},
                      {c.w.dh, c.w.dw});
  };
  const auto r = gradlab::testing::gradcheck(
      f, {x}, gradlab::testing::GradcheckOptions().raise_exception(false));
  if (!r.ok) RC_FAIL(c.str() + ": " + r.text());
}

}  // namespace

// The fast convolution (backend/cpu/conv_gemm.cpp: im2col + GEMM per image) against the readable
// reference (unfold + matmul + fold, forced by set_conv_reference(true)) over random shapes:
// N, C_in, C_out, H, W, kernel, stride, padding, dilation, groups (depthwise when each group has
// one input channel), and output_padding for conv_transpose2d. Forward, input, weight and bias gradients for one random upstream gradient.
// float32 runs twice: through oneDNN (when the build found it) and through the GEMM path.
// Tolerances: float64 |fast - ref| <= 1e-12 (1 + |ref|); float32 <= 1e-4 (1 + |ref|) — the two
// paths sum the same products in different orders (BLAS blocking), so float32 differs in the last
// bits, never more than a few ulps of the largest partial sum (values here are O(10) at most).
// Plus a float64 gradcheck and gradgradcheck of the fast path itself.

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gradlab/backend/cpu/conv_onednn.hpp"
#include "gradlab/backend/cpu/cpu.hpp"
#include "gradlab/gradlab.hpp"
#include "gradlab/testing/gradcheck.hpp"

namespace {

using namespace gradlab;

// cpu::onednn::set_enabled(on) for one scope.
struct OneDnn {
  bool before;
  explicit OneDnn(bool on) : before(cpu::onednn::set_enabled(on)) {}
  ~OneDnn() { cpu::onednn::set_enabled(before); }
};

// set_conv_reference(on) for one scope.
struct ConvPath {
  bool before;
  explicit ConvPath(bool reference) : before(conv_reference()) { set_conv_reference(reference); }
  ~ConvPath() { set_conv_reference(before); }
};

struct Case {
  int64_t N, Cg, Og, groups, H, W, kh, kw, sh, sw, ph, pw, dh, dw, oph, opw;
  uint64_t seed;
  std::string str() const {
    return "N=" + std::to_string(N) + " Cg=" + std::to_string(Cg) + " Og=" + std::to_string(Og) +
           " groups=" + std::to_string(groups) + " HxW=" + std::to_string(H) + "x" +
           std::to_string(W) + " k=" + std::to_string(kh) + "x" + std::to_string(kw) +
           " s=" + std::to_string(sh) + "," + std::to_string(sw) + " p=" + std::to_string(ph) +
           "," + std::to_string(pw) + " d=" + std::to_string(dh) + "," + std::to_string(dw) +
           " opad=" + std::to_string(oph) + "," + std::to_string(opw);
  }
};

// A shape whose (dilated, padded) window fits: H >= d (k - 1) + 1 - 2p.
// small: sizes for a full-Jacobian gradcheck (at most 2 images, channels per group, groups).
Case draw_case(bool transposed, bool small = false) {
  Case c{};
  // Channels per group reach 6: oneDNN takes 4 or more, or 1 in a depthwise conv (conv_onednn.cpp),
  // the GEMM path the rest.
  const int64_t m = small ? 3 : 4, ch = small ? 3 : 7, extra = small ? 3 : 7;
  c.N = *rc::gen::inRange<int64_t>(1, m);
  c.groups = *rc::gen::inRange<int64_t>(1, m);
  c.Cg = *rc::gen::inRange<int64_t>(1, ch);
  c.Og = *rc::gen::inRange<int64_t>(1, ch);
  c.kh = *rc::gen::inRange<int64_t>(1, 5);
  c.kw = *rc::gen::inRange<int64_t>(1, 5);
  c.sh = *rc::gen::inRange<int64_t>(1, 4);
  c.sw = *rc::gen::inRange<int64_t>(1, 4);
  c.dh = *rc::gen::inRange<int64_t>(1, 3);
  c.dw = *rc::gen::inRange<int64_t>(1, 3);
  c.ph = *rc::gen::inRange<int64_t>(0, 3);
  c.pw = *rc::gen::inRange<int64_t>(0, 3);
  if (transposed) {  // output_padding < stride or < dilation; the output must stay >= 1
    c.oph = *rc::gen::inRange<int64_t>(0, std::max(c.sh, c.dh));
    c.opw = *rc::gen::inRange<int64_t>(0, std::max(c.sw, c.dw));
    c.H = *rc::gen::inRange<int64_t>(1, extra + 1);
    c.W = *rc::gen::inRange<int64_t>(1, extra + 1);
    RC_PRE((c.H - 1) * c.sh - 2 * c.ph + c.dh * (c.kh - 1) + c.oph + 1 > 0);
    RC_PRE((c.W - 1) * c.sw - 2 * c.pw + c.dw * (c.kw - 1) + c.opw + 1 > 0);
  } else {
    c.H = std::max<int64_t>(1, c.dh * (c.kh - 1) + 1 - 2 * c.ph) +
          *rc::gen::inRange<int64_t>(0, extra);
    c.W = std::max<int64_t>(1, c.dw * (c.kw - 1) + 1 - 2 * c.pw) +
          *rc::gen::inRange<int64_t>(0, extra);
  }
  c.seed = *rc::gen::arbitrary<uint64_t>();
  return c;
}

struct Result {
  std::vector<double> y, dx, dw, db;
};

// Forward and the three gradients for upstream gradient gy (same seed on both paths).
Result run(const Case& c, bool transposed, ScalarType dt, bool reference) {
  ConvPath path(reference);
  Generator gen(c.seed);
  const auto opt = TensorOptions().dtype(dt);
  const int64_t C = c.Cg * c.groups, O = c.Og * c.groups;
  Tensor x = randn({c.N, C, c.H, c.W}, opt, &gen).requires_grad_();
  Tensor w =
      (transposed ? randn({C, c.Og, c.kh, c.kw}, opt, &gen) : randn({O, c.Cg, c.kh, c.kw}, opt, &gen))
          .requires_grad_();
  Tensor b = randn({O}, opt, &gen).requires_grad_();
  Tensor y = transposed ? conv_transpose2d(x, w, b, {c.sh, c.sw}, {c.ph, c.pw}, {c.oph, c.opw},
                                           c.groups, {c.dh, c.dw})
                        : conv2d(x, w, b, {c.sh, c.sw}, {c.ph, c.pw}, {c.dh, c.dw}, c.groups);
  Tensor gy = randn(y.sizes(), opt, &gen);
  y.backward(gy);
  return {y.detach().to_vector<double>(), x.grad().to_vector<double>(),
          w.grad().to_vector<double>(), b.grad().to_vector<double>()};
}

// "" when every |a - b| <= tol (1 + |b|), else where the first difference is.
std::string compare(const char* what, const std::vector<double>& a, const std::vector<double>& b,
                    double tol) {
  if (a.size() != b.size())
    return std::string(what) + ": sizes " + std::to_string(a.size()) + " vs " +
           std::to_string(b.size());
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::abs(a[i] - b[i]) <= tol * (1 + std::abs(b[i]))))
      return std::string(what) + "[" + std::to_string(i) + "]: fast " + std::to_string(a[i]) +
             ", reference " + std::to_string(b[i]);
  return "";
}

void fast_matches_reference(bool transposed) {
  const Case c = draw_case(transposed);
  // float64: the GEMM path; float32: oneDNN (when built with it) and the GEMM path.
  for (auto [dt, onednn] : {std::pair{kFloat64, false}, {kFloat32, true}, {kFloat32, false}}) {
    if (onednn && !cpu::onednn::built()) continue;
    const double tol = dt == kFloat64 ? 1e-12 : 1e-4;
    OneDnn path(onednn);
    const Result f = run(c, transposed, dt, false), r = run(c, transposed, dt, true);
    for (const std::string& bad :
         {compare("y", f.y, r.y, tol), compare("dx", f.dx, r.dx, tol),
          compare("dweight", f.dw, r.dw, tol), compare("dbias", f.db, r.db, tol)}) {
      if (!bad.empty())
        RC_FAIL(to_string(dt) + (onednn ? " (oneDNN) " : " (GEMM) ") + c.str() + ": " + bad);
    }
  }
}

RC_GTEST_PROP(ConvFast, Conv2dMatchesTheReference, ()) { fast_matches_reference(false); }

RC_GTEST_PROP(ConvFast, ConvTranspose2dMatchesTheReference, ()) { fast_matches_reference(true); }

// The fast path's own derivatives (first and second: its three nodes are each other's
// backward) against central differences in float64, on small random shapes.
RC_GTEST_PROP(ConvFast, GradcheckOfTheFastPath, ()) {
  const bool transposed = *rc::gen::arbitrary<bool>();
  const Case c = draw_case(transposed, true);
  ConvPath path(false);
  Generator gen(c.seed);
  const auto opt = TensorOptions().dtype(kFloat64);
  const int64_t C = c.Cg * c.groups, O = c.Og * c.groups;
  Tensor x = randn({c.N, C, c.H, c.W}, opt, &gen).requires_grad_();
  Tensor w =
      (transposed ? randn({C, c.Og, c.kh, c.kw}, opt, &gen) : randn({O, c.Cg, c.kh, c.kw}, opt, &gen))
          .requires_grad_();
  Tensor b = randn({O}, opt, &gen).requires_grad_();
  auto f = [&](const TensorList& in) {
    return transposed ? conv_transpose2d(in[0], in[1], in[2], {c.sh, c.sw}, {c.ph, c.pw},
                                         {c.oph, c.opw}, c.groups, {c.dh, c.dw})
                      : conv2d(in[0], in[1], in[2], {c.sh, c.sw}, {c.ph, c.pw}, {c.dh, c.dw},
                               c.groups);
  };
  const auto opts = gradlab::testing::GradcheckOptions().raise_exception(false);
  const auto r1 = gradlab::testing::gradcheck(f, {x, w, b}, opts);
  if (!r1.ok) RC_FAIL(c.str() + ": " + r1.text());
  const auto r2 = gradlab::testing::gradgradcheck(f, {x, w, b}, {}, opts);
  if (!r2.ok) RC_FAIL(c.str() + ": " + r2.text());
}

// The bias gradient kernel (cpu::conv2d_backward_bias, what ConvolutionBackward0 runs without
// create_graph): the same bits for 1 and 2 threads (o is split over threads, each o's sum has one
// order), and the float64 sum of dy over n, y, x within float32 rounding. Rows of L = oh*ow not a
// multiple of 8 (the kernel's partial sums have a tail).
RC_GTEST_PROP(ConvFast, BiasGradientIsTheSumForAnyThreadCount, ()) {
  const int64_t N = *rc::gen::inRange<int64_t>(1, 5), O = *rc::gen::inRange<int64_t>(1, 40),
                oh = *rc::gen::inRange<int64_t>(1, 20), ow = *rc::gen::inRange<int64_t>(1, 20);
  Generator gen(*rc::gen::arbitrary<uint64_t>());
  const Tensor dy = randn({N, O, oh, ow}, TensorOptions().dtype(kFloat32), &gen);
  const int before = get_num_threads();
  set_num_threads(1);
  const std::vector<float> one = cpu::conv2d_backward_bias(dy).to_vector<float>();
  set_num_threads(2);
  const std::vector<float> two = cpu::conv2d_backward_bias(dy).to_vector<float>();
  set_num_threads(before);
  const std::vector<double> ref = sum(dy.to(kFloat64), {0, 2, 3}).to_vector<double>();
  for (int64_t o = 0; o < O; ++o) {
    RC_ASSERT(std::memcmp(&one[o], &two[o], sizeof(float)) == 0);
    RC_ASSERT(std::abs(one[o] - ref[o]) <= 1e-5 * (1 + std::abs(ref[o])));
  }
}

// The fast path is what runs by default on the CPU (the property above would compare the
// reference with itself otherwise), and the switch really reaches the reference.
TEST(ConvFast, TheSwitchSelectsThePath) {
  Tensor x = randn({1, 2, 5, 5}, TensorOptions().dtype(kFloat64)).requires_grad_();
  Tensor w = randn({3, 2, 3, 3}, TensorOptions().dtype(kFloat64)).requires_grad_();
  {
    ConvPath path(false);
    EXPECT_EQ(conv2d(x, w).grad_fn()->name(), "ConvolutionBackward0");
    EXPECT_EQ(conv_transpose2d(x, w.transpose(0, 1).contiguous()).grad_fn()->name(),
              "ConvolutionBackward0");
  }
  {
    ConvPath path(true);
    EXPECT_NE(conv2d(x, w).grad_fn()->name(), "ConvolutionBackward0");
    EXPECT_NE(conv_transpose2d(x, w.transpose(0, 1).contiguous()).grad_fn()->name(),
              "ConvolutionBackward0");
  }
}

}  // namespace

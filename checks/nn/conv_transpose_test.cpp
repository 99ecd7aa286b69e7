// conv_transpose2d (ops/nn_ops.hpp) and nn::ConvTranspose2d: values against an explicit scatter
// loop in float64 for stride / padding / output_padding / groups / dilation combinations, output
// shapes against LibTorch's formula, first and second derivatives, the module (init, output_size,
// printing, parameter gradients) and the errors.

#include <cmath>
#include <sstream>

#include "nn/nn_helpers.hpp"

namespace gradlab {
namespace {

using checks::grad_ok;
using checks::gradgrad_ok;
using checks::Near;
using checks::param_grad_ok;
using checks::rnd64;
using checks::vals;

struct Args {
  IntPair stride = 1, padding = 0, output_padding = 0;
  int64_t groups = 1;
  IntPair dilation = 1;
};

// LibTorch's output size: (n - 1) * stride - 2 * pad + dil * (k - 1) + output_padding + 1.
int64_t out_size(int64_t n, int64_t k, int64_t s, int64_t p, int64_t d, int64_t op) {
  return (n - 1) * s - 2 * p + d * (k - 1) + op + 1;
}

// Every input element scatters x * w into the output (the definition of the transposed
// convolution), dropping targets outside [0, oh) x [0, ow).
Tensor scatter_reference(const Tensor& x4, const Tensor& w, const Tensor& b, const Args& a) {
  const int64_t N = x4.size(0), C = x4.size(1), H = x4.size(2), W = x4.size(3);
  const int64_t Og = w.size(1), kh = w.size(2), kw = w.size(3), G = a.groups, O = G * Og,
                Cg = C / G;
  const int64_t oh = out_size(H, kh, a.stride.h, a.padding.h, a.dilation.h, a.output_padding.h);
  const int64_t ow = out_size(W, kw, a.stride.w, a.padding.w, a.dilation.w, a.output_padding.w);
  const std::vector<double> xv = vals(x4), wv = vals(w);
  std::vector<double> out(static_cast<size_t>(N * O * oh * ow), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < H; ++i)
        for (int64_t j = 0; j < W; ++j)
          for (int64_t o = 0; o < Og; ++o)
            for (int64_t p = 0; p < kh; ++p)
              for (int64_t q = 0; q < kw; ++q) {
                const int64_t y = i * a.stride.h - a.padding.h + p * a.dilation.h;
                const int64_t z = j * a.stride.w - a.padding.w + q * a.dilation.w;
                if (y < 0 || y >= oh || z < 0 || z >= ow) continue;
                const int64_t oc = (c / Cg) * Og + o;
                out[static_cast<size_t>(((n * O + oc) * oh + y) * ow + z)] +=
                    xv[static_cast<size_t>(((n * C + c) * H + i) * W + j)] *
                    wv[static_cast<size_t>(((c * Og + o) * kh + p) * kw + q)];
              }
  if (b.defined()) {
    const std::vector<double> bv = vals(b);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t o = 0; o < O; ++o)
        for (int64_t k = 0; k < oh * ow; ++k)
          out[static_cast<size_t>((n * O + o) * oh * ow + k)] += bv[static_cast<size_t>(o)];
  }
  return from_vector(out, {N, O, oh, ow}, dtype(kFloat64));
}

Tensor run(const Tensor& x, const Tensor& w, const Tensor& b, const Args& a) {
  return conv_transpose2d(x, w, b, a.stride, a.padding, a.output_padding, a.groups, a.dilation);
}

struct Combo {
  const char* name;
  Shape x, w;
  Args args;
  bool bias;
};

const std::vector<Combo>& combos() {
  static const std::vector<Combo> c = {
      {"plain", {2, 3, 3, 4}, {3, 2, 3, 3}, {}, true},
      {"dcgan k4 s2 p1", {2, 3, 4, 4}, {3, 2, 4, 4}, {2, 1, 0, 1, 1}, false},
      {"rect stride, padding, output_padding", {1, 2, 3, 2}, {2, 3, 2, 3},
       {IntPair(2, 3), IntPair(1, 0), IntPair(1, 2), 1, 1}, true},
      {"groups 2, dilation 2, output_padding 1", {2, 4, 3, 2}, {4, 3, 3, 2},
       {2, 1, 1, 2, 2}, true},
      {"groups 3", {1, 6, 2, 3}, {6, 1, 2, 2}, {1, 0, 0, 3, 1}, true},
      // output_padding >= stride (allowed below the dilation): zero rows past the last block ...
      {"output_padding 2 > padding 1, stride 1, dilation 3", {1, 2, 3, 3}, {2, 2, 2, 3},
       {1, 1, 2, 1, 3}, true},
      // ... or, with more padding, rows the blocks still reach.
      {"output_padding 1 < padding 2, stride 1, dilation 2", {2, 2, 4, 3}, {2, 1, 3, 3},
       {1, 2, IntPair(1, 0), 1, 2}, true},
      {"stride 3 > kernel", {1, 1, 2, 2}, {1, 2, 2, 1}, {3, 0, IntPair(2, 1), 1, 1}, true},
  };
  return c;
}

TEST(ConvTranspose2d, MatchesAScatterLoopForStridePaddingOutputPaddingGroupsDilation) {
  uint64_t seed = 10;
  for (const Combo& c : combos()) {
    SCOPED_TRACE(c.name);
    Tensor x = rnd64(c.x, seed++), w = rnd64(c.w, seed++);
    Tensor b = c.bias ? rnd64({c.w[1] * c.args.groups}, seed++) : Tensor();
    Tensor y = run(x, w, b, c.args);
    const Args& a = c.args;
    EXPECT_EQ(y.sizes(),
              (Shape{c.x[0], c.w[1] * a.groups,
                     out_size(c.x[2], c.w[2], a.stride.h, a.padding.h, a.dilation.h,
                              a.output_padding.h),
                     out_size(c.x[3], c.w[3], a.stride.w, a.padding.w, a.dilation.w,
                              a.output_padding.w)}));
    EXPECT_THAT(vals(y), Near(vals(scatter_reference(x, w, b, a)), 1e-12));
  }
}

TEST(ConvTranspose2d, IsTheAdjointOfConv2d) {
  // <conv2d(x, w), y> = <x, conv_transpose2d(y, w)> for the same stride / padding / dilation.
  Tensor x = rnd64({2, 3, 7, 6}, 1), w = rnd64({4, 3, 3, 2}, 2);
  Tensor cy = conv2d(x, w, {}, 2, 1, 1);
  Tensor y = rnd64(cy.sizes(), 3);
  // the output_padding that gives x's size back
  const int64_t oph = 7 - out_size(cy.size(2), 3, 2, 1, 1, 0),
                opw = 6 - out_size(cy.size(3), 2, 2, 1, 1, 0);
  Tensor xt = conv_transpose2d(y, w, {}, 2, 1, IntPair(oph, opw));
  ASSERT_EQ(xt.sizes(), x.sizes());
  EXPECT_NEAR(sum(cy * y).item<double>(), sum(x * xt).item<double>(), 1e-10);
}

TEST(ConvTranspose2d, UnbatchedInputAndFloat32) {
  Tensor x = rnd64({2, 2, 3, 3}, 4), w = rnd64({2, 3, 3, 3}, 5), b = rnd64({3}, 6);
  Tensor y = conv_transpose2d(x[1], w, b, 2, 1, 1);
  EXPECT_EQ(y.sizes(), (Shape{3, 6, 6}));
  EXPECT_THAT(vals(y), Near(vals(conv_transpose2d(x, w, b, 2, 1, 1)[1]), 1e-12));
  Tensor yf = conv_transpose2d(x.to(kFloat32), w.to(kFloat32), b.to(kFloat32), 2, 1, 1);
  EXPECT_EQ(yf.dtype(), kFloat32);
  EXPECT_THAT(vals(yf), Near(vals(conv_transpose2d(x, w, b, 2, 1, 1)), 1e-4));
}

TEST(ConvTranspose2d, GradcheckAndGradgradcheckInputWeightBias) {
  for (const Combo& c : combos()) {
    SCOPED_TRACE(c.name);
    const Args a = c.args;
    Tensor x = rnd64(c.x, 20), w = rnd64(c.w, 21), b = rnd64({c.w[1] * a.groups}, 22);
    auto f = [a](const TensorList& in) { return run(in[0], in[1], in[2], a); };
    EXPECT_TRUE(grad_ok(f, {x, w, b}, std::string("conv_transpose2d ") + c.name));
    EXPECT_TRUE(gradgrad_ok(f, {x, w, b}, std::string("conv_transpose2d ") + c.name));
  }
}

TEST(ConvTranspose2d, Errors) {
  Tensor x = zeros({1, 4, 3, 3}), w = zeros({4, 2, 3, 3});
  const char* op = "conv_transpose2d:";
  EXPECT_THROW_MSG(conv_transpose2d(x, zeros({4, 2, 3})), ShapeError, op, "weight must be 4-D",
                   "[in_channels, out_channels / groups, kh, kw]", "[4, 2, 3]");
  EXPECT_THROW_MSG(conv_transpose2d(zeros({1, 2, 3, 3}), w), ShapeError, op,
                   "input with 4 channels", "[1, 2, 3, 3]", "dim 0 is the input's channels");
  EXPECT_THROW_MSG(conv_transpose2d(zeros({2, 64}), w), ShapeError, op, "[N, C, H, W]",
                   "[2, 64]");
  EXPECT_THROW_MSG(conv_transpose2d(x, w, {}, 2, 0, 2), ValueError, op,
                   "smaller than either stride or dilation", "output_padding [2, 2]",
                   "stride [2, 2]");
  EXPECT_THROW_MSG(conv_transpose2d(x, w, {}, 1, 0, IntPair(0, 1)), ValueError, op,
                   "smaller than either stride or dilation");
  EXPECT_NO_THROW(conv_transpose2d(x, w, {}, 1, 0, 1, 1, 2));  // below the dilation: allowed
  EXPECT_THROW_MSG(conv_transpose2d(zeros({1, 3, 3, 3}), zeros({3, 2, 3, 3}), {}, 1, 0, 0, 2),
                   ShapeError, op, "divisible by groups", "[3, 2, 3, 3] with groups 2");
  EXPECT_THROW_MSG(conv_transpose2d(x, w, {}, 1, 0, 0, 0), ValueError, op,
                   "groups must be positive");
  EXPECT_THROW_MSG(conv_transpose2d(x, w, zeros({4})), ShapeError, op, "bias", "[2]", "[4]");
  EXPECT_THROW_MSG(conv_transpose2d(x, w, zeros({2}), 1, 0, 0, 2), ShapeError, op, "bias",
                   "[4]", "[2]");
  EXPECT_THROW_MSG(conv_transpose2d(x, w, {}, 0), ValueError, op, "stride must be positive");
  EXPECT_THROW_MSG(conv_transpose2d(x, w, {}, 1, -1), ValueError, op,
                   "padding must be non-negative");
  EXPECT_THROW_MSG(conv_transpose2d(zeros({1, 4, 1, 1}), w, {}, 1, 2), ShapeError, op,
                   "too small");
  EXPECT_THROW_MSG(conv_transpose2d(zeros({1, 4, 3, 3}, dtype(kInt64)), w), DTypeError, op,
                   "floating point");
}

// ---- the module ------------------------------------------------------------------------------

std::string printed(const nn::Module& m) {
  std::ostringstream os;
  m.pretty_print(os);
  return os.str();
}

TEST(ConvTranspose2dModule, ShapesDefaultInitForwardAndPrint) {
  manual_seed(3);
  nn::ConvTranspose2d up(nn::ConvTranspose2dOptions(4, 6, 3).stride(2).padding(1).groups(2));
  EXPECT_EQ(up->weight.sizes(), (Shape{4, 3, 3, 3}));
  EXPECT_EQ(up->bias.sizes(), (Shape{6}));
  // LibTorch's fan_in for a transposed weight: weight.size(1) * kh * kw = 3 * 9.
  const double bound = 1.0 / std::sqrt(3.0 * 9.0);
  double wmax = 0, bmax = 0;
  for (double v : vals(up->weight)) wmax = std::max(wmax, std::abs(v));
  for (double v : vals(up->bias)) bmax = std::max(bmax, std::abs(v));
  EXPECT_LE(wmax, bound);
  EXPECT_LE(bmax, bound);
  EXPECT_GT(wmax, 0.5 * bound) << "108 draws of U(-b, b) all below b/2: not the default init";
  up->to(kFloat64);
  Tensor x = rnd64({2, 4, 5, 5}, 7);
  Tensor y = up(x);
  EXPECT_EQ(y.sizes(), (Shape{2, 6, 9, 9}));
  EXPECT_THAT(vals(y), Near(vals(scatter_reference(x, up->weight, up->bias, {2, 1, 0, 2, 1})),
                            1e-12));
  EXPECT_EQ(printed(*up),
            "ConvTranspose2d(4, 6, kernel_size=[3, 3], stride=[2, 2], padding=[1, 1], groups=2, "
            "bias=true)");
  nn::ConvTranspose2d plain(nn::ConvTranspose2dOptions(2, 1, {2, 3}).bias(false).output_padding(
      {0, 1}).stride({1, 2}));
  EXPECT_FALSE(plain->bias.defined());
  EXPECT_EQ(plain->named_parameters().size(), 1u);
  EXPECT_EQ(printed(*plain),
            "ConvTranspose2d(2, 1, kernel_size=[2, 3], stride=[1, 2], output_padding=[0, 1], "
            "bias=false)");
  EXPECT_EQ(plain(zeros({2, 3, 4})).sizes(), (Shape{1, 4, 10}));  // unbatched
}

TEST(ConvTranspose2dModule, OutputSizePicksTheOutputPadding) {
  nn::ConvTranspose2d up(nn::ConvTranspose2dOptions(2, 3, 3).stride(2).padding(1));
  up->to(kFloat64);
  Tensor x = rnd64({1, 2, 4, 4}, 8);
  EXPECT_EQ(up(x).sizes(), (Shape{1, 3, 7, 7}));
  // 7 and 8 are both valid for stride 2: output_size picks output_padding 1 in width.
  Tensor y = up(x, std::vector<int64_t>{7, 8});
  EXPECT_EQ(y.sizes(), (Shape{1, 3, 7, 8}));
  EXPECT_THAT(vals(y), Near(vals(conv_transpose2d(x, up->weight, up->bias, 2, 1, IntPair(0, 1))),
                            1e-12));
  EXPECT_EQ(up->forward(x, std::vector<int64_t>{1, 3, 8, 8}).sizes(), (Shape{1, 3, 8, 8}));
  EXPECT_THROW_MSG(up(x, std::vector<int64_t>{9, 8}), ShapeError, "ConvTranspose2d:",
                   "requested an output size of [9, 8]", "sizes from [7, 7] to [8, 8]");
  EXPECT_THROW_MSG(up(x, std::vector<int64_t>{8}), ShapeError, "ConvTranspose2d:",
                   "output_size must have 2 or 4 elements");
}

TEST(ConvTranspose2dModule, ParameterGradientsAndErrors) {
  nn::ConvTranspose2d up(nn::ConvTranspose2dOptions(2, 2, 2).stride(2));
  up->to(kFloat64);
  Tensor x = rnd64({2, 2, 3, 3}, 9);
  auto loss = [&] { return sum(tanh(up(x))); };
  EXPECT_TRUE(param_grad_ok(loss, up->weight));
  EXPECT_TRUE(param_grad_ok(loss, up->bias));
  EXPECT_THROW_MSG(up(zeros({1, 3, 4, 4}, dtype(kFloat64))), ShapeError, "ConvTranspose2d:",
                   "input with 2 channels", "[1, 3, 4, 4]");
  EXPECT_THROW_MSG(up(zeros({2, 8}, dtype(kFloat64))), ShapeError, "ConvTranspose2d:",
                   "3-D or 4-D", "[2, 8]");
  EXPECT_THROW_MSG(nn::ConvTranspose2d(nn::ConvTranspose2dOptions(3, 4, 3).groups(2)), ValueError,
                   "ConvTranspose2d:", "in_channels must be divisible by groups");
  EXPECT_THROW_MSG(nn::ConvTranspose2d(nn::ConvTranspose2dOptions(4, 3, 3).groups(2)), ValueError,
                   "ConvTranspose2d:", "out_channels must be divisible by groups");
  EXPECT_THROW_MSG(nn::ConvTranspose2d(0, 3, 3), ValueError, "ConvTranspose2d:",
                   "in_channels must be positive");
}

TEST(ConvTranspose2dModule, ADcganGeneratorBlockUpsamplesNoise) {
  // LibTorch's DCGAN example: noise [N, 100, 1, 1] -> 4x4 -> 7x7 -> 14x14 -> 28x28.
  manual_seed(1);
  nn::Sequential g(nn::ConvTranspose2d(nn::ConvTranspose2dOptions(100, 16, 4).bias(false)),
                   nn::BatchNorm2d(16), nn::ReLU(),
                   nn::ConvTranspose2d(nn::ConvTranspose2dOptions(16, 8, 3).stride(2).padding(1).bias(false)),
                   nn::BatchNorm2d(8), nn::ReLU(),
                   nn::ConvTranspose2d(nn::ConvTranspose2dOptions(8, 4, 4).stride(2).padding(1).bias(false)),
                   nn::BatchNorm2d(4), nn::ReLU(),
                   nn::ConvTranspose2d(nn::ConvTranspose2dOptions(4, 1, 4).stride(2).padding(1).bias(false)),
                   nn::Tanh());
  Tensor img = g(randn({3, 100, 1, 1}));
  EXPECT_EQ(img.sizes(), (Shape{3, 1, 28, 28}));
  sum(img).backward();
  for (const auto& [name, p] : g->named_parameters())
    EXPECT_TRUE(p.grad().defined()) << name;
}

}  // namespace
}  // namespace gradlab

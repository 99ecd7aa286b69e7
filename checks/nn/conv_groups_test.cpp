// Grouped and depthwise conv2d, and conv1d (ops/nn_ops.hpp), with their F:: and nn:: faces.
// The oracle of a grouped conv2d is its definition: one ungrouped conv2d per group on the
// group's channel slice, concatenated (what F::conv2d ran before conv2d took groups). Checked on
// both paths (the CPU fast path and the reference that CUDA runs), forward and the three
// gradients, in float64; conv1d against conv2d on a height-1 image. Errors name the op, what was
// expected and what came.

#include <sstream>

#include "nn/nn_helpers.hpp"

namespace gradlab {
namespace {

using checks::grad_ok;
using checks::gradgrad_ok;
using checks::Near;
using checks::rnd64;
using checks::vals;

// set_conv_reference(on) for one scope.
struct ConvPath {
  bool before;
  explicit ConvPath(bool reference) : before(conv_reference()) { set_conv_reference(reference); }
  ~ConvPath() { set_conv_reference(before); }
};

// Σ_g conv2d(x[:, g Cg : (g+1) Cg], w[g Og : (g+1) Og], b[g Og : (g+1) Og]) along the channels.
Tensor per_group(const Tensor& x, const Tensor& w, const Tensor& b, IntPair s, IntPair p, IntPair d,
                 int64_t groups) {
  const int64_t Cg = x.size(1) / groups, Og = w.size(0) / groups;
  TensorList outs;
  for (int64_t g = 0; g < groups; ++g)
    outs.push_back(conv2d(x.narrow(1, g * Cg, Cg), w.narrow(0, g * Og, Og),
                          b.defined() ? b.narrow(0, g * Og, Og) : Tensor(), s, p, d));
  return cat(outs, 1);
}

struct GroupCase {
  const char* name;
  Shape x, w;
  IntPair stride, padding, dilation;
  int64_t groups;
};

std::vector<GroupCase> group_cases() {
  return {
      {"groups 2", {2, 4, 5, 6}, {6, 2, 3, 3}, 1, 1, 1, 2},
      {"depthwise 3x3 stride 2", {2, 6, 7, 7}, {6, 1, 3, 3}, 2, 1, 1, 6},
      {"depthwise multiplier 2, dilation 2", {1, 3, 6, 5}, {6, 1, 2, 2}, 1, {1, 0}, 2, 3},
      // 4 channels per group: oneDNN's share of the float32 fast path (conv_onednn.cpp)
      {"groups 2 of 4 channels", {1, 8, 5, 5}, {4, 4, 3, 3}, {2, 1}, 0, 1, 2},
  };
}

// Forward and the gradients of x, w, b for one upstream gradient, on the path `reference` picks.
std::vector<std::vector<double>> forward_and_grads(const GroupCase& c, bool reference, bool oracle,
                                                   ScalarType dt) {
  ConvPath path(reference);
  Tensor x = rnd64(c.x, 1).to(dt).detach().requires_grad_(),
         w = rnd64(c.w, 2).to(dt).detach().requires_grad_(),
         b = rnd64({c.w[0]}, 3).to(dt).detach().requires_grad_();
  Tensor y = oracle ? per_group(x, w, b, c.stride, c.padding, c.dilation, c.groups)
                    : conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
  Tensor gy = rnd64(y.sizes(), 4).to(dt);
  y.backward(gy);
  return {vals(y), vals(x.grad()), vals(w.grad()), vals(b.grad())};
}

TEST(Conv2dGroups, BothPathsMatchOneConvPerGroup) {
  for (const GroupCase& c : group_cases()) {
    for (bool reference : {false, true}) {
      for (ScalarType dt : {kFloat64, kFloat32}) {
        SCOPED_TRACE(std::string(c.name) + (reference ? ", reference" : ", fast path") + ", " +
                     to_string(dt));
        const double tol = dt == kFloat64 ? 1e-12 : 1e-4;
        const auto got = forward_and_grads(c, reference, false, dt);
        const auto want = forward_and_grads(c, reference, true, kFloat64);
        const char* what[] = {"y", "dx", "dw", "db"};
        for (size_t i = 0; i < got.size(); ++i) {
          SCOPED_TRACE(what[i]);
          EXPECT_THAT(got[i], Near(want[i], tol));
        }
      }
    }
  }
}

TEST(Conv2dGroups, FastPathIsOneNodeAndGradchecks) {
  Tensor x = rnd64({1, 4, 4, 4}, 5), w = rnd64({4, 1, 3, 3}, 6), b = rnd64({4}, 7);
  {
    ConvPath path(false);
    EXPECT_EQ(conv2d(x, w, b, 1, 1, 1, 4).grad_fn()->name(), "ConvolutionBackward0");
  }
  for (bool reference : {false, true}) {
    ConvPath path(reference);
    auto f = [](const TensorList& in) { return conv2d(in[0], in[1], in[2], 1, 1, 1, 4); };
    EXPECT_TRUE(grad_ok(f, {x, w, b}, "depthwise conv2d"));
    EXPECT_TRUE(gradgrad_ok(f, {x, w, b}, "depthwise conv2d"));
  }
}

TEST(Conv2dGroups, FunctionalAndModule) {
  Tensor x = rnd64({2, 4, 5, 5}, 8), w = rnd64({6, 2, 3, 3}, 9), b = rnd64({6}, 10);
  namespace F = nn::functional;
  EXPECT_THAT(vals(F::conv2d(x, w, F::Conv2dFuncOptions().bias(b).padding(1).groups(2))),
              Near(vals(per_group(x, w, b, 1, 1, 1, 2)), 1e-12));
  nn::Conv2d m(nn::Conv2dOptions(4, 6, 3).padding(1).groups(2));
  EXPECT_EQ(m->weight.sizes(), (Shape{6, 2, 3, 3}));
  // kaiming_uniform(a = √5): bound 1 / √fan_in with fan_in = C / groups * kh * kw = 18; the 108
  // draws reach beyond 1 / √36 (the ungrouped fan_in's bound) with probability 1 - 0.71^108.
  const double wmax = m->weight.detach().abs().max().item<double>();
  EXPECT_LE(wmax, 1 / std::sqrt(18.0));
  EXPECT_GT(wmax, 1 / std::sqrt(36.0));
  EXPECT_LE(m->bias.detach().abs().max().item<double>(), 1 / std::sqrt(18.0));
  m->to(kFloat64);
  EXPECT_EQ(m(x).sizes(), (Shape{2, 6, 5, 5}));
  std::ostringstream os;
  os << *m;
  EXPECT_NE(os.str().find("groups=2"), std::string::npos) << os.str();
  nn::Conv2d dw(nn::Conv2dOptions(8, 8, 3).groups(8).bias(false));
  EXPECT_EQ(dw->weight.sizes(), (Shape{8, 1, 3, 3}));
  EXPECT_THROW_MSG(nn::Conv2d(nn::Conv2dOptions(4, 6, 3).groups(3)), ValueError, "Conv2d",
                   "in_channels must be divisible by groups", "a multiple of 3", "got 4");
  EXPECT_THROW_MSG(nn::Conv2d(nn::Conv2dOptions(4, 6, 3).groups(4)), ValueError, "Conv2d",
                   "out_channels must be divisible by groups");
}

TEST(Conv2dGroups, Errors) {
  Tensor x = zeros({1, 4, 5, 5});
  EXPECT_THROW_MSG(conv2d(x, zeros({6, 2, 3, 3}), {}, 1, 0, 1, 0), ValueError, "conv2d:",
                   "groups must be positive", "got 0");
  EXPECT_THROW_MSG(conv2d(x, zeros({3, 2, 3, 3}), {}, 1, 0, 1, 2), ShapeError, "conv2d:",
                   "divisible by groups", "[3, 2, 3, 3] with groups 2");
  EXPECT_THROW_MSG(conv2d(zeros({1, 3, 5, 5}), zeros({6, 2, 3, 3}), {}, 1, 0, 1, 2), ShapeError,
                   "conv2d:", "input with 4 channels", "weight.size(1) * groups", "[1, 3, 5, 5]",
                   "[out_channels, in_channels / groups, kh, kw]");
}

TEST(Conv1d, IsConv2dOnAHeightOneImage) {
  Tensor x = rnd64({2, 4, 9}, 11), w = rnd64({6, 2, 3}, 12), b = rnd64({6}, 13);
  for (bool reference : {false, true}) {
    ConvPath path(reference);
    Tensor y = conv1d(x, w, b, 2, 1, 2, 2);
    EXPECT_EQ(y.sizes(), (Shape{2, 6, 4}));  // (9 + 2 - 2*2 - 1) / 2 + 1
    EXPECT_THAT(vals(y), Near(vals(conv2d(x.unsqueeze(2), w.unsqueeze(2), b, {1, 2}, {0, 1},
                                          {1, 2}, 2)),
                              1e-12));
    EXPECT_THAT(vals(conv1d(x[1], w, b, 2, 1, 2, 2)), Near(vals(y[1]), 1e-12));  // unbatched
    auto f = [](const TensorList& in) { return conv1d(in[0], in[1], in[2], 2, 1, 2, 2); };
    EXPECT_TRUE(grad_ok(f, {x, w, b}, "conv1d"));
    EXPECT_TRUE(gradgrad_ok(f, {x, w, b}, "conv1d"));
  }
  // out[o, i] = Σ_a x[o, i + a] w[o, 0, a]: depthwise by hand
  Tensor xd = checks::d64({1.0, 2.0, 3.0, -1.0, 0.5, 4.0}, {2, 3});
  Tensor wd = checks::d64({1.0, -1.0, 2.0, 0.5}, {2, 1, 2});
  EXPECT_THAT(vals(conv1d(xd, wd, {}, 1, 0, 1, 2)), Near({-1.0, -1.0, -1.75, 3.0}, 1e-15));
}

TEST(Conv1d, FunctionalModuleAndErrors) {
  namespace F = nn::functional;
  Tensor x = rnd64({2, 3, 8}, 14), w = rnd64({4, 3, 3}, 15), b = rnd64({4}, 16);
  EXPECT_THAT(vals(F::conv1d(x, w, F::Conv1dFuncOptions().bias(b).padding(1).stride(2))),
              Near(vals(conv1d(x, w, b, 2, 1)), 1e-12));
  nn::Conv1d m(nn::Conv1dOptions(4, 8, 5).groups(2).padding(2));
  EXPECT_EQ(m->weight.sizes(), (Shape{8, 2, 5}));
  EXPECT_LE(m->weight.detach().abs().max().item<double>(), 1 / std::sqrt(10.0));
  EXPECT_EQ(m(zeros({3, 4, 7})).sizes(), (Shape{3, 8, 7}));
  EXPECT_EQ(m(zeros({4, 7})).sizes(), (Shape{8, 7}));
  std::ostringstream os;
  os << *m;
  EXPECT_NE(os.str().find("Conv1d(4, 8, kernel_size=[5], stride=[1], padding=[2], groups=2, bias=true)"),
            std::string::npos)
      << os.str();
  EXPECT_THROW_MSG(m(zeros({3, 5, 7})), ShapeError, "Conv1d", "input with 4 channels");
  EXPECT_THROW_MSG(conv1d(zeros({1, 4, 6}), zeros({3, 2, 3}), {}, 1, 0, 1, 2), ShapeError,
                   "conv1d:", "divisible by groups", "[3, 2, 3] with groups 2");
  EXPECT_THROW_MSG(conv1d(zeros({1, 3, 6}), zeros({4, 2, 3}), {}, 1, 0, 1, 2), ShapeError,
                   "conv1d:", "input with 4 channels", "[1, 3, 6]");
  EXPECT_THROW_MSG(conv1d(zeros({1, 4, 2}), zeros({4, 4, 3})), ShapeError, "conv1d:",
                   "shorter than the (dilated) kernel", "[1, 4, 2]");
  EXPECT_THROW_MSG(conv1d(zeros({1, 4, 5, 5}), zeros({4, 4, 3})), ShapeError, "conv1d:",
                   "[N, C, L]", "[1, 4, 5, 5]");
  EXPECT_THROW_MSG(conv1d(zeros({1, 4, 6}), zeros({4, 4, 3}), {}, 0), ValueError, "conv1d:",
                   "stride must be positive");
}

}  // namespace
}  // namespace gradlab

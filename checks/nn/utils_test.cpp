// nn::utils clipping (against PyTorch), parameters_to_vector / vector_to_parameters, and the
// diagnostics: parameters_not_updated and find_unregistered_tensors.

#include <cmath>
#include <gradlab/core/cuda.hpp>

#include "nn/nn_helpers.hpp"
#include "nn/pytorch_ref_nn.hpp"

namespace gradlab {
namespace {

using checks::d64;
using checks::Near;
using checks::vals;
using ::testing::ElementsAre;

std::vector<Tensor> with_grads() {
  Tensor a = zeros({2, 3}, dtype(kFloat64)).requires_grad_(),
         b = zeros({4}, dtype(kFloat64)).requires_grad_();
  a.mutable_grad() = d64(ref::clip_g1, {2, 3});
  b.mutable_grad() = d64(ref::clip_g2, {4});
  return {a, b};
}

TEST(ClipGradNorm, MatchesPyTorchForEachNormType) {
  struct Case {
    double p;
    double total;
    const std::vector<double>& g1;
    const std::vector<double>& g2;
  };
  const Case cases[] = {
      {2.0, ref::clip_total_2, ref::clip_g1_after_2, ref::clip_g2_after_2},
      {INFINITY, ref::clip_total_inf, ref::clip_g1_after_inf, ref::clip_g2_after_inf},
      {1.0, ref::clip_total_1, ref::clip_g1_after_1, ref::clip_g2_after_1},
      {3.0, ref::clip_total_3, ref::clip_g1_after_3, ref::clip_g2_after_3}};
  for (const Case& c : cases) {
    auto ps = with_grads();
    EXPECT_NEAR(nn::utils::grad_norm(ps, c.p), c.total, 1e-12) << c.p;
    EXPECT_NEAR(nn::utils::clip_grad_norm_(ps, 0.5, c.p), c.total, 1e-12) << c.p;
    EXPECT_THAT(vals(ps[0].grad()), Near(c.g1, 1e-14)) << c.p;
    EXPECT_THAT(vals(ps[1].grad()), Near(c.g2, 1e-14)) << c.p;
  }
}

TEST(ClipGradNorm, SmallNormsStayNonFiniteCanThrowNoGradsGiveZero) {
  auto ps = with_grads();
  const double total = nn::utils::clip_grad_norm_(ps, 100.0);
  EXPECT_THAT(vals(ps[0].grad()), Near(ref::clip_g1, 1e-6))
      << "norm below max_norm: (almost) unchanged";
  EXPECT_NEAR(total, ref::clip_total_2, 1e-12);
  Tensor p = zeros({2}).requires_grad_();
  p.mutable_grad() = tensor({NAN, 1.0});
  EXPECT_THROW_MSG(nn::utils::clip_grad_norm_(p, 1.0, 2.0, true), ValueError, "non-finite");
  EXPECT_TRUE(std::isnan(nn::utils::clip_grad_norm_(p, 1.0)));
  Tensor q = zeros({2}).requires_grad_();
  EXPECT_EQ(nn::utils::clip_grad_norm_(q, 1.0), 0.0);
}

TEST(ClipGradValue, ClampsEveryElement) {
  auto ps = with_grads();
  nn::utils::clip_grad_value_(ps, 0.3);
  for (const Tensor& p : ps)
    for (double v : vals(p.grad())) EXPECT_LE(std::abs(v), 0.3);
  EXPECT_THROW_MSG(nn::utils::clip_grad_value_(ps, -1), ValueError, "clip_value");
}

// ---- parameters_to_vector / vector_to_parameters --------------------------------------------

// Linear(3, 2) then Linear(2, 1): weight [2, 3], bias [2], weight [1, 2], bias [1] = 11 elements.
nn::Sequential two_linears() {
  manual_seed(3);
  return nn::Sequential(nn::Linear(3, 2), nn::Linear(2, 1));
}

std::vector<double> concat_values(const std::vector<Tensor>& ps) {
  std::vector<double> v;
  for (const Tensor& p : ps)
    for (double x : vals(p)) v.push_back(x);
  return v;
}

TEST(ParametersToVector, ConcatenatesTheFlattenedParametersInOrder) {
  auto m = two_linears();
  const std::vector<Tensor> ps = m->parameters();
  Tensor v = nn::utils::parameters_to_vector(ps);
  EXPECT_EQ(v.sizes(), (Shape{11}));
  EXPECT_EQ(v.dtype(), kFloat32);
  EXPECT_EQ(vals(v), concat_values(ps));
  EXPECT_TRUE(v.requires_grad() && v.grad_fn()) << "a graph node: the vector is differentiable";
  EXPECT_THROW_MSG(nn::utils::parameters_to_vector({}), ValueError, "parameters_to_vector",
                   "non-empty");
}

TEST(ParametersToVector, GradientFlowsBackToEveryParameter) {
  Tensor a = checks::rnd64({2, 3}, 1), b = checks::rnd64({4}, 2);
  Tensor w = checks::rnd64({10}, 3).detach();
  sum(nn::utils::parameters_to_vector({a, b}) * w).backward();
  // d/dp sum(vec * w) = the slice of w that p was flattened into
  EXPECT_EQ(vals(a.grad()), vals(w.narrow(0, 0, 6)));
  EXPECT_EQ(vals(b.grad()), vals(w.narrow(0, 6, 4)));
  // gradcheck in float64, also through a non-contiguous input (flattened by a copy, not a view)
  EXPECT_TRUE(checks::grad_ok(
      [](const TensorList& in) {
        return nn::utils::parameters_to_vector({in[0], in[1]});
      },
      {checks::rnd64({2, 3}, 4), checks::rnd64({4}, 5)}, "parameters_to_vector"));
  EXPECT_TRUE(checks::grad_ok(
      [](const TensorList& in) {
        return nn::utils::parameters_to_vector({in[0].t(), in[1]});
      },
      {checks::rnd64({2, 3}, 6), checks::rnd64({1}, 7)}, "parameters_to_vector of a transpose"));
}

TEST(VectorToParameters, RoundTripCopiesIntoTheSameParameterTensors) {
  auto m = two_linears();
  const std::vector<Tensor> ps = m->parameters();
  const std::vector<double> before = concat_values(ps);
  std::vector<const TensorImpl*> impls;
  for (const Tensor& p : ps) impls.push_back(p.impl());

  Tensor v = nn::utils::parameters_to_vector(ps).detach() * 2;
  nn::utils::vector_to_parameters(v, ps);  // outside NoGradGuard: it guards the copy itself
  std::vector<double> twice = before;
  for (double& x : twice) x *= 2;
  EXPECT_EQ(concat_values(ps), twice);
  EXPECT_EQ(vals(nn::utils::parameters_to_vector(ps)), vals(v)) << "round trip";
  const std::vector<Tensor> again = m->parameters();
  for (size_t i = 0; i < ps.size(); ++i) {
    EXPECT_EQ(again[i].impl(), impls[i]) << "the same tensors: optimizers keep seeing them";
    EXPECT_TRUE(again[i].requires_grad() && again[i].is_leaf()) << i;
    EXPECT_EQ(again[i].dtype(), kFloat32) << i;
  }
  {
    NoGradGuard no_grad;
    v.fill_(0.0);
  }
  EXPECT_EQ(concat_values(ps), twice) << "copied, not aliased: changing vec later changes nothing";

  // a float64 vector is cast to each parameter's dtype
  std::vector<double> seq(11);
  for (size_t i = 0; i < seq.size(); ++i) seq[i] = 0.5 * static_cast<double>(i);
  nn::utils::vector_to_parameters(checks::d64(seq, {11}), ps);
  EXPECT_EQ(concat_values(ps), seq);
  EXPECT_EQ(ps[0].dtype(), kFloat32);
  EXPECT_EQ(vals(ps[2]), (std::vector<double>{4.0, 4.5})) << "third parameter: elements 8 and 9";
}

TEST(VectorToParameters, AWrongVectorIsAClearErrorAndChangesNothing) {
  auto m = two_linears();
  const std::vector<Tensor> ps = m->parameters();
  const std::vector<double> before = concat_values(ps);
  EXPECT_THROW_MSG(nn::utils::vector_to_parameters(zeros({10}), ps), ShapeError,
                   "vector_to_parameters: vec's length must equal the total number of elements",
                   "expected 11 elements (4 parameters), got 10 elements",
                   "hint: make vec with parameters_to_vector");
  EXPECT_THROW_MSG(nn::utils::vector_to_parameters(zeros({12}), ps), ShapeError,
                   "expected 11 elements (4 parameters), got 12 elements");
  EXPECT_THROW_MSG(nn::utils::vector_to_parameters(zeros({1, 11}), ps), ShapeError,
                   "vector_to_parameters: vec must be a 1-D tensor",
                   "expected 1 dim, got 2 dims, shape [1, 11]", "hint: flatten it");
  EXPECT_THROW_MSG(nn::utils::vector_to_parameters(Tensor(), ps), ValueError,
                   "vector_to_parameters: expected a Tensor, but got: an undefined Tensor");
  EXPECT_EQ(concat_values(ps), before) << "every check runs before the first copy";
}

TEST(ParametersToVector, ParametersOnTwoDevicesAreAnError) {
  // The CUDA host emulator gives a second device without a GPU (as checks/cuda use it).
  const bool was_on = cuda::emulator::enabled();
  if (!was_on) cuda::emulator::enable();
  {
    Tensor a = zeros({2, 3}).requires_grad_(), b = zeros({4}).cuda().requires_grad_();
    EXPECT_THROW_MSG(nn::utils::parameters_to_vector({a, b}), DeviceError,
                     "parameters_to_vector: found two parameters on different devices",
                     "expected cpu (parameter 0), got cuda:0 (parameter 1)", "hint: move");
    EXPECT_THROW_MSG(nn::utils::vector_to_parameters(zeros({10}), {a, b}), DeviceError,
                     "vector_to_parameters: found two parameters on different devices");
    // all on the device: the vector is there too, and a CPU vector is copied onto the device
    Tensor c = ones({2, 3}).cuda().requires_grad_();
    Tensor v = nn::utils::parameters_to_vector({c, b});
    EXPECT_TRUE(v.is_cuda());
    EXPECT_EQ(v.sizes(), (Shape{10}));
    nn::utils::vector_to_parameters(arange(10).to(kFloat32), {c, b});
    EXPECT_TRUE(c.is_cuda() && b.is_cuda());
    EXPECT_EQ(vals(b.cpu()), (std::vector<double>{6, 7, 8, 9}));
  }
  if (!was_on) cuda::emulator::disable();  // every CUDA tensor above is gone
}

// A model with the classic bug: a trainable tensor kept as a member but never registered.
struct ScaledImpl : nn::Module {
  ScaledImpl() {
    fc = register_module("fc", nn::Linear(3, 2));
    scale = ones({2}).requires_grad_();  // BUG: not register_parameter("scale", ...)
  }
  Tensor forward(const Tensor& x) { return fc(x) * scale; }
  nn::Linear fc{nullptr};
  Tensor scale;
};

TEST(Diagnostics, UnregisteredTensorIsFoundAndNeverUpdated) {
  ScaledImpl m;
  EXPECT_EQ(m.parameters().size(), 2u) << "scale is missing from parameters()";
  Tensor x = randn({4, 3});
  Tensor loss = sum(m.forward(x) * m.forward(x));
  auto found = nn::find_unregistered_tensors(loss, m);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].tensor.impl(), m.scale.impl());
  EXPECT_EQ(found[0].used_by, "MulBackward0");
  EXPECT_THAT(found[0].describe(), ::testing::HasSubstr("[2] float32"));
  EXPECT_THAT(found[0].used_at.str(), ::testing::HasSubstr("utils_test.cpp"));

  optim::SGD opt(m.parameters(), 0.1);
  auto before = nn::snapshot_parameters(m);
  const Tensor scale_before = m.scale.detach().clone();
  loss.backward();
  opt.step();
  EXPECT_TRUE(equal(m.scale, scale_before)) << "the optimizer never sees scale";
  EXPECT_TRUE(m.scale.grad().defined()) << "...even though it has a gradient";
  EXPECT_TRUE(nn::parameters_not_updated(before, m).empty()) << "every registered parameter moved";
}

TEST(Diagnostics, ParametersNotUpdatedNamesFrozenAndDisconnectedOnes) {
  struct TwoHeadsImpl : nn::Module {
    TwoHeadsImpl() {
      used = register_module("used", nn::Linear(3, 1));
      unused = register_module("unused", nn::Linear(3, 1));
      frozen = register_parameter("frozen", ones({1}), /*requires_grad=*/false);
    }
    Tensor forward(const Tensor& x) { return used(x) * frozen; }
    nn::Linear used{nullptr}, unused{nullptr};
    Tensor frozen;
  };
  TwoHeadsImpl m;
  optim::SGD opt(m.parameters(), 0.1);
  auto before = nn::snapshot_parameters(m);
  sum(m.forward(randn({4, 3}))).backward();
  opt.step();
  EXPECT_THAT(nn::parameters_not_updated(before, m), ElementsAre("unused.weight", "unused.bias"))
      << "frozen parameters are not reported";
  auto after = nn::snapshot_parameters(m);
  EXPECT_THAT(nn::parameters_not_updated(before, after),
              ElementsAre("unused.weight", "unused.bias"));
  EXPECT_TRUE(nn::find_unregistered_tensors(sum(m.forward(randn({2, 3}))), m).empty());
}

}  // namespace
}  // namespace gradlab

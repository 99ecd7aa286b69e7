// gradlab_torch (torch_harness/): gradlab's gradcheck, gradgradcheck and property runner on
// LibTorch code. Built and run only when LibTorch is found. A custom LibTorch Function with a
// planted wrong backward must be caught; LibTorch built-ins and a correct Function must pass.

#include <gtest/gtest.h>

#include "gradlab_torch.hpp"

namespace {

using gradlab_torch::TorchList;

torch::Tensor leaf(std::vector<int64_t> shape, uint64_t seed) {
  torch::manual_seed(seed);
  return torch::randn(shape, torch::kFloat64).requires_grad_(true);
}

// y = c x³ with the right backward (dx = 3 c x² dy), or a planted wrong one (dx = 2 c x² dy).
template <bool Wrong>
struct Cube : torch::autograd::Function<Cube<Wrong>> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x, double c) {
    ctx->saved_data["c"] = c;
    ctx->save_for_backward({x});
    return x * x * x * c;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list g) {
    torch::Tensor x = ctx->get_saved_variables()[0];
    const double k = Wrong ? 2.0 : 3.0;
    return {g[0] * x * x * k * ctx->saved_data["c"].toDouble(), torch::Tensor()};
  }
};

TEST(TorchGradcheck, LibTorchBuiltinsPass) {
  auto r = gradlab_torch::gradcheck(
      [](const TorchList& in) { return TorchList{torch::logsumexp(in[0].sin(), 1, true), in[0].matmul(in[1])}; },
      {leaf({2, 3}, 1), leaf({3, 2}, 2)});
  EXPECT_TRUE(r.ok) << r.text();
  EXPECT_EQ(r.checked_inputs.size(), 2u);
  auto rr = gradlab_torch::gradgradcheck([](const TorchList& in) { return TorchList{in[0].tanh() * in[0]}; },
                                         {leaf({4}, 3)});
  EXPECT_TRUE(rr.ok) << rr.text();
}

TEST(TorchGradcheck, CustomFunctionWithTheRightBackwardPasses) {
  auto r = gradlab_torch::gradcheck([](const TorchList& in) { return TorchList{Cube<false>::apply(in[0], 1.5)}; },
                                    {leaf({3}, 4)});
  EXPECT_TRUE(r.ok) << r.text();
  auto rr = gradlab_torch::gradgradcheck(
      [](const TorchList& in) { return TorchList{Cube<false>::apply(in[0], 1.5)}; }, {leaf({3}, 5)});
  EXPECT_TRUE(rr.ok) << rr.text();
}

TEST(TorchGradcheck, PlantedWrongBackwardIsCaught) {
  gradlab::testing::GradcheckOptions o;
  o.name("Cube (planted bug)").raise_exception(false);
  auto r = gradlab_torch::gradcheck([](const TorchList& in) { return TorchList{Cube<true>::apply(in[0], 1.5)}; },
                                    {leaf({3}, 6)}, o);
  EXPECT_FALSE(r.ok);
  const std::string text = r.text();
  EXPECT_NE(text.find("gradcheck failed for Cube (planted bug)"), std::string::npos) << text;
  EXPECT_NE(text.find("analytic"), std::string::npos) << text;
  EXPECT_GT(r.num_failures, 0);
  // by default (raise_exception, as PyTorch's gradcheck) the report is thrown
  EXPECT_THROW(gradlab_torch::gradcheck([](const TorchList& in) { return TorchList{Cube<true>::apply(in[0], 1.5)}; },
                                        {leaf({3}, 7)}),
               gradlab::testing::GradcheckError);
}

TEST(TorchPropertyRunner, UsersTableCatchesTheWrongRowOnly) {
  namespace gt = gradlab::testing;
  auto sample = [](gt::Draw& d) {
    gradlab::Tensor x = d.values(d.shape(1, 3, 4), gt::Domain::any(), false);
    return gt::OpCase{{x}, gt::OpParams(), "x " + gradlab::shape_str(x.sizes())};
  };
  std::vector<gradlab_torch::TorchOpSpec> table = {
      {"sigmoid", sample, [](const TorchList& in, const gt::OpParams&) { return TorchList{torch::sigmoid(in[0])}; },
       [](const TorchList& in, const gt::OpParams&) { return TorchList{1 / (1 + torch::exp(-in[0]))}; }},
      {"cube (right)", sample,
       [](const TorchList& in, const gt::OpParams&) { return TorchList{Cube<false>::apply(in[0], 2.0)}; },
       [](const TorchList& in, const gt::OpParams&) { return TorchList{in[0].pow(3) * 2}; }},
      {"cube (planted bug)", sample,
       [](const TorchList& in, const gt::OpParams&) { return TorchList{Cube<true>::apply(in[0], 2.0)}; }, {}},
  };
  auto results = gradlab_torch::check_ops(table, 5, 42);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0].ok()) << results[0].first_failure;
  EXPECT_TRUE(results[1].ok()) << results[1].first_failure;
  EXPECT_FALSE(results[2].ok());
  EXPECT_EQ(results[2].failures, 5);
  EXPECT_NE(results[2].first_failure.find("gradcheck failed"), std::string::npos) << results[2].first_failure;
}

}  // namespace

#pragma once
// gradlab's gradient checks for LibTorch code (LibTorch has no C++ gradcheck). An optional
// library, `gradlab_torch`, built when LibTorch is found (cmake/GradlabLibTorch.cmake); gradlab
// itself never links LibTorch.
//
//   auto r = gradlab_torch::gradcheck(
//       [](const gradlab_torch::TorchList& in) { return gradlab_torch::TorchList{MyFn::apply(in[0])}; },
//       {torch::randn({3, 4}, torch::kFloat64).requires_grad_()},
//       gradlab::testing::GradcheckOptions().raise_exception(false));  // default: throws the report
//   if (!r) std::cout << r.text();   // gradlab's report: worst element, analytic vs numeric, ...
//
// How: the LibTorch function runs inside a gradlab graph as one node (bridge). gradlab's
// gradcheck perturbs the inputs and differentiates through that node, whose backward calls
// torch::autograd::grad. Under create_graph (gradgradcheck) the backward is itself bridged, so
// LibTorch's double backward is what gets checked. Inputs are copied (float64 stays float64).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include <gradlab/gradlab.hpp>
#include <gradlab/testing.hpp>

namespace gradlab_torch {

using TorchList = std::vector<torch::Tensor>;
/// A function of LibTorch tensors: built-ins, or a torch::autograd::Function's apply.
using TorchFn = std::function<TorchList(const TorchList&)>;

/// A copy of t as a gradlab tensor (same dtype: float32, float64, int64 or bool; no graph).
gradlab::Tensor to_gradlab(const torch::Tensor& t);
/// A copy of t as a LibTorch tensor (no graph).
torch::Tensor to_torch(const gradlab::Tensor& t);

/// Calls fn on LibTorch copies of `inputs` and records it in gradlab's graph as one node
/// ("TorchFunctionBackward") whose backward is LibTorch's.
gradlab::TensorList bridge(const TorchFn& fn, const gradlab::TensorList& inputs,
                           const std::string& name = "torch function");

/// gradlab's gradcheck (central differences in the inputs' dtype; use float64) of a LibTorch
/// function. Floating inputs that require grad are differentiated.
gradlab::testing::GradcheckReport gradcheck(const TorchFn& fn, const TorchList& inputs,
                                            gradlab::testing::GradcheckOptions options = {});
/// Second derivatives: gradlab's gradgradcheck through LibTorch's double backward.
gradlab::testing::GradcheckReport gradgradcheck(const TorchFn& fn, const TorchList& inputs,
                                                gradlab::testing::GradcheckOptions options = {});

/// One row of a user's table of LibTorch ops, for the property runner: `sample` draws a case
/// with gradlab's Draw (shapes, values in a domain, indices), `op` runs it in LibTorch,
/// `reference` (optional) computes the expected values another way.
struct TorchOpSpec {
  std::string name;
  std::function<gradlab::testing::OpCase(gradlab::testing::Draw&)> sample;
  std::function<TorchList(const TorchList&, const gradlab::testing::OpParams&)> op;
  std::function<TorchList(const TorchList&, const gradlab::testing::OpParams&)> reference;
  bool second_order = true;  ///< also gradgradcheck
  double rtol = 1e-7, atol = 1e-9;  ///< op vs reference
};

/// What the runner found for one row.
struct PropertyResult {
  std::string name;
  int64_t cases = 0;
  int64_t failures = 0;
  uint64_t seed = 0;            ///< rerun with check_ops(table, cases, seed)
  std::string first_failure;    ///< the case and the report of the first failing check
  bool ok() const { return failures == 0; }
};

/// Runs every row on `cases` drawn cases (GeneratorDraw seeded from `seed` and the case number):
/// gradcheck, gradgradcheck when second_order, and op vs reference. Prints the seed.
std::vector<PropertyResult> check_ops(const std::vector<TorchOpSpec>& table, int64_t cases = 10,
                                      uint64_t seed = 0);

}  // namespace gradlab_torch

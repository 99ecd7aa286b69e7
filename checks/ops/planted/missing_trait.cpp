// Compiled by the op_traits_planted_* tests (checks/ops/extras.cmake), never linked: a library op
// struct with its kAutocast trait removed must not compile (BuiltinOp's static_assert), and the
// same struct with the trait (-DGRADLAB_PLANT_TRAIT) must.

#include "gradlab/ops/common.hpp"

namespace gradlab::ops_detail {

// y = x          dx = dy
struct PlantedIdentity : BuiltinOp<PlantedIdentity> {
  static constexpr const char* kName = "PlantedIdentityBackward0";
  static constexpr Formula kFormula = kNoFormula;
#ifdef GRADLAB_PLANT_TRAIT
  static constexpr Amp kAutocast = Amp::None;
#endif
  static constexpr Onnx kOnnx = Onnx::same("Identity");
  static constexpr Fusion kFusion = Fusion::None;
  Tensor forward(const Tensor& x) { return x; }
  GradList backward(const GradList& g) { return {g[0]}; }
};

Tensor planted_identity(const Tensor& x) { return record<PlantedIdentity>(Site::unknown(), x); }

}  // namespace gradlab::ops_detail

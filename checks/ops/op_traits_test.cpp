// Op traits (ops/op_traits.hpp): every library op struct declares them, the check that says so
// can fail (planted structs, each with one trait removed), and the registry hands them to jit,
// onnx and autocast.

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>

#include "gradlab/ops/common.hpp"
#include "gradlab/ops/internal/elementwise.hpp"

namespace gradlab {
namespace {

using namespace ops_detail;

// Planted structs, never instantiated: each lacks one trait (or its consequence).
struct NoFusion {
  static constexpr const char* kName = "NoFusionBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::none("planted");
};
struct NoAutocast {
  static constexpr const char* kName = "NoAutocastBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Onnx kOnnx = Onnx::none("planted");
  static constexpr Fusion kFusion = Fusion::None;
};
struct FusesWithoutDerivative {
  static constexpr const char* kName = "FusesWithoutDerivativeBackward0";
  static constexpr Formula kFormula = math::Unary::Exp;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::same("Exp");
  static constexpr Fusion kFusion = Fusion::Elementwise;
};
struct CustomOnnxWithoutMapping {
  static constexpr const char* kName = "CustomOnnxWithoutMappingBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::custom();
  static constexpr Fusion kFusion = Fusion::None;
};

static_assert(!autograd::has_op_traits_v<NoFusion>);
static_assert(!autograd::has_op_traits_v<NoAutocast>);
static_assert(!autograd::has_op_traits_v<FusesWithoutDerivative>);
static_assert(!autograd::has_op_traits_v<CustomOnnxWithoutMapping>);
static_assert(autograd::has_op_traits_v<Exp> && autograd::has_op_traits_v<LeakyRelu>);

TEST(OpTraits, AStructWithATraitRemovedIsReported) {
  EXPECT_STREQ(autograd::missing_trait<NoFusion>(), "kFusion");
  EXPECT_STREQ(autograd::missing_trait<NoAutocast>(), "kAutocast");
  EXPECT_STREQ(autograd::missing_trait<FusesWithoutDerivative>(), "derivative");
  EXPECT_STREQ(autograd::missing_trait<CustomOnnxWithoutMapping>(), "to_onnx");
  EXPECT_EQ(autograd::missing_trait<Exp>(), nullptr);
}

TEST(OpTraits, EveryLibraryOpDeclaresItsTraits) {
  int builtin = 0;
  for (const auto& info : autograd::registered_op_infos()) {
    if (!info.builtin) continue;
    ++builtin;
    SCOPED_TRACE(info.name);
    if (info.fusion == autograd::Fusion::Elementwise) {
      EXPECT_NE(info.fused_derivative, nullptr);
      EXPECT_NE(info.formula.kind, autograd::Formula::Kind::None);
    }
    switch (info.onnx.kind) {
      case autograd::Onnx::Kind::Same: EXPECT_NE(info.onnx.op, nullptr); break;
      case autograd::Onnx::Kind::Custom: EXPECT_NE(info.to_onnx, nullptr); break;
      case autograd::Onnx::Kind::None:
        ASSERT_NE(info.onnx.reason, nullptr);
        EXPECT_GT(std::strlen(info.onnx.reason), 5u) << "say why it does not export";
        break;
    }
  }
  EXPECT_GE(builtin, 50) << "the registry lists too few library ops: is Op<T>::name() still odr-using kRegistered?";
}

// The autocast categories PyTorch documents for the ops that are structs; the traits must agree.
TEST(OpTraits, AutocastCategoriesFollowPyTorch) {
  std::map<std::string, autograd::Amp> want = {
      {"ExpBackward0", autograd::Amp::Float32},  {"LogBackward0", autograd::Amp::Float32},
      {"PowBackward0", autograd::Amp::Float32},  {"PowBackward1", autograd::Amp::Float32},
      {"SoftplusBackward0", autograd::Amp::Float32}, {"SumBackward0", autograd::Amp::Float32},
      {"MmBackward0", autograd::Amp::Lower},     {"BmmBackward0", autograd::Amp::Lower},
      {"AddmmBackward0", autograd::Amp::Lower},  {"ReluBackward0", autograd::Amp::None},
      {"AddBackward0", autograd::Amp::None},     {"CatBackward0", autograd::Amp::Promote}};
  for (const auto& info : autograd::registered_op_infos())
    if (auto it = want.find(info.name); it != want.end()) {
      EXPECT_EQ(static_cast<int>(info.autocast), static_cast<int>(it->second)) << info.name;
      want.erase(it);
    }
  for (const auto& [name, amp] : want) ADD_FAILURE() << name << " is not registered";
}

}  // namespace
}  // namespace gradlab

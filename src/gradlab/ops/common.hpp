#pragma once
// Helpers shared by the op files (internal).

#include <functional>
#include <utility>
#include <vector>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/autograd/node.hpp"
#include "gradlab/backend/fused_builder.hpp"
#include "gradlab/backend/kernels.hpp"
#include "gradlab/core/tensor_impl.hpp"
#include "gradlab/ops/op.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::ops_detail {

using autograd::GradList;
using autograd::kOutput;
using autograd::Output;
using autograd::Op;
using autograd::record;
using autograd::SavedTensor;
using autograd::Amp;
using autograd::BinaryArgs;
using autograd::Formula;
using autograd::Fusion;
using autograd::kNoFormula;
using autograd::Onnx;
using autograd::OnnxCall;
using autograd::OnnxGraph;
using autograd::UnaryArgs;

/// The base of every library op struct: Op<D>, plus the check that D declares all its traits
/// (ops/op_traits.hpp). A struct without one does not compile, and the message names it.
template <class D>
struct BuiltinOp : Op<D>, autograd::BuiltinOpTag {
  BuiltinOp() {
    static_assert(autograd::has_op_traits_v<D>,
                  "a library op struct lacks a trait (kFormula, kAutocast, kOnnx, kFusion, and a derivative "
                  "template when it fuses): autograd::missing_trait<Op>() names it");
  }
};

/// Runs an in-place op on self (ops/inplace.cpp; every `name_` op goes through it): without a
/// graph `direct()` writes into self; with one, `functional(old)` computes the new value from a
/// clone of the old (recorded), it is written back and becomes self's history (a view's base
/// is rebased). Refuses a leaf that requires grad; bumps the version either way. `others`: the
/// op's other inputs, whose requires_grad also asks for a graph.
const Tensor& apply_inplace(const Tensor& self, const char* op, const Site& site,
                            const std::vector<const Tensor*>& others, const std::function<void()>& direct,
                            const std::function<Tensor(const Tensor&)>& functional);
/// Throws DeviceError naming both devices when a and b differ.
void check_same_device(const char* op, const Tensor& a, const Tensor& b);
/// Throws unless x is defined (names the op and the argument).
void check_defined(const char* op, const Tensor& x, const char* arg = "input");
/// x converted (differentiably) to dtype, or x itself.
Tensor cast_to(const Tensor& x, ScalarType dtype, const Site& site);
/// autocast's lower-precision list (matmul, bmm, linear, conv): x in the autocast dtype of its
/// device when autocast is on there and x is a floating type other than float64 and that dtype
/// (PyTorch's "eligible" rule); else x. Never inside a backward pass.
Tensor autocast_lower(const Tensor& x, const Site& site);
/// autocast's float32 list (softmax, log_softmax, losses, norms, exp/log, reductions): a
/// float16/bfloat16 x widened to float32 when autocast is on for its device; else x.
Tensor autocast_float32(const Tensor& x, const Site& site);
/// LibTorch's int64 reduction (0 none, 1 mean, 2 sum) as the enum; throws ValueError naming `op`
/// for any other number.
nn::functional::Reduction to_reduction(const char* op, int64_t reduction);
/// The dtype float math runs in: x's if floating, else float32 (int64 -> float32, as PyTorch).
ScalarType float_dtype(const Tensor& x);
/// Promotes and broadcasts a and b for an elementwise op (casts and expands recorded as ops).
std::pair<Tensor, Tensor> prepare_binary(const char* op, const Tensor& a, const Tensor& b,
                                         const Site& site, bool to_float = false);
/// A 0-d tensor for a number combined with `like` (PyTorch's wrapped-number rules).
Tensor wrap_scalar(const Scalar& s, const Tensor& like, const char* op);

}  // namespace gradlab::ops_detail

namespace gradlab::autograd::detail {
// An op's derivative template run on registers: jit::compile's view of it (op_traits.hpp).
template <class T>
void fused_derivative_of(kern::FusedGrad& g) {
  if constexpr (T::kFormula.kind == Formula::Kind::Unary) {
    g.grad[0] = T::derivative(g.dy, UnaryArgs<kern::Reg>{g.in[0], g.y, g.p, g.q});
  } else {
    const auto d = T::derivative(g.dy, BinaryArgs<kern::Reg>{g.in[0], g.in[1], g.y, g.want[0], g.want[1]});
    g.grad = {d[0], d[1]};
  }
}
}  // namespace gradlab::autograd::detail

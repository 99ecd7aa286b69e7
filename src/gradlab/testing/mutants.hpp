#pragma once
// Gradient mutants by override: replace one op struct's backward with a deliberately wrong
// formula, run the same public functions and properties, and check that they fail. The mutant
// goes through the op's real dispatch (its real forward, kernels and saved members); only the
// backward formula differs, so "exactly one change" holds by construction.
//
//   // MUTANT: dx = dy * cos(x) loses its sign
//   testing::BackwardOverride<ops_detail::Sin> m([](ops_detail::Sin& op, const GradList& g) {
//     return GradList{-g[0] * cos(op.x_.unpack())};
//   });
//   EXPECT_FALSE(testing::gradcheck(f, {x}, GradcheckOptions().raise_exception(false)).ok);
//
// It works the same on a user's own op struct (any `struct MyOp : autograd::Op<MyOp>`).

#include <functional>
#include <memory>
#include <typeinfo>
#include <utility>

#include "gradlab/ops/op.hpp"

namespace gradlab::testing {

/// Replaces OpT's backward by `fn(op, grads)` for every OpT node recorded while this guard lives
/// (nodes keep the override after it ends; nodes recorded before or after it are untouched).
template <class OpT>
class BackwardOverride {
 public:
  using Fn = std::function<autograd::GradList(OpT&, const autograd::GradList&)>;

  explicit BackwardOverride(Fn fn)
      : fn_(std::make_shared<const autograd::detail::BackwardFn>(
            [fn = std::move(fn)](autograd::Node& node, const autograd::GradList& grads) {
              return fn(static_cast<OpT&>(node), grads);
            })) {
    autograd::detail::install_backward_override(typeid(OpT), fn_);
  }
  ~BackwardOverride() { autograd::detail::remove_backward_override(typeid(OpT), fn_.get()); }
  BackwardOverride(const BackwardOverride&) = delete;
  BackwardOverride& operator=(const BackwardOverride&) = delete;

 private:
  std::shared_ptr<const autograd::detail::BackwardFn> fn_;
};

}  // namespace gradlab::testing

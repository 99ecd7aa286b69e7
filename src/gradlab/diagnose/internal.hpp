#pragma once
// Helpers shared by the diagnose .cpp files (not installed for users: no public declarations).

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gradlab/autograd/node.hpp"
#include "gradlab/core/error.hpp"
#include "gradlab/core/tensor.hpp"
#include "gradlab/data/dataloader.hpp"
#include "gradlab/diagnose/finding.hpp"
#include "gradlab/nn/module.hpp"

namespace gradlab::diagnose::detail {

/// "1 tensor", "3 tensors", "2 batches": a count with its noun in the right number (regular
/// plurals: -s, or -es after s, x, ch, sh).
inline std::string plural(int64_t n, const std::string& noun) {
  auto ends = [&](const char* e) {
    const std::string t(e);
    return noun.size() >= t.size() && noun.compare(noun.size() - t.size(), t.size(), t) == 0;
  };
  const bool es = ends("s") || ends("x") || ends("ch") || ends("sh");
  return std::to_string(n) + " " + noun + (n == 1 ? "" : es ? "es" : "s");
}

/// A number for evidence lines: 4 significant digits ("2.303", "1.2e-05", "nan").
inline std::string num(double v, int precision = 4) {
  std::ostringstream os;
  os.precision(precision);
  os << v;
  return os.str();
}

/// Every element as double, row-major (detached, any dtype, any device).
inline std::vector<double> values(const Tensor& t) { return t.detach().contiguous().to_vector<double>(); }

/// "[17, 3]": the multi-index of flat element `flat` in `shape`.
inline std::string index_str(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

/// The user's line for an op (its graph node `n`, or its op and module sites), never a line of gradlab's own sources:
///   "called at net.cpp:14 (in forward)"                  the op is in the user's code;
///   "inside a module called at net.cpp:9 (in forward)"   the op is inside a library module
///                                                        (nn::Softmax) the user's code calls;
///   "inside the model given at main.cpp:40 (in main)"    no user line calls it (a Sequential
///                                                        run by doctor): `given` (Model::site);
///   "inside gradlab (no user line recorded)"             none of these is known.
/// `given_what` names what `given` handed over ("the model", "the loss").
inline std::string user_site(const Site& op, const Site& module, const Site& given,
                             const std::string& given_what = "the model") {
  if (op.known() && !op.in_library()) return "called at " + op.str();
  if (module.known()) return "inside a module called at " + module.str();
  if (given.known() && !given.in_library()) return "inside " + given_what + " given at " + given.str();
  return "inside gradlab (no user line recorded)";
}
inline std::string user_site(const autograd::Node* n, const Site& given, const std::string& given_what = "the model") {
  return n ? user_site(n->site, n->module_site, given, given_what)
           : user_site(Site::unknown(), Site::unknown(), given, given_what);
}

/// Throws ShapeError unless `inputs` is a batch [B, ...] with B >= 1.
inline void check_batch(const char* op, const Tensor& inputs) {
  GRADLAB_CHECK(inputs.defined() && inputs.dim() >= 1 && inputs.size(0) > 0, ShapeError, op,
                "inputs must be a batch [B, ...]", "[B, ...] with B >= 1",
                inputs.defined() ? shape_str(inputs.sizes()) : std::string("undefined"));
}

inline Finding make(Stage stage, std::string check, Verdict verdict, std::string evidence, std::string hint = {}) {
  Finding f;
  f.stage = stage;
  f.check = std::move(check);
  f.verdict = verdict;
  f.evidence = std::move(evidence);
  f.hint = std::move(hint);
  return f;
}

/// Rows [perm[start], ..., perm[start + n - 1]] of x (perm wraps around).
Tensor rows(const Tensor& x, const std::vector<int64_t>& perm, int64_t start, int64_t n);
/// A seeded permutation of 0..n-1.
std::vector<int64_t> permutation(int64_t n, uint64_t seed);

/// A loader over the same dataset, options and seed that stands where `loader` stands (epoch,
/// position): reading it leaves the user's loader (and default_generator) untouched, so the
/// checks take a const loader. (A DataLoader can neither be copied nor moved: hence the pointer.)
std::unique_ptr<data::DataLoader> replica(const data::DataLoader& loader);

/// The bytes of row `row` of a flattened [N, d] matrix as a hash key (+0.0 turns -0 into 0:
/// equal values, equal keys).
std::string row_key(const std::vector<double>& v, int64_t row, int64_t d);

// ---- the recorded graph (defined in model_checks.cpp) -------------------------------------------

/// Whether n is a node of op struct OpT (by type: a display name is never a key).
template <class OpT>
bool is(const autograd::Node* n) {
  return dynamic_cast<const OpT*>(n) != nullptr;
}
/// The node behind input i of n, looking through broadcasts (a keepdim sum divided into a tensor
/// is expanded first: DivBackward0 <- ExpandBackward0 <- SumBackward1).
autograd::Node* input_node(const autograd::Node* n, size_t i);
/// softmax(x) = e / sum(e, dim, keepdim), e = exp(x - max).
bool is_softmax(const autograd::Node* n);
/// log_softmax(x) = x - logsumexp(x).
bool is_log_softmax(const autograd::Node* n);
/// Every node reachable from root's grad_fn (depth first, each once).
std::vector<autograd::Node*> reachable(const Tensor& root);
/// "relu at net.cpp:14 (in forward)", plus ", inside a module called at main.cpp:30 (in main)"
/// when the op ran inside a module the user called (Node::module_site). An op whose own line is
/// in gradlab (the sigmoid of an nn::Sigmoid) is named by the user's line instead (user_site:
/// "sigmoid inside a module called at ..." / "sigmoid inside the model given at ...").
std::string op_at(const std::string& op, const autograd::Node* n, const Site& given);

/// Forward hooks on every module of a model for one scope (removed on exit).
class HookScope {
 public:
  HookScope(nn::Module& root, const nn::ForwardHook& hook) {
    add(root, "", hook);
    for (auto& [name, m] : root.named_modules()) add(*m, name, hook);
  }
  ~HookScope() {
    for (auto& [m, h] : handles_) m->remove_forward_hook(h);
  }
  HookScope(const HookScope&) = delete;
  HookScope& operator=(const HookScope&) = delete;
  /// The dotted name of a hooked module ("" for the root).
  const std::string& name_of(const nn::Module* m) const { return names_.at(m); }

 private:
  void add(nn::Module& m, const std::string& name, const nn::ForwardHook& hook) {
    handles_.emplace_back(&m, m.register_forward_hook(hook));
    names_[&m] = name;
  }
  std::vector<std::pair<nn::Module*, unsigned>> handles_;
  std::map<const nn::Module*, std::string> names_;
};

inline bool is_leaf_module(const nn::Module& m) { return m.named_children().empty(); }

}  // namespace gradlab::diagnose::detail

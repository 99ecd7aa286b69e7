#include "gradlab/distributed_optim/zero.hpp"

#include <algorithm>
#include <string>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/distributed/process_group.hpp"

namespace gradlab::distributed {

ZeroRedundancyOptimizerBase::ZeroRedundancyOptimizerBase(std::vector<Tensor> params)
    : params_(std::move(params)) {
  GRADLAB_CHECK(!params_.empty(), ValueError, "ZeroRedundancyOptimizer", "no parameters",
                "at least one parameter", "an empty list");
  const int n = is_initialized() ? get_world_size() : 1;
  const int me = is_initialized() ? get_rank() : 0;
  GRADLAB_CHECK(params_.size() >= static_cast<size_t>(n), ValueError, "ZeroRedundancyOptimizer",
                "fewer parameters than ranks", "at least one parameter per rank (" + std::to_string(n) + ")",
                std::to_string(params_.size()) + " parameters", "use the plain optimizer for so small a model");
  // Greedy, as PyTorch: largest parameters first (stable on ties), each to the rank that owns
  // the fewest elements so far (the lowest rank on ties). The local optimizer keeps the order
  // the parameters were given in.
  std::vector<size_t> order(params_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return params_[a].numel() > params_[b].numel(); });
  std::vector<int64_t> load(static_cast<size_t>(n), 0);
  owner_.assign(params_.size(), 0);
  for (size_t i : order) {
    int best = 0;
    for (int r = 1; r < n; ++r)
      if (load[static_cast<size_t>(r)] < load[static_cast<size_t>(best)]) best = r;
    load[static_cast<size_t>(best)] += params_[i].numel();
    owner_[i] = best;
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    local_index_.push_back(owner_[i] == me ? local_params_.size() : SIZE_MAX);
    if (owner_[i] == me) local_params_.push_back(params_[i]);
  }
}

void ZeroRedundancyOptimizerBase::step() {
  if (!local_params_.empty()) local_->step();
  if (!is_initialized() || get_world_size() == 1) return;
  NoGradGuard ng;
  // Every owner's parameters, one coalesced broadcast per rank, in rank order on every rank.
  for (int r = 0; r < get_world_size(); ++r) {
    std::vector<Tensor> mine;
    for (size_t i = 0; i < params_.size(); ++i)
      if (owner_[i] == r) mine.push_back(params_[i]);
    if (!mine.empty()) broadcast_coalesced(mine, r);
  }
}

void ZeroRedundancyOptimizerBase::zero_grad(bool set_to_none) {
  NoGradGuard ng;
  for (const Tensor& p : params_) {
    if (!p.grad().defined()) continue;
    if (set_to_none) p.mutable_grad() = Tensor();
    else p.mutable_grad().zero_();
  }
}

int64_t ZeroRedundancyOptimizerBase::state_bytes() const {
  int64_t bytes = 0;
  for (const Tensor& p : local_params_) {
    if (!local_->has_state(p)) continue;
    for (const auto& [name, t] : local_->state(p))
      if (t.defined()) bytes += t.numel() * static_cast<int64_t>(element_size(t.dtype()));
  }
  return bytes;
}

namespace {
// A state tensor's description as int64 words: dtype, dim, sizes...
std::vector<int64_t> describe_state(const Tensor& t) {
  std::vector<int64_t> d = {static_cast<int64_t>(t.dtype()), t.dim()};
  for (int64_t s : t.sizes()) d.push_back(s);
  return d;
}
}  // namespace

void ZeroRedundancyOptimizerBase::consolidate_state_dict(int to) {
  const int n = is_initialized() ? get_world_size() : 1;
  GRADLAB_CHECK(to >= 0 && to < n, ValueError, "consolidate_state_dict", "`to` is not a rank",
                "0 <= to < " + std::to_string(n), std::to_string(to));
  const int me = is_initialized() ? get_rank() : 0;
  NoGradGuard ng;
  StateDict full;
  const StateDict local_sd = local_->state_dict();
  // Per parameter, its owner announces how many state entries it has, then each entry's name
  // length, name bytes, shape and values (broadcasts: small, and consolidation is rare).
  auto bcast_ints = [&](std::vector<int64_t>& v, int src) {
    Tensor len = empty({1}, TensorOptions().dtype(kInt64));
    len.data_ptr<int64_t>()[0] = static_cast<int64_t>(v.size());
    if (n > 1) broadcast(len, src);
    v.resize(static_cast<size_t>(len.item<int64_t>()));
    Tensor t = empty({static_cast<int64_t>(v.size())}, TensorOptions().dtype(kInt64));
    std::copy(v.begin(), v.end(), t.data_ptr<int64_t>());
    if (n > 1 && !v.empty()) broadcast(t, src);
    std::copy(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + v.size(), v.begin());
  };
  for (size_t i = 0; i < params_.size(); ++i) {
    const int src = owner_[i];
    std::vector<std::pair<std::string, Tensor>> entries;
    if (src == me && local_->has_state(params_[i]))
      for (const auto& [name, t] : local_->state(params_[i])) entries.emplace_back(name, t);
    std::vector<int64_t> count = {static_cast<int64_t>(entries.size())};
    bcast_ints(count, src);
    for (int64_t e = 0; e < count[0]; ++e) {
      std::vector<int64_t> name_words, shape;
      if (src == me) {
        for (char c : entries[static_cast<size_t>(e)].first) name_words.push_back(static_cast<unsigned char>(c));
        shape = describe_state(entries[static_cast<size_t>(e)].second);
      }
      bcast_ints(name_words, src);
      bcast_ints(shape, src);
      std::string name(name_words.begin(), name_words.end());
      Tensor value = src == me ? entries[static_cast<size_t>(e)].second.contiguous().clone()
                               : empty(Shape(shape.begin() + 2, shape.end()),
                                       TensorOptions().dtype(static_cast<ScalarType>(shape[0])));
      if (n > 1) broadcast(value, src);
      if (me == to) full.insert("state." + std::to_string(i) + "." + name, value);
    }
  }
  if (me == to) {
    for (const auto& [key, t] : local_sd)
      if (key.rfind("param_groups.0.", 0) == 0 && key != "param_groups.0.params") full.insert(key, t);
    Tensor idx = arange(static_cast<int64_t>(params_.size()), TensorOptions().dtype(kInt64));
    full.insert("param_groups.0.params", idx);
    consolidated_ = std::move(full);
  } else {
    consolidated_ = StateDict();
  }
  consolidated_on_ = to;
}

StateDict ZeroRedundancyOptimizerBase::state_dict() const {
  const int me = is_initialized() ? get_rank() : 0;
  GRADLAB_CHECK(consolidated_on_ == me, ValueError, "ZeroRedundancyOptimizer::state_dict",
                "the state is sharded", "consolidate_state_dict(" + std::to_string(me) + ") first",
                consolidated_on_ < 0 ? "no consolidation" : "consolidated on rank " + std::to_string(consolidated_on_),
                "every rank calls consolidate_state_dict(to); then rank `to` calls state_dict()");
  return consolidated_;
}

void ZeroRedundancyOptimizerBase::load_state_dict(const StateDict& full) {
  StateDict mine;
  for (const auto& [key, t] : full) {
    if (key.rfind("state.", 0) == 0) {
      const size_t dot = key.find('.', 6);
      const size_t i = std::stoul(key.substr(6, dot - 6));
      GRADLAB_CHECK(i < params_.size(), ValueError, "ZeroRedundancyOptimizer::load_state_dict",
                    "state of parameter " + std::to_string(i), "< " + std::to_string(params_.size()) + " parameters",
                    key, "load a state dict of the same parameters");
      if (local_index_[i] != SIZE_MAX)
        mine.insert("state." + std::to_string(local_index_[i]) + key.substr(dot), t);
    } else if (key != "param_groups.0.params") {
      mine.insert(key, t);
    }
  }
  mine.insert("param_groups.0.params",
              arange(static_cast<int64_t>(local_params_.size()), TensorOptions().dtype(kInt64)));
  local_->load_state_dict(mine);
}

}  // namespace gradlab::distributed

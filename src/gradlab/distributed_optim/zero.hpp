#pragma once
// distributed::ZeroRedundancyOptimizer (PyTorch's torch.distributed.optim.ZeroRedundancyOptimizer,
// ZeRO stage 1): the optimizer state is sharded over the ranks. Each parameter has one owner
// rank; each rank runs the wrapped optimizer over the parameters it owns only (so it holds their
// momentum / Adam moments only, about 1/N of the state), and after its step every owner
// broadcasts its updated parameters to the others.
//
//   nn::parallel::DistributedDataParallel ddp(model);               // gradients averaged
//   distributed::ZeroRedundancyOptimizer<optim::Adam> opt(ddp.parameters(), optim::AdamOptions(1e-3));
//   ... opt.zero_grad(); loss.backward(); opt.step();               // as with optim::Adam
//
// The updates are the wrapped optimizer's own, parameter by parameter: with the gradients DDP
// averaged, every rank ends with bitwise the same weights as an unsharded optimizer. Owners (as
// PyTorch): the largest parameters first, each to the rank that owns the fewest elements so far
// (ties: the lowest rank), the same on every rank. Checkpoints: consolidate_state_dict(to) gathers the shards on
// rank `to`, whose state_dict() is then the unsharded optimizer's (optim::Adam loads it);
// load_state_dict(full) on every rank takes its own shard. One parameter group.

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "gradlab/core/state_dict.hpp"
#include "gradlab/core/tensor.hpp"
#include "gradlab/optim/optimizer.hpp"

namespace gradlab::distributed {

/// The part of ZeroRedundancyOptimizer that does not depend on the wrapped optimizer's type.
class ZeroRedundancyOptimizerBase {
 public:
  virtual ~ZeroRedundancyOptimizerBase() = default;
  /// The local optimizer's step over this rank's shard, then each owner's parameters broadcast.
  void step();
  /// Clears every parameter's gradient (not only the shard's), like the unsharded optimizer.
  void zero_grad(bool set_to_none = true);
  /// The owner rank of parameter i (the order given to the constructor).
  int owner(size_t i) const { return owner_[i]; }
  /// The parameters this rank updates.
  const std::vector<Tensor>& local_parameters() const { return local_params_; }
  optim::Optimizer& local_optimizer() { return *local_; }
  /// Bytes of optimizer state this rank holds (its shard's state tensors).
  int64_t state_bytes() const;
  /// Gathers every shard's state on rank `to` (a collective: every rank calls it).
  void consolidate_state_dict(int to = 0);
  /// On the rank consolidate_state_dict gathered on: the unsharded optimizer's state dict
  /// (state.<i>.<name> over all parameters, param_groups.0.*). Elsewhere a ValueError.
  StateDict state_dict() const;
  /// Loads an unsharded state dict (from state_dict() or the wrapped optimizer's own): each
  /// rank takes its shard. Every rank calls it with the same dict.
  void load_state_dict(const StateDict& full);

 protected:
  explicit ZeroRedundancyOptimizerBase(std::vector<Tensor> params);
  std::vector<Tensor> params_, local_params_;
  std::vector<int> owner_;
  std::vector<size_t> local_index_;  // parameter i -> its index in the local optimizer
  std::unique_ptr<optim::Optimizer> local_;
  int consolidated_on_ = -1;
  StateDict consolidated_;
};

/// ZeRO-1 over optimizer `Opt` (optim::SGD, optim::Adam, ...), built from Opt's options.
template <class Opt>
class ZeroRedundancyOptimizer : public ZeroRedundancyOptimizerBase {
 public:
  template <class Options>
  ZeroRedundancyOptimizer(std::vector<Tensor> params, const Options& options)
      : ZeroRedundancyOptimizerBase(std::move(params)) {
    local_ = std::make_unique<Opt>(local_params_, options);
  }
  Opt& local() { return static_cast<Opt&>(*local_); }
};

}  // namespace gradlab::distributed

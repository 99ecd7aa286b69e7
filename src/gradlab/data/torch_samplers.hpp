#pragma once
// LibTorch's torch::data::samplers: stateful index generators that a StatelessDataLoader
// (torch_loader.hpp) resets at the start of each epoch and asks for batch_size indices at a time.
// gradlab's own samplers (sampler.hpp: data::Sampler, a pure function of seed and epoch) are a
// different family, used by data::DataLoader.
//
// Differences from LibTorch (docs/libtorch_parity.md): no save/load to serialize archives, no
// StreamSampler or CustomBatchRequest; DistributedRandomSampler's permutation comes from
// gradlab's own generator (seeded by the epoch), so its order is not LibTorch's std::mt19937
// order, but it is the same on every rank and platform.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "gradlab/core/dtype.hpp"

namespace gradlab::data::samplers {

/// The sampler interface (LibTorch's Sampler<BatchRequest>).
template <class BatchRequest = std::vector<size_t>>
class Sampler {
 public:
  using BatchRequestType = BatchRequest;
  virtual ~Sampler() = default;
  /// Starts over; with `new_size`, for a dataset of that many examples.
  virtual void reset(std::optional<size_t> new_size) = 0;
  /// The next at most `batch_size` indices; std::nullopt once the epoch is exhausted.
  virtual std::optional<BatchRequest> next(size_t batch_size) = 0;
};

/// 0, 1, ..., size-1.
class SequentialSampler : public Sampler<> {
 public:
  explicit SequentialSampler(size_t size);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  /// How many indices this epoch has handed out.
  size_t index() const noexcept { return index_; }

 private:
  size_t size_;
  size_t index_ = 0;
};

/// A new permutation of 0..size-1 at construction and at every reset(), drawn with
/// randperm(size) from gradlab's default generator (so manual_seed makes it repeatable), as
/// LibTorch draws torch::randperm.
class RandomSampler : public Sampler<> {
 public:
  /// `index_dtype` is accepted for LibTorch's signature; indices are always size_t here.
  explicit RandomSampler(int64_t size, Dtype index_dtype = kInt64);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  size_t index() const noexcept { return index_; }

 private:
  std::vector<size_t> indices_;
  size_t index_ = 0;
};

/// The base of the distributed samplers: replica `rank` of `num_replicas` takes its share of
/// the examples. With allow_duplicates every replica gets ceil(size / num_replicas) indices
/// (the last ones repeat the first examples); without, floor(size / num_replicas) (the last
/// size % num_replicas examples are left out).
template <class BatchRequest = std::vector<size_t>>
class DistributedSampler : public Sampler<BatchRequest> {
 public:
  DistributedSampler(size_t size, size_t num_replicas = 1, size_t rank = 0,
                     bool allow_duplicates = true)
      : size_(size), num_replicas_(num_replicas), rank_(rank), allow_duplicates_(allow_duplicates) {}
  /// The epoch the next reset() shuffles for (every rank must set the same one).
  void set_epoch(size_t epoch) { epoch_ = epoch; }
  size_t epoch() const { return epoch_; }

 protected:
  /// Indices per replica.
  size_t local_sample_count() const {
    return allow_duplicates_ ? (size_ + num_replicas_ - 1) / num_replicas_ : size_ / num_replicas_;
  }
  size_t size_;
  size_t num_replicas_;
  size_t rank_;
  size_t epoch_ = 0;
  bool allow_duplicates_;
};

/// Shuffles all examples with a permutation determined by the epoch alone (the same on every
/// rank), then hands out this rank's contiguous share of it. Throws ValueError for
/// num_replicas == 0 or rank >= num_replicas.
class DistributedRandomSampler : public DistributedSampler<> {
 public:
  DistributedRandomSampler(size_t size, size_t num_replicas = 1, size_t rank = 0,
                           bool allow_duplicates = true);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  /// Indices handed out this epoch.
  size_t index() const noexcept { return sample_index_ - begin_index_; }

 private:
  void populate_indices();
  size_t begin_index_ = 0, end_index_ = 0, sample_index_ = 0;
  std::vector<size_t> all_indices_;
};

/// Rank r takes the consecutive indices [r * n, (r + 1) * n) with n = local_sample_count(),
/// wrapped modulo size where duplicates pad the last replica.
class DistributedSequentialSampler : public DistributedSampler<> {
 public:
  DistributedSequentialSampler(size_t size, size_t num_replicas = 1, size_t rank = 0,
                               bool allow_duplicates = true);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  size_t index() const noexcept { return sample_index_ - begin_index_; }

 private:
  void populate_indices();
  size_t begin_index_ = 0, end_index_ = 0, sample_index_ = 0;
};

}  // namespace gradlab::data::samplers

#pragma once
// Samplers decide which sample indices an epoch visits, in which order
// (torch.utils.data.{SequentialSampler, RandomSampler, DistributedSampler}).
// A sampler is a pure function of (dataset size, seed, epoch): no hidden state, so a DataLoader
// restored from a checkpoint gets the same order back.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gradlab::data {

/// The indices of one epoch.
class Sampler {
 public:
  virtual ~Sampler() = default;
  /// Indices (each in [0, dataset_size)) for epoch `epoch` of a loader seeded with `seed`.
  virtual std::vector<int64_t> indices(size_t dataset_size, uint64_t seed,
                                       uint64_t epoch) const = 0;
};

/// 0, 1, ..., n-1.
class SequentialSampler : public Sampler {
 public:
  std::vector<int64_t> indices(size_t dataset_size, uint64_t seed, uint64_t epoch) const override;
};

/// A new permutation every epoch, from derive_seed(seed, epoch).
class RandomSampler : public Sampler {
 public:
  std::vector<int64_t> indices(size_t dataset_size, uint64_t seed, uint64_t epoch) const override;
};

/// This rank's share of the dataset for data-parallel training, as PyTorch's
/// DistributedSampler: every rank draws the same (seeded, per-epoch) permutation, then without
/// drop_last pads it by repeating its first indices up to a multiple of world_size, with
/// drop_last cuts it down to one; rank r takes positions r, r + world_size, ...
/// Every rank gets the same number of samples, so ranks step together.
class DistributedSampler : public Sampler {
 public:
  DistributedSampler(int64_t rank, int64_t world_size, bool shuffle = true, bool drop_last = false);
  std::vector<int64_t> indices(size_t dataset_size, uint64_t seed, uint64_t epoch) const override;
  /// Samples per rank for a dataset of `dataset_size`.
  size_t num_samples(size_t dataset_size) const;
  int64_t rank() const { return rank_; }
  int64_t world_size() const { return world_size_; }

 private:
  int64_t rank_, world_size_;
  bool shuffle_, drop_last_;
};

/// A permutation of 0..n-1 from `gen_seed` (Fisher-Yates on gradlab's own randint: the same on
/// every platform).
std::vector<int64_t> seeded_permutation(size_t n, uint64_t gen_seed);

}  // namespace gradlab::data

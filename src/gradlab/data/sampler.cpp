#include "gradlab/data/sampler.hpp"

#include <numeric>
#include <string>

#include "gradlab/core/error.hpp"
#include "gradlab/core/generator.hpp"

namespace gradlab::data {

namespace {
// Salt separating the sampler's stream from the per-sample streams derive_seed(seed, epoch, i).
constexpr uint64_t kSamplerSalt = 0x5a4d504c45520000ULL;  // "SAMPLER"
}  // namespace

std::vector<int64_t> seeded_permutation(size_t n, uint64_t gen_seed) {
  std::vector<int64_t> p(n);
  std::iota(p.begin(), p.end(), 0);
  Generator gen(gen_seed);
  for (size_t i = n; i > 1; --i)
    std::swap(p[i - 1], p[static_cast<size_t>(gen.randint(0, static_cast<int64_t>(i)))]);
  return p;
}

std::vector<int64_t> SequentialSampler::indices(size_t n, uint64_t, uint64_t) const {
  std::vector<int64_t> p(n);
  std::iota(p.begin(), p.end(), 0);
  return p;
}

std::vector<int64_t> RandomSampler::indices(size_t n, uint64_t seed, uint64_t epoch) const {
  return seeded_permutation(n, derive_seed(seed, epoch, kSamplerSalt));
}

DistributedSampler::DistributedSampler(int64_t rank, int64_t world_size, bool shuffle,
                                       bool drop_last)
    : rank_(rank), world_size_(world_size), shuffle_(shuffle), drop_last_(drop_last) {
  GRADLAB_CHECK(world_size >= 1, ValueError, "DistributedSampler", "world_size must be >= 1",
                "world_size >= 1", std::to_string(world_size));
  GRADLAB_CHECK(rank >= 0 && rank < world_size, ValueError, "DistributedSampler", "invalid rank",
                "0 <= rank < " + std::to_string(world_size), std::to_string(rank));
}

size_t DistributedSampler::num_samples(size_t n) const {
  const auto w = static_cast<size_t>(world_size_);
  // PyTorch: drop_last and n % w != 0 -> ceil((n - w) / w), i.e. floor(n / w); else ceil(n / w).
  if (drop_last_ && n % w != 0) return n / w;
  return (n + w - 1) / w;
}

std::vector<int64_t> DistributedSampler::indices(size_t n, uint64_t seed, uint64_t epoch) const {
  std::vector<int64_t> all = shuffle_
                                 ? seeded_permutation(n, derive_seed(seed, epoch, kSamplerSalt))
                                 : SequentialSampler().indices(n, seed, epoch);
  const size_t per_rank = num_samples(n);
  const size_t total = per_rank * static_cast<size_t>(world_size_);
  if (all.size() < total) {
    // Pad by repeating from the start (more than once when n < world_size), as PyTorch does.
    const size_t original = all.size();
    for (size_t i = 0; all.size() < total && original > 0; ++i) all.push_back(all[i % original]);
  } else {
    all.resize(total);
  }
  std::vector<int64_t> mine;
  mine.reserve(per_rank);
  for (size_t i = static_cast<size_t>(rank_); i < total; i += static_cast<size_t>(world_size_))
    mine.push_back(all[i]);
  return mine;
}

}  // namespace gradlab::data

// DistributedSampler across real ranks: every rank's loader, gathered, covers the dataset;
// shards are disjoint (up to PyTorch's padding), every rank steps the same number of batches,
// and set_epoch reshuffles identically on every rank.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <gradlab/gradlab.hpp>
#include <map>

namespace gradlab {
namespace {

namespace dist = distributed;

// The indices this rank's loader hands out in `epoch`, in order, gathered from every rank.
std::vector<std::vector<int64_t>> shards(size_t n, bool shuffle, bool drop_last, uint64_t epoch) {
  const int w = dist::get_world_size(), r = dist::get_rank();
  Tensor x = arange(static_cast<int64_t>(n), TensorOptions().dtype(kFloat64)).reshape({static_cast<int64_t>(n), 1});
  data::DataLoader loader(data::TensorDataset(x, x),
                          data::DataLoaderOptions(4).seed(42).sampler(
                              std::make_shared<data::DistributedSampler>(r, w, shuffle, drop_last)));
  loader.set_epoch(epoch);
  std::vector<int64_t> mine;
  for (data::Batch& b : loader) {
    mine.insert(mine.end(), b.indices.begin(), b.indices.end());
    // the batch holds the rows it claims
    for (size_t i = 0; i < b.indices.size(); ++i)
      EXPECT_EQ(b.data.to_vector<double>()[i], static_cast<double>(b.indices[i]));
  }
  Tensor t = empty({static_cast<int64_t>(mine.size())}, TensorOptions().dtype(kInt64));
  std::copy(mine.begin(), mine.end(), t.data_ptr<int64_t>());
  std::vector<Tensor> all(static_cast<size_t>(w));
  dist::all_gather(all, t);  // same size everywhere: the sampler pads or drops to make it so
  std::vector<std::vector<int64_t>> out;
  for (const Tensor& a : all) out.push_back(a.to_vector<int64_t>());
  return out;
}

std::map<int64_t, int> counts(const std::vector<std::vector<int64_t>>& s) {
  std::map<int64_t, int> c;
  for (const auto& v : s)
    for (int64_t i : v) ++c[i];
  return c;
}

TEST(DistributedSamplerRanks, DivisibleDatasetIsSplitDisjointAndComplete) {
  const size_t n = 20 * static_cast<size_t>(dist::get_world_size());
  for (bool shuffle : {false, true}) {
    auto s = shards(n, shuffle, false, 0);
    auto c = counts(s);
    EXPECT_EQ(c.size(), n) << "complete";
    for (auto [i, k] : c) EXPECT_EQ(k, 1) << "index " << i << " on two ranks";
    for (auto [i, k] : c) EXPECT_TRUE(i >= 0 && i < static_cast<int64_t>(n));
  }
}

TEST(DistributedSamplerRanks, PaddingRepeatsOnlyTheFirstIndicesOfThePermutation) {
  const int w = dist::get_world_size();
  const size_t n = 10 * static_cast<size_t>(w) + 1;  // w - 1 indices of padding
  auto s = shards(n, true, false, 3);
  auto c = counts(s);
  EXPECT_EQ(c.size(), n) << "every index is visited";
  int twice = 0;
  for (auto [i, k] : c) {
    EXPECT_LE(k, 2);
    twice += k == 2;
  }
  EXPECT_EQ(twice, w - 1);
  for (const auto& v : s) EXPECT_EQ(v.size(), s[0].size()) << "ranks step together";
}

TEST(DistributedSamplerRanks, DropLastCutsTheTailAndStaysDisjoint) {
  const int w = dist::get_world_size();
  const size_t n = 10 * static_cast<size_t>(w) + 1;
  auto s = shards(n, true, true, 3);
  auto c = counts(s);
  EXPECT_EQ(c.size(), 10u * static_cast<size_t>(w)) << "exactly n - n % w indices";
  for (auto [i, k] : c) EXPECT_EQ(k, 1);
}

TEST(DistributedSamplerRanks, SetEpochReshufflesTheSameWayOnEveryRank) {
  const size_t n = 16 * static_cast<size_t>(dist::get_world_size());
  auto e0 = shards(n, true, false, 0), e0again = shards(n, true, false, 0), e1 = shards(n, true, false, 1);
  EXPECT_EQ(e0, e0again) << "a pure function of (seed, epoch)";
  EXPECT_NE(e0, e1) << "set_epoch changes the order";
  EXPECT_EQ(counts(e1).size(), n) << "and each epoch is still disjoint and complete";
}

}  // namespace
}  // namespace gradlab

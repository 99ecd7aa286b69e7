// Samplers: sequential, random, distributed (PyTorch's DistributedSampler padding and drop_last).

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "gradlab/data/data.hpp"
#include "gradlab/ops/ops.hpp"

namespace gl = gradlab;
namespace data = gradlab::data;
using V = std::vector<int64_t>;

TEST(Sampler, SequentialAndRandom) {
  EXPECT_EQ(data::SequentialSampler().indices(4, 1, 2), (V{0, 1, 2, 3}));
  data::RandomSampler r;
  V a = r.indices(100, 5, 0), b = r.indices(100, 5, 0), c = r.indices(100, 5, 1);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::sort(c.begin(), c.end());
  EXPECT_EQ(c, data::SequentialSampler().indices(100, 0, 0));
}

TEST(DistributedSampler, PadsLikePyTorchWithoutShuffle) {
  // PyTorch: DistributedSampler(range(10), num_replicas=3, rank=r, shuffle=False)
  EXPECT_EQ(data::DistributedSampler(0, 3, false).indices(10, 0, 0), (V{0, 3, 6, 9}));
  EXPECT_EQ(data::DistributedSampler(1, 3, false).indices(10, 0, 0), (V{1, 4, 7, 0}));
  EXPECT_EQ(data::DistributedSampler(2, 3, false).indices(10, 0, 0), (V{2, 5, 8, 1}));
  // drop_last=True
  EXPECT_EQ(data::DistributedSampler(0, 3, false, true).indices(10, 0, 0), (V{0, 3, 6}));
  EXPECT_EQ(data::DistributedSampler(2, 3, false, true).indices(10, 0, 0), (V{2, 5, 8}));
  // Fewer samples than ranks: the padding repeats the data more than once.
  EXPECT_EQ(data::DistributedSampler(4, 5, false).indices(2, 0, 0), (V{0}));
  EXPECT_EQ(data::DistributedSampler(3, 5, false).indices(2, 0, 0), (V{1}));
}

TEST(DistributedSampler, RanksPartitionTheShuffledData) {
  for (size_t n : {12u, 13u, 17u, 100u}) {
    for (int64_t world : {1, 2, 3, 4}) {
      for (bool drop : {false, true}) {
        std::vector<int64_t> all;
        size_t per_rank = 0;
        for (int64_t r = 0; r < world; ++r) {
          data::DistributedSampler s(r, world, true, drop);
          V mine = s.indices(n, 11, 3);
          if (r == 0) per_rank = mine.size();
          EXPECT_EQ(mine.size(), per_rank) << "every rank gets the same count";
          EXPECT_EQ(mine.size(), s.num_samples(n));
          all.insert(all.end(), mine.begin(), mine.end());
        }
        std::set<int64_t> distinct(all.begin(), all.end());
        const size_t w = static_cast<size_t>(world);
        if (drop) {
          EXPECT_EQ(all.size(), n / w * w);
          EXPECT_EQ(distinct.size(), all.size()) << "drop_last: no sample twice";
        } else {
          EXPECT_EQ(all.size(), (n + w - 1) / w * w);
          EXPECT_EQ(distinct.size(), n) << "every sample is seen";
        }
      }
    }
  }
}

TEST(DistributedSampler, SameSeedSameSplitNewEpochNewSplit) {
  data::DistributedSampler s(1, 4);
  EXPECT_EQ(s.indices(50, 9, 0), s.indices(50, 9, 0));
  EXPECT_NE(s.indices(50, 9, 0), s.indices(50, 9, 1));
  EXPECT_THROW(data::DistributedSampler(4, 4), gl::ValueError);
  EXPECT_THROW(data::DistributedSampler(0, 0), gl::ValueError);
}

TEST(DistributedSampler, DrivesADataLoaderPerRank) {
  gl::Tensor x = gl::arange(0, 10, 1, gl::dtype(gl::kFloat32)).reshape({10, 1});
  auto ds = std::make_shared<data::TensorDataset>(x, gl::Tensor());
  std::vector<int64_t> seen;
  for (int64_t r = 0; r < 2; ++r) {
    data::DataLoader loader(ds, data::DataLoaderOptions(2).seed(4).num_workers(1).sampler(
                                    std::make_shared<data::DistributedSampler>(r, 2)));
    EXPECT_EQ(loader.size(), 3u);
    for (auto& b : loader) seen.insert(seen.end(), b.indices.begin(), b.indices.end());
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (V{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

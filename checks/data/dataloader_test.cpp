// DataLoader: determinism across worker counts and runs, drop_last, epochs, errors, resume.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "gradlab/data/data.hpp"
#include "gradlab/ops/ops.hpp"

namespace gl = gradlab;
namespace data = gradlab::data;
namespace tf = gradlab::data::transforms;

namespace {

// n "images" [1, 4, 4] whose pixels encode their index; labels i % 3.
std::shared_ptr<data::TensorDataset> small_images(int64_t n = 50) {
  gl::Tensor x = gl::arange(0, n * 16, 1, gl::dtype(gl::kFloat32)).reshape({n, 1, 4, 4}) / 100.0;
  std::vector<int64_t> y;
  for (int64_t i = 0; i < n; ++i) y.push_back(i % 3);
  return std::make_shared<data::TensorDataset>(x, gl::from_vector(y, {n}));
}

// The same images with random augmentations, so every sample draws from its own stream.
std::shared_ptr<data::Dataset> augmented(int64_t n = 50) {
  return data::map(small_images(n),
                   tf::compose({tf::random_shift(1), tf::random_noise(0.1), tf::flatten()}));
}

std::vector<data::Batch> epochs(data::DataLoader& loader, int count) {
  std::vector<data::Batch> out;
  for (int e = 0; e < count; ++e)
    for (auto& b : loader) out.push_back(b);
  return out;
}

void expect_same(const std::vector<data::Batch>& a, const std::vector<data::Batch>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].indices, b[i].indices) << "batch " << i;
    EXPECT_TRUE(gl::equal(a[i].data, b[i].data)) << "batch " << i;  // bit for bit
    EXPECT_TRUE(gl::equal(a[i].target, b[i].target)) << "batch " << i;
  }
}

// Throws from get(bad) (after a short delay so other workers are busy).
struct Faulty : data::Dataset {
  explicit Faulty(size_t bad) : bad_(bad) {}
  data::Example<> get(size_t i) override {
    if (i == bad_) throw gl::ValueError("corrupt record");
    return {gl::full({2}, static_cast<double>(i)), gl::tensor(static_cast<int64_t>(i))};
  }
  size_t size() const override { return 40; }
  size_t bad_;
};

}  // namespace

TEST(DataLoader, BatchesIdenticalForEveryWorkerCount) {
  auto ds = augmented();
  std::vector<data::Batch> reference;
  for (size_t workers : {0, 1, 2, 4}) {
    data::DataLoader loader(ds,
                            data::DataLoaderOptions(8).shuffle(true).seed(7).num_workers(workers));
    auto got = epochs(loader, 3);
    ASSERT_EQ(got.size(), 3u * 7u) << "50 samples in batches of 8: 7 per epoch";
    if (reference.empty())
      reference = got;
    else
      expect_same(reference, got);
  }
}

TEST(DataLoader, SameSeedSameBatchesAcrossRunsOtherSeedOtherOrder) {
  auto run = [](uint64_t seed) {
    data::DataLoader loader(augmented(),
                            data::DataLoaderOptions(8).shuffle(true).seed(seed).num_workers(2));
    return epochs(loader, 2);
  };
  auto a = run(123), b = run(123), c = run(124);
  expect_same(a, b);
  EXPECT_NE(a[0].indices, c[0].indices);
}

TEST(DataLoader, UnsetSeedComesFromTheDefaultGenerator) {
  gl::manual_seed(99);
  data::DataLoader a(augmented(), data::DataLoaderOptions(8).shuffle(true));
  gl::manual_seed(99);
  data::DataLoader b(augmented(), data::DataLoaderOptions(8).shuffle(true));
  EXPECT_EQ(a.seed(), b.seed());
  expect_same(epochs(a, 1), epochs(b, 1));
}

TEST(DataLoader, DropLast) {
  auto ds = small_images(10);
  data::DataLoader keep(ds, data::DataLoaderOptions(4));
  data::DataLoader drop(ds, data::DataLoaderOptions(4).drop_last(true));
  std::vector<int64_t> sizes_keep, sizes_drop;
  for (auto& b : keep) sizes_keep.push_back(b.size());
  for (auto& b : drop) sizes_drop.push_back(b.size());
  EXPECT_EQ(sizes_keep, (std::vector<int64_t>{4, 4, 2}));
  EXPECT_EQ(sizes_drop, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(keep.size(), 3u);
  EXPECT_EQ(drop.size(), 2u);
}

TEST(DataLoader, ShuffleVisitsEachSampleOncePerEpochInANewOrder) {
  data::DataLoader loader(small_images(),
                          data::DataLoaderOptions(5).shuffle(true).seed(1).num_workers(2));
  std::vector<std::vector<int64_t>> orders;
  for (int e = 0; e < 3; ++e) {
    std::vector<int64_t> order;
    for (auto& b : loader) {
      order.insert(order.end(), b.indices.begin(), b.indices.end());
      // The batch holds exactly those samples: pixel 0 of image i is 16 i / 100.
      for (int64_t k = 0; k < b.size(); ++k)
        EXPECT_FLOAT_EQ(b.data[k].flatten()[0].item<float>(), 16.0f * b.indices[k] / 100.0f);
    }
    std::vector<int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < 50; ++i) ASSERT_EQ(sorted[i], i);
    orders.push_back(order);
  }
  EXPECT_EQ(loader.epoch(), 3u);
  EXPECT_NE(orders[0], orders[1]);
  EXPECT_NE(orders[1], orders[2]);
}

TEST(DataLoader, SequentialWithoutShuffleAndStackedTargets) {
  data::DataLoader loader(small_images(7), data::DataLoaderOptions(3));
  std::vector<std::vector<int64_t>> idx;
  for (auto& b : loader) {
    idx.push_back(b.indices);
    EXPECT_EQ(b.data.sizes(), (gl::Shape{b.size(), 1, 4, 4}));
    EXPECT_EQ(b.target.sizes(), (gl::Shape{b.size()}));
    EXPECT_EQ(b.target.dtype(), gl::kInt64);
  }
  EXPECT_EQ(idx, (std::vector<std::vector<int64_t>>{{0, 1, 2}, {3, 4, 5}, {6}}));
}

TEST(DataLoader, WorkerErrorSurfacesInCallerWithSampleIndex) {
  for (size_t workers : {0, 1, 2, 4}) {
    data::DataLoader loader(std::make_shared<Faulty>(13),
                            data::DataLoaderOptions(4).num_workers(workers));
    std::vector<int64_t> seen;
    try {
      for (auto& b : loader) seen.insert(seen.end(), b.indices.begin(), b.indices.end());
      FAIL() << "no error with " << workers << " workers";
    } catch (const data::SampleError& e) {
      EXPECT_EQ(e.index(), 13);
      const std::string msg = e.what();
      EXPECT_NE(msg.find("sample 13"), std::string::npos) << msg;
      EXPECT_NE(msg.find("corrupt record"), std::string::npos) << msg;
      EXPECT_NE(msg.find(workers == 0 ? "main thread" : "worker"), std::string::npos) << msg;
      EXPECT_NE(msg.find("batch 3"), std::string::npos) << msg;
      // The original exception is kept.
      EXPECT_THROW(std::rethrow_exception(e.cause()), gl::ValueError);
    }
    // Batches before the failing one arrived, in order; the state points at the failed batch.
    EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})) << workers;
    EXPECT_EQ(loader.state().position, 3u);
  }
}

TEST(DataLoader, StateRestoreContinuesWithIdenticalBatches) {
  auto opts = [](size_t w) {
    return data::DataLoaderOptions(8).shuffle(true).seed(42).num_workers(w);
  };
  // Uninterrupted: 3 epochs.
  data::DataLoader full(augmented(), opts(2));
  auto all = epochs(full, 3);

  // Interrupted: epoch 0, then 3 batches of epoch 1, then save the state.
  data::DataLoader first(augmented(), opts(4));
  std::vector<data::Batch> got = epochs(first, 1);
  int k = 0;
  for (auto& b : first) {
    got.push_back(b);
    if (++k == 3) break;
  }
  data::LoaderState s = first.state();
  EXPECT_EQ(s.seed, 42u);
  EXPECT_EQ(s.epoch, 1u);
  EXPECT_EQ(s.position, 3u);

  // A fresh loader (other worker count) restored from the state continues the same batches.
  data::DataLoader resumed(augmented(), opts(0).seed(5));
  resumed.load_state(s);
  for (auto& b : resumed) got.push_back(b);
  for (auto& b : resumed) got.push_back(b);
  expect_same(all, got);
}

TEST(DataLoader, BreakThenBeginContinuesTheSameEpoch) {
  data::DataLoader a(small_images(), data::DataLoaderOptions(10).shuffle(true).seed(3));
  data::DataLoader b(small_images(),
                     data::DataLoaderOptions(10).shuffle(true).seed(3).num_workers(2));
  auto all = epochs(a, 1);
  std::vector<data::Batch> parts;
  for (auto& x : b) {
    parts.push_back(x);
    break;
  }
  for (auto& x : b) parts.push_back(x);
  expect_same(all, parts);
  EXPECT_EQ(b.epoch(), 1u);
}

TEST(DataLoader, StateSavedAfterLastBatchStartsNextEpoch) {
  data::DataLoader a(small_images(20), data::DataLoaderOptions(10).shuffle(true).seed(3));
  auto all = epochs(a, 2);
  data::DataLoader b(small_images(20), data::DataLoaderOptions(10).shuffle(true).seed(3));
  data::LoaderState s{3, 0, 2};  // both batches of epoch 0 consumed, loop not yet ended
  b.load_state(s);
  auto rest = epochs(b, 1);
  expect_same(std::vector<data::Batch>(all.begin() + 2, all.end()), rest);
  EXPECT_THROW(b.load_state({3, 0, 3}), gl::ValueError);
}

TEST(DataLoader, PrefetchIsBounded) {
  struct Counting : data::Dataset {
    data::Example<> get(size_t i) override {
      int64_t prev = max_index.load();
      while (static_cast<int64_t>(i) > prev &&
             !max_index.compare_exchange_weak(prev, static_cast<int64_t>(i))) {
      }
      return {gl::full({1}, 1.0), gl::Tensor()};
    }
    size_t size() const override { return 100; }
    std::atomic<int64_t> max_index{-1};
  };
  auto ds = std::make_shared<Counting>();
  data::DataLoader loader(ds, data::DataLoaderOptions(1).num_workers(2).prefetch_factor(2));
  auto it = loader.begin();  // batch 0 taken by the caller
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // Workers may run at most prefetch_factor * num_workers = 4 batches ahead of the caller.
  EXPECT_LE(ds->max_index.load(), 4);
  EXPECT_GE(ds->max_index.load(), 0);
  EXPECT_FALSE(it->target.defined());  // targets may be absent in every sample
}

TEST(DataLoader, CollateReceivesSamplesAndErrorsAreReported) {
  auto ds = small_images(6);
  data::DataLoader loader(ds,
                          data::DataLoaderOptions(3).collate([](std::vector<data::Example<>>& s) {
                            data::Batch b;
                            b.data = gl::cat({s[0].data.flatten(), s.back().data.flatten()});
                            return b;
                          }));
  for (auto& b : loader) {
    EXPECT_EQ(b.data.sizes(), (gl::Shape{32}));
    EXPECT_EQ(b.size(), 3);
  }
  data::DataLoader bad(ds, data::DataLoaderOptions(3).num_workers(1).collate(
                               [](std::vector<data::Example<>>&) -> data::Batch {
                                 throw std::runtime_error("boom");
                               }));
  try {
    for (auto& b : bad) (void)b;
    FAIL();
  } catch (const data::SampleError& e) {
    EXPECT_EQ(e.index(), -1);
    EXPECT_NE(std::string(e.what()).find("collate failed"), std::string::npos);
  }
}

TEST(DataLoader, RejectsBadOptions) {
  EXPECT_THROW(data::DataLoader(small_images(), data::DataLoaderOptions(0)), gl::ValueError);
  EXPECT_THROW(data::DataLoader(std::shared_ptr<data::Dataset>(), data::DataLoaderOptions(1)),
               gl::ValueError);
}

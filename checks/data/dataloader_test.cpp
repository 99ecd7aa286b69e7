// DataLoader: determinism across worker counts and runs, drop_last, epochs, errors, resume.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
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

// ---- batched fetching (Dataset::get_batch) against the per-sample path ----------------------

namespace {

// Another dataset's samples without its get_batch: the loader fetches and collates per sample.
struct PerSampleOnly : data::Dataset {
  explicit PerSampleOnly(std::shared_ptr<data::Dataset> d) : d_(std::move(d)) {}
  data::Example<> get(size_t i) override { return d_->get(i); }
  size_t size() const override { return d_->size(); }
  std::shared_ptr<data::Dataset> d_;
};

// A TensorDataset that counts its get_batch calls (from any worker thread).
struct CountingTensorDataset : data::TensorDataset {
  using data::TensorDataset::TensorDataset;
  std::optional<data::Batch> get_batch(const std::vector<int64_t>& idx) override {
    ++calls;
    return data::TensorDataset::get_batch(idx);
  }
  std::atomic<int> calls{0};
};

// Same indices and order, bit-identical data and targets, and the same shape, dtype and layout.
void expect_identical(const std::vector<data::Batch>& a, const std::vector<data::Batch>& b,
                      const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].indices, b[i].indices) << what << ", batch " << i;
    for (auto [x, y] : {std::pair{a[i].data, b[i].data}, std::pair{a[i].target, b[i].target}}) {
      ASSERT_EQ(x.defined(), y.defined()) << what << ", batch " << i;
      if (!x.defined()) continue;
      EXPECT_EQ(x.sizes(), y.sizes()) << what << ", batch " << i;
      EXPECT_EQ(x.dtype(), y.dtype()) << what << ", batch " << i;
      EXPECT_EQ(x.strides(), y.strides()) << what << ", batch " << i;
      EXPECT_FALSE(x.requires_grad() || y.requires_grad()) << what << ", batch " << i;
      EXPECT_TRUE(gl::equal(x, y)) << what << ", batch " << i;  // bit for bit
    }
  }
}

}  // namespace

TEST(DataLoader, BatchedFetchGivesTheSameBatchesAsPerSample) {
  // 23 samples: batches of 5 leave a short last batch, so drop_last changes the epoch.
  const int64_t n = 23;
  gl::Tensor x = gl::arange(0, n * 6, 1, gl::dtype(gl::kFloat64)).reshape({n, 2, 3}) / 7.0;
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < n; ++i) labels.push_back((i * 5) % 4);
  gl::Tensor y = gl::from_vector(labels, {n});
  for (bool labelled : {true, false}) {
    auto batched = std::make_shared<CountingTensorDataset>(x, labelled ? y : gl::Tensor());
    auto per_sample = std::make_shared<PerSampleOnly>(batched);
    for (bool shuffle : {false, true})
      for (bool drop_last : {false, true})
        for (size_t workers : {0, 1, 3}) {
          auto options = [&] {
            return data::DataLoaderOptions(5).shuffle(shuffle).drop_last(drop_last).seed(11).num_workers(
                workers);
          };
          const std::string what = std::string(labelled ? "labelled" : "unlabelled") +
                                   ", shuffle " + (shuffle ? "on" : "off") + ", drop_last " +
                                   (drop_last ? "on" : "off") + ", " + std::to_string(workers) +
                                   " workers";
          batched->calls = 0;
          data::DataLoader a(batched, options()), b(per_sample, options());
          auto got_a = epochs(a, 2), got_b = epochs(b, 2);
          ASSERT_EQ(got_a.size(), drop_last ? 8u : 10u) << what;
          EXPECT_EQ(got_a.back().size(), drop_last ? 5 : 3) << what;
          // Every batch of the batched loader came from get_batch, none from the per-sample one.
          EXPECT_EQ(batched->calls.load(), static_cast<int>(got_a.size())) << what;
          expect_identical(got_a, got_b, what);
        }
  }
}

TEST(DataLoader, SubsetOfATensorDatasetFetchesBatchedWithItsOwnIndices) {
  auto base = std::make_shared<CountingTensorDataset>(
      gl::arange(0, 40, 1, gl::dtype(gl::kFloat32)).reshape({20, 2}), gl::arange(0, 20, 1).to(gl::kInt64));
  auto subset = data::random_split(base, {12, 8}, 3)[0];
  data::DataLoader a(subset, data::DataLoaderOptions(5).shuffle(true).seed(2).num_workers(2));
  data::DataLoader b(std::make_shared<PerSampleOnly>(subset),
                     data::DataLoaderOptions(5).shuffle(true).seed(2).num_workers(2));
  auto got_a = epochs(a, 2);
  EXPECT_EQ(base->calls.load(), 6);  // 12 samples in batches of 5: 3 per epoch
  expect_identical(got_a, epochs(b, 2), "subset");
  for (auto& batch : got_a)
    for (int64_t i : batch.indices) EXPECT_LT(i, 12) << "indices are the Subset's, not the base's";
  std::optional<data::Batch> direct = subset->get_batch({3, 0});
  ASSERT_TRUE(direct.has_value());
  EXPECT_EQ(direct->indices, (std::vector<int64_t>{3, 0}));
  EXPECT_TRUE(gl::equal(direct->data, gl::stack({subset->get(3).data, subset->get(0).data})));
  EXPECT_THROW(subset->get_batch({12}), gl::ShapeError);
}

TEST(DataLoader, CustomCollateAlwaysFetchesPerSample) {
  auto ds = std::make_shared<CountingTensorDataset>(gl::ones({6, 2}), gl::Tensor());
  int collated = 0;
  data::DataLoader loader(ds, data::DataLoaderOptions(3).collate([&](std::vector<data::Example<>>& s) {
    ++collated;
    return data::stack_collate(s);
  }));
  for (auto& b : loader) (void)b;
  EXPECT_EQ(collated, 2);
  EXPECT_EQ(ds->calls.load(), 0);
}

TEST(DataLoader, FailingGetBatchFallsBackToNameTheSample) {
  // get_batch throws; get(7) throws too: the error names sample 7, as the per-sample path does.
  struct Broken : data::TensorDataset {
    using data::TensorDataset::TensorDataset;
    data::Example<> get(size_t i) override {
      if (i == 7) throw gl::ValueError("bad row 7");
      return data::TensorDataset::get(i);
    }
    std::optional<data::Batch> get_batch(const std::vector<int64_t>& idx) override {
      if (std::find(idx.begin(), idx.end(), 7) != idx.end()) throw gl::ValueError("bad batch");
      return data::TensorDataset::get_batch(idx);
    }
  };
  // Only get_batch throws: the error says so (index -1) and keeps the original exception.
  struct BrokenBatch : data::TensorDataset {
    using data::TensorDataset::TensorDataset;
    std::optional<data::Batch> get_batch(const std::vector<int64_t>&) override {
      throw gl::ValueError("bad batch");
    }
  };
  for (size_t workers : {0, 2}) {
    data::DataLoader a(std::make_shared<Broken>(gl::zeros({10, 2}), gl::Tensor()),
                       data::DataLoaderOptions(4).num_workers(workers));
    std::vector<int64_t> seen;
    try {
      for (auto& b : a) seen.insert(seen.end(), b.indices.begin(), b.indices.end());
      FAIL() << "no error";
    } catch (const data::SampleError& e) {
      EXPECT_EQ(e.index(), 7);
      EXPECT_NE(std::string(e.what()).find("bad row 7"), std::string::npos) << e.what();
    }
    EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3}));
    data::DataLoader b(std::make_shared<BrokenBatch>(gl::zeros({10, 2}), gl::Tensor()),
                       data::DataLoaderOptions(4).num_workers(workers));
    try {
      for (auto& batch : b) (void)batch;
      FAIL() << "no error";
    } catch (const data::SampleError& e) {
      EXPECT_EQ(e.index(), -1);
      EXPECT_NE(std::string(e.what()).find("get_batch failed"), std::string::npos) << e.what();
      EXPECT_THROW(std::rethrow_exception(e.cause()), gl::ValueError);
    }
  }
}

TEST(StackCollate, FastPathEqualsStackAndOtherCasesStillGoThroughStack) {
  auto collate = [](std::vector<gl::Tensor> xs) {
    std::vector<data::Example<>> s;
    for (auto& x : xs) s.push_back({x, gl::Tensor()});
    return data::stack_collate(s).data;
  };
  gl::Tensor m = gl::arange(0, 24, 1, gl::dtype(gl::kFloat32)).reshape({4, 3, 2});
  // contiguous rows of one dtype: the preallocated copy, equal to stack()
  gl::Tensor fast = collate({m[0], m[2], m[1], m[2]});
  EXPECT_TRUE(gl::equal(fast, gl::stack({m[0], m[2], m[1], m[2]})));
  EXPECT_EQ(fast.sizes(), (gl::Shape{4, 3, 2}));
  EXPECT_TRUE(fast.is_contiguous());
  EXPECT_FALSE(fast.is_same_storage(m));  // a copy, never a view of a sample
  EXPECT_EQ(collate({gl::zeros({0, 2}), gl::zeros({0, 2})}).sizes(), (gl::Shape{2, 0, 2}));
  gl::Tensor i64 = collate({gl::tensor(int64_t{3}), gl::tensor(int64_t{-1})});
  EXPECT_EQ(i64.to_vector<int64_t>(), (std::vector<int64_t>{3, -1}));
  // non-contiguous samples, mixed dtypes (promotion), shape mismatch: stack()'s rules
  gl::Tensor t = m[1].transpose(0, 1);
  EXPECT_TRUE(gl::equal(collate({t, t}), gl::stack({t.contiguous(), t.contiguous()})));
  gl::Tensor mixed = collate({gl::ones({2}), gl::ones({2}, gl::dtype(gl::kFloat64))});
  EXPECT_EQ(mixed.dtype(), gl::kFloat64);
  EXPECT_THROW(collate({gl::ones({2}), gl::ones({3})}), gl::ShapeError);
  // a sample that requires grad, with grad mode on: stack() records the graph
  gl::Tensor w = gl::ones({2}).requires_grad_();
  gl::Tensor g = collate({w, w});
  EXPECT_TRUE(g.requires_grad());
  g.sum().backward();
  EXPECT_TRUE(gl::equal(w.grad(), gl::full({2}, 2.0)));
}

// ---- threads under stress: prefetch, errors, early breaks, destruction while workers wait ----

namespace {

// Samples {full([3], i), i}; sample() throws for about one draw in 23 of the sample's own stream,
// so which samples fail depends only on (seed, epoch, index), never on the thread that loads it.
// Every seventh sample waits a little, to shuffle the workers' timing.
struct Flaky : data::Dataset {
  data::Example<> get(size_t i) override {
    return {gl::full({3}, static_cast<double>(i)), gl::tensor(static_cast<int64_t>(i))};
  }
  data::Example<> sample(size_t i, gl::Generator& gen) override {
    const uint64_t draw = gen.next_u64();
    if (draw % 23 == 0) throw gl::IOError("injected failure of sample " + std::to_string(i));
    if (draw % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(draw % 200));
    return get(i);
  }
  size_t size() const override { return 40; }
};

// What the caller saw: a batch (its indices) or a failed batch (the failing sample).
struct Event {
  uint64_t epoch = 0, position = 0;
  std::vector<int64_t> indices;
  int64_t failed = -1;
  bool operator==(const Event&) const = default;
};

// Aborts the process (with a message) when `progress` stops moving for `limit`: a deadlock
// would otherwise hang the test until ctest's timeout, without saying where.
class Watchdog {
 public:
  Watchdog(const std::atomic<int64_t>& progress, std::chrono::seconds limit)
      : thread_([this, &progress, limit] {
          std::unique_lock lock(mu_);
          int64_t last = -1;
          while (!done_) {
            if (cv_.wait_for(lock, limit, [this] { return done_; })) return;
            const int64_t now = progress.load();
            if (now == last) {
              std::fprintf(stderr, "DataLoader stress: no batch for %lld s: deadlock\n",
                           static_cast<long long>(limit.count()));
              std::abort();
            }
            last = now;
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// `epochs` short epochs of Flaky with `workers` threads. A failed batch is recorded and skipped
// (load_state past it); a random third of the passes break out early, and some of those destroy
// the loader while its workers wait on the prefetch bound, then continue in a new one from
// state(). The choices come from `seed` alone, so a correct loader sees the same events for any
// worker count.
std::vector<Event> stress(size_t workers, uint64_t epochs, uint64_t seed,
                          std::atomic<int64_t>& progress) {
  auto ds = std::make_shared<Flaky>();
  auto opts = [&] {
    return data::DataLoaderOptions(3).shuffle(true).seed(seed).num_workers(workers).prefetch_factor(
        2);
  };
  auto loader = std::make_unique<data::DataLoader>(ds, opts());
  std::mt19937_64 choose(seed);
  std::vector<Event> events;
  while (loader->epoch() < epochs) {
    const uint64_t stop_after = choose() % 3 == 0 ? choose() % 14 : 1000;
    uint64_t taken = 0;
    try {
      for (auto& b : *loader) {
        const data::LoaderState s = loader->state();
        events.push_back({s.epoch, s.position - 1, b.indices, -1});
        ++progress;
        if (++taken > stop_after) break;
      }
    } catch (const data::SampleError& e) {
      data::LoaderState s = loader->state();  // points at the failed batch
      events.push_back({s.epoch, s.position, {}, e.index()});
      ++progress;
      ++s.position;
      loader->load_state(s);
      continue;
    }
    if (taken > stop_after && choose() % 2 == 0) {
      // A new begin() would restart the workers; instead, destroy the loader while they wait.
      const data::LoaderState s = loader->state();
      try {
        auto it = loader->begin();  // workers now run ahead and block on the prefetch bound
        (void)it;
      } catch (const data::SampleError&) {
        // the first batch failed: it is taken again after the restore
      }
      loader = std::make_unique<data::DataLoader>(ds, opts());
      loader->load_state(s);
    }
  }
  return events;
}

void expect_no_batch_lost_or_duplicated(const std::vector<Event>& events, uint64_t epochs) {
  // Per epoch: positions 0, 1, 2, ... each once, in order; no sample delivered twice.
  std::map<uint64_t, std::vector<const Event*>> by_epoch;
  for (const Event& e : events) by_epoch[e.epoch].push_back(&e);
  ASSERT_EQ(by_epoch.size(), epochs);
  for (const auto& [epoch, list] : by_epoch) {
    std::set<int64_t> seen;
    size_t samples = 0;
    for (size_t k = 0; k < list.size(); ++k) {
      EXPECT_EQ(list[k]->position, k) << "epoch " << epoch;
      for (int64_t i : list[k]->indices) EXPECT_TRUE(seen.insert(i).second) << "epoch " << epoch;
      // A failed batch held 3 samples, or 1 when it was the last.
      samples += list[k]->failed < 0 ? list[k]->indices.size() : list[k]->position == 13 ? 1 : 3;
    }
    EXPECT_EQ(list.size(), 14u) << "epoch " << epoch;  // ceil(40 / 3) batches
    EXPECT_EQ(samples, 40u) << "epoch " << epoch;
  }
}

void run_stress(uint64_t epochs, size_t workers, uint64_t seed) {
  std::atomic<int64_t> progress{0};
  Watchdog watchdog(progress, std::chrono::seconds(60));
  const std::vector<Event> reference = stress(0, epochs, seed, progress);
  const std::vector<Event> threaded = stress(workers, epochs, seed, progress);
  size_t failed = 0;
  for (const Event& e : threaded) failed += e.failed >= 0;
  std::printf("[ stress ] %llu epochs, %zu workers: %zu batches, %zu injected failures\n",
              static_cast<unsigned long long>(epochs), workers, threaded.size(), failed);
  EXPECT_GT(failed, epochs / 4) << "the injected failures happened";
  expect_no_batch_lost_or_duplicated(threaded, epochs);
  EXPECT_TRUE(threaded == reference) << "the same events as without workers";
}

}  // namespace

TEST(DataLoader, DestroyedWhileWorkersWaitOrLoad) {
  struct Slow : data::Dataset {
    data::Example<> get(size_t i) override {
      ++started;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return {gl::full({1}, static_cast<double>(i)), gl::Tensor()};
    }
    size_t size() const override { return 64; }
    std::atomic<int> started{0};
  };
  auto ds = std::make_shared<Slow>();
  for (int round = 0; round < 20; ++round) {
    data::DataLoader loader(ds, data::DataLoaderOptions(1).num_workers(4).prefetch_factor(1));
    auto it = loader.begin();
    EXPECT_EQ(it->data.item<double>(), 0.0);
    // Leaves with workers blocked on the prefetch bound or inside get(): joined, no hang.
  }
  EXPECT_GE(ds->started.load(), 20);
}

TEST(DataLoader, ShortEpochsWithWorkersAndInjectedErrors) { run_stress(12, 4, 7); }

TEST(DataLoader, SlowStressManyShortEpochsEightWorkersInjectedErrors) {
  for (uint64_t seed : {1, 2, 3}) run_stress(150, 8, seed);
}

// Lesson 05 exercise answers: each TEST asserts the claim its answer in
// lessons/05_data_loading/README.md makes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <gradlab/gradlab.hpp>
#include <iostream>
#include <mutex>
#include <thread>
#include <vector>

namespace gl = gradlab;
namespace data = gradlab::data;
namespace tf = gradlab::data::transforms;

namespace {

std::shared_ptr<data::TensorDataset> digits_train() {
  static auto train = [] {
    data::TensorDataset digits = data::load_digits();
    auto split = data::train_test_split(digits, 360, /*seed=*/0);
    return std::make_shared<data::TensorDataset>(split.first);
  }();
  return train;
}

// Best samples/s of `reps` epochs with batches of 16 (the lesson's sweep).
double speed(const std::shared_ptr<data::Dataset>& ds, size_t workers, int reps = 3) {
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    data::DataLoader loader(ds,
                            data::DataLoaderOptions(16).shuffle(true).seed(5).num_workers(workers));
    const auto t0 = std::chrono::steady_clock::now();
    for (auto& b : loader) (void)b;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(ds->size()) / s);
  }
  return best;
}

// The most samples seen sleeping at the same moment (reset by the caller): a count, which unlike
// a speed does not depend on the machine or its load.
std::atomic<int> g_sleeping{0}, g_peak_sleeping{0};

std::shared_ptr<data::Dataset> sleeping(size_t n, int ms) {
  auto slow = data::map(digits_train(), tf::lambda([ms](const gl::Tensor& x) {
                          if (ms > 0) {
                            const int now = ++g_sleeping;
                            int seen = g_peak_sleeping.load();
                            while (now > seen && !g_peak_sleeping.compare_exchange_weak(seen, now)) {
                            }
                            std::this_thread::sleep_for(std::chrono::milliseconds(ms));
                            --g_sleeping;
                          }
                          return x;
                        }));
  return std::make_shared<data::Subset>(slow, data::split_indices(1437, {n, 1437 - n}, 1)[0]);
}

}  // namespace

TEST(Lesson05Answers, Exercise1NoSleepNoSpeedup) {
  auto ds = sleeping(128, 0);
  const double s0 = speed(ds, 0), s2 = speed(ds, 2), s8 = speed(ds, 8);
  std::cout << "sleep 0: 0 workers " << s0 << " samples/s, 2: " << s2 << ", 8: " << s8 << "\n";
  // NOTE: the answer's premise is that a sample costs microseconds (650,000 samples/s measured
  // in the release build). A sanitized build copies 50x slower (8,600 samples/s under ASan), and
  // then 2 workers on 2 cores do gain 2x: the claim is not about that build.
  if (s0 < 50000)
    GTEST_SKIP() << "a sample costs " << 1e6 / s0
                 << " us here (a sanitized or very slow build): the premise does not hold";
  EXPECT_LT(s2, 1.5 * s0);
  EXPECT_LT(s8, 1.5 * s0);
}

// NOTE: the sleep is 10x the measured CPU cost of a sample (at least 2 ms): on a loaded or
// sanitized machine a fixed 2 ms let CPU work decide (16 vs 8 workers measured 0.99x), and the
// claim is about waiting. Up to three rounds when a busy spell spoils one.
TEST(Lesson05Answers, Exercise2WorkersPastTheBatchCountGainNothing) {
  const double cpu_ms = 1000.0 / speed(sleeping(256, 0), 0, 2);
  const int ms = std::max(2, static_cast<int>(std::ceil(10 * cpu_ms)));
  auto big = sleeping(256, ms);   // 16 batches
  auto small = sleeping(64, ms);  // 4 batches
  // The property, counted: a worker fetches one batch at a time, so at most min(workers, batches)
  // samples wait at once; 16 workers do overlap 16 waits on 16 batches, 8 workers only 4 on 4.
  g_peak_sleeping = 0;
  const double s8 = speed(small, 8);
  const int peak_small8 = g_peak_sleeping.exchange(0);
  const double b16 = speed(big, 16, 2);
  const int peak_big16 = g_peak_sleeping.exchange(0);
  EXPECT_EQ(peak_small8, 4);  // 4 batches: 4 of the 8 workers have nothing to fetch
  EXPECT_EQ(peak_big16, 16);
  // The speed that follows, with generous margins (re-measured up to three rounds when a busy
  // spell spoils one): 16 vs 8 workers on 16 batches halves the epoch ideally (2x; asked: 1.25x,
  // the CPU part of a sample is at most 1/10 of its sleep, and a loaded 2-core machine runs it at a
  // fifth of a core's speed); 8 vs 4 workers on 4 batches gains nothing (1x; asked: < 1.3x).
  double b8 = 0, s4 = 0;
  double b16_best = b16, s8_best = s8;
  for (int round = 0; round < 3 && (round == 0 || !(b16_best > 1.25 * b8)); ++round) {
    b8 = std::max(b8, speed(big, 8, 2));
    if (round > 0) b16_best = std::max(b16_best, speed(big, 16, 2));
  }
  for (int round = 0; round < 3 && (round == 0 || !(s8_best < 1.3 * s4)); ++round) {
    s4 = std::max(s4, speed(small, 4));
    if (round > 0) s8_best = std::max(s8_best, speed(small, 8));
  }
  std::cout << "sleep " << ms << " ms (CPU " << cpu_ms << " ms a sample): ";
  std::cout << "256 samples: 16 vs 8 workers " << b16_best / b8 << "x (" << peak_big16
            << " waiting at once); 64 samples: 8 vs 4 " << s8_best / s4 << "x (" << peak_small8
            << " waiting at once)\n";
  EXPECT_GT(b16_best, 1.25 * b8);
  EXPECT_LT(s8_best, 1.3 * s4);
}

TEST(Lesson05Answers, Exercise3SharedGeneratorBreaksReproducibility) {
  auto train = digits_train();
  auto noisy_shared = [&] {
    auto gen = std::make_shared<gl::Generator>(7);
    auto mu = std::make_shared<std::mutex>();
    return data::map(train, tf::lambda([gen, mu](const gl::Tensor& x) {
                       std::this_thread::sleep_for(std::chrono::microseconds(200));
                       std::lock_guard<std::mutex> lock(*mu);  // Generator is not thread-safe
                       return x + 0.05 * gl::randn(x.sizes(), {}, gen.get());
                     }));
  };
  auto first_batch = [&](size_t workers) {
    data::DataLoader l(noisy_shared(),
                       data::DataLoaderOptions(64).shuffle(true).seed(42).num_workers(workers));
    return *l.begin();
  };
  const data::Batch a = first_batch(0), a_again = first_batch(0);
  EXPECT_TRUE(gl::equal(a.data, a_again.data));  // 0 workers: one fixed order of draws
  // NOTE: the draws interleave only while both workers run; on a loaded machine one may finish
  // its batch before the other starts, so several runs are tried (one differing is enough).
  int runs = 0;
  bool differs = false;
  while (!differs && runs < 20) {
    const data::Batch b = first_batch(2);
    ++runs;
    EXPECT_EQ(a.indices, b.indices);       // same samples...
    differs = !gl::equal(a.data, b.data);  // ...other noise: draws interleave
  }
  EXPECT_TRUE(differs) << "2 workers drew the same noise as 0 in " << runs << " runs";
}

TEST(Lesson05Answers, Exercise4CsvLinePerGetParsesWholeFileEachTime) {
  const auto path = std::filesystem::temp_directory_path() / ("gradlab_answers05_" + std::to_string(::getpid()) + ".csv");
  {
    std::ofstream f(path);
    for (int r = 0; r < 300; ++r) {
      for (int c = 0; c < 64; ++c) f << (r * 7 + c) % 17 << ",";
      f << r % 10 << "\n";
    }
  }
  struct LinePerGet : data::Dataset {
    std::filesystem::path p;
    explicit LinePerGet(std::filesystem::path q) : p(std::move(q)) {}
    data::Example<> get(size_t i) override {
      data::CsvTable t = data::read_csv(p);  // reads (and parses) the whole file every time
      gl::Tensor row = t.values[static_cast<int64_t>(i)];
      return {row.narrow(0, 0, 64).to(gl::kFloat32), row[64].to(gl::kInt64)};
    }
    size_t size() const override { return 300; }
  };
  LinePerGet lazy(path);
  // The read-once pass takes ~1.5 ms, so one preemption on a busy machine (ctest -j2) can triple
  // it: the fastest of 3 passes is its time. (The lazy pass takes ~150 ms; a preemption there
  // only makes the ratio larger.) Idle, the ratio is ~90-115x.
  double t_once = 1e9;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    data::CsvDataset once(path);
    for (size_t i = 0; i < once.size(); ++i) (void)once.get(i);
    t_once = std::min(t_once, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  data::CsvDataset once(path);
  const auto t2 = std::chrono::steady_clock::now();
  std::vector<data::Example<>> ex;
  for (size_t i = 0; i < lazy.size(); ++i) ex.push_back(lazy.get(i));
  const auto t3 = std::chrono::steady_clock::now();
  const double t_lazy = std::chrono::duration<double>(t3 - t2).count();
  std::cout << "CsvDataset (read once + 300 gets): " << t_once * 1e3
            << " ms; read_csv per get: " << t_lazy * 1e3 << " ms (" << t_lazy / t_once << "x)\n";
  for (size_t i : {size_t{0}, size_t{123}, size_t{299}}) {
    EXPECT_TRUE(gl::equal(ex[i].data, once.get(i).data));
    EXPECT_TRUE(gl::equal(ex[i].target, once.get(i).target));
  }
  EXPECT_GT(t_lazy, 20 * t_once);
  std::filesystem::remove(path);
}

TEST(Lesson05Answers, Exercise5TwoRanksSeeEverySampleOnce) {
  auto train = digits_train();  // 1437 samples: odd, so one index is repeated as padding
  for (uint64_t epoch : {0u, 1u}) {
    std::vector<int64_t> all;
    std::vector<size_t> per_rank;
    for (int64_t rank : {0, 1}) {
      data::DataLoader l(train, data::DataLoaderOptions(64).seed(42).sampler(
                                    std::make_shared<data::DistributedSampler>(rank, 2)));
      l.set_epoch(epoch);
      size_t n = 0;
      for (auto& b : l) {
        all.insert(all.end(), b.indices.begin(), b.indices.end());
        n += b.indices.size();
      }
      per_rank.push_back(n);
    }
    EXPECT_EQ(per_rank, (std::vector<size_t>{719, 719}));
    std::sort(all.begin(), all.end());
    const size_t total = all.size();
    all.erase(std::unique(all.begin(), all.end()), all.end());
    EXPECT_EQ(total, 1438u);
    EXPECT_EQ(all.size(), 1437u);  // every sample, one of them twice
    EXPECT_EQ(all.front(), 0);
    EXPECT_EQ(all.back(), 1436);
  }
}

// The CPU memory limit, its OutOfMemoryError, memory::summary() and the per-phase peaks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <string>
#include <vector>

#include "gradlab/gradlab.hpp"

namespace {

using namespace gradlab;
using ::testing::HasSubstr;

constexpr std::size_t kMiB = std::size_t{1} << 20;

TEST(MemoryLimit, AnAllocationPastTheLimitThrowsOutOfMemoryWithTheFigures) {
  memory::empty_cache();
  const std::size_t base = memory::allocated();
  memory::LimitGuard limit(base + 8 * kMiB);
  Tensor keep = empty({1 << 20});  // 4 MiB, fits
  try {
    (void)empty({static_cast<int64_t>(3) << 20});  // 12 MiB more does not
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    const std::string m = e.what();
    EXPECT_THAT(m, HasSubstr("out of memory on cpu"));
    EXPECT_THAT(m, HasSubstr("requested 12.0 MiB (12582912 bytes)"));
    EXPECT_THAT(m, HasSubstr("allocated " + memory::format_bytes(base + 4 * kMiB) + " (" +
                             std::to_string(base + 4 * kMiB) + " bytes)"));
    EXPECT_THAT(m, HasSubstr("cached "));
    EXPECT_THAT(m, HasSubstr("limit " + memory::format_bytes(base + 8 * kMiB)));
    for (const char* fix : {"smaller batch", "gradient accumulation", "mixed precision", "checkpointing",
                            "NoGradGuard", "detach"})
      EXPECT_THAT(m, HasSubstr(fix)) << "the hint should list " << fix;
  }
  EXPECT_EQ(memory::allocated(), base + 4 * kMiB);  // the failed allocation holds nothing
  EXPECT_EQ(memory::stats().ooms, 1u);
  // It is the error the CUDA caching allocator throws: one catch clause serves both devices.
  EXPECT_THROW((void)empty({static_cast<int64_t>(3) << 20}), OutOfMemoryError);
}

TEST(MemoryLimit, TheLimitIsHonouredExactlyAndClears) {
  memory::empty_cache();
  const std::size_t base = memory::allocated();
  memory::set_limit(base + 4 * kMiB);
  EXPECT_EQ(memory::limit(), base + 4 * kMiB);
  {
    Tensor a = empty({1 << 20});  // exactly the limit: allowed
    EXPECT_EQ(memory::allocated(), base + 4 * kMiB);
    EXPECT_THROW((void)empty({1}), OutOfMemoryError);  // one more element is not
  }
  Tensor b = empty({1 << 20});  // freed bytes count again
  b = Tensor();
  memory::clear_limit();
  EXPECT_EQ(memory::limit(), 0u);
  Tensor big = empty({static_cast<int64_t>(4) << 20});  // 16 MiB: fine without a limit
  EXPECT_THROW(memory::set_limit(0), ValueError);
}

TEST(MemoryLimit, CachedBlocksAreGivenBackBeforeGivingUp) {
  memory::empty_cache();
  const std::size_t base = memory::allocated();
  memory::LimitGuard limit(base + 8 * kMiB);
  { Tensor a = empty({static_cast<int64_t>(3) << 19}); }  // 6 MiB, cached when freed
  EXPECT_EQ(memory::cached(), 6 * kMiB);
  Tensor other = empty({static_cast<int64_t>(3) << 19});  // the same size: the cached block is reused
  EXPECT_EQ(memory::cached(), 0u);
  other = Tensor();
  EXPECT_EQ(memory::cached(), 6 * kMiB);
  Tensor c = empty({static_cast<int64_t>(7) << 18});  // 7 MiB: fits only once the cache is gone
  EXPECT_EQ(memory::cached(), 0u);
  EXPECT_LE(memory::reserved(), base + 8 * kMiB);
}

// From 128 KiB (glibc's mmap threshold: below it malloc reuses its own heap) freed blocks are kept;
// smaller ones go back to malloc.
TEST(MemoryCache, BlocksFrom128KiBAreKeptAndSmallerOnesAreNot) {
  memory::empty_cache();
  { Tensor t = empty({40 << 10}); }  // 160 KiB
  EXPECT_EQ(memory::cached(), std::size_t{160} << 10);
  const std::size_t hits = memory::stats().cache_hits;
  { Tensor t = empty({40 << 10}); }
  EXPECT_EQ(memory::stats().cache_hits, hits + 1);
  memory::empty_cache();
  { Tensor t = empty({(32 << 10) - 16}); }  // 64 bytes under 128 KiB
  EXPECT_EQ(memory::cached(), 0u);
}

// Buffers under 128 KiB come from malloc's heap. A step that frees them all and takes them again
// must not make glibc give the heap's top back and map it afresh: one fault per 4 KiB page on
// every step (storage.cpp, prime_malloc). ctest runs this test in a process of its own, where
// nothing else has raised glibc's trim threshold; without the priming it faulted ~330 times a
// round here, with it 0, and 24 (one buffer) in an odd round where the heap's working size still
// grew: the bound allows 10 a round. Sanitizers bring their own malloc, with a quarantine that maps new pages.
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
TEST(MemoryCache, SmallBuffersFreedAndTakenAgainMapNoNewPages) {
  auto faults = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt + u.ru_majflt;
  };
  auto round = [] {
    std::vector<Tensor> ts;
    for (int i = 0; i < 24; ++i) ts.push_back(ones({25000}));  // 100 kB each, written: 2.4 MB
    return ts.back().sum().item<float>();
  };
  for (int i = 0; i < 3; ++i) round();  // warm-up: the heap grows to its working size
  const long before = faults();
  float total = 0;
  for (int i = 0; i < 20; ++i) total += round();
  const long after = faults();
  EXPECT_EQ(total, 20 * 25000.0f);
  EXPECT_LE(after - before, 200) << "20 rounds of 24 small buffers mapped " << (after - before)
                                << " new pages: the heap's top was given back and taken again";
}
#endif

// Past Stats::cache_bound, a freed block pushes out the least recently freed ones: sizes never
// asked for again age out, and the newest free stays (the old cache turned it away when full).
// The blocks are never written, so they cost address space, not memory.
TEST(MemoryCache, PastItsBoundTheLeastRecentlyFreedBlocksGoFirst) {
  memory::empty_cache();
  ASSERT_EQ(memory::limit(), 0u);
  // Distinct sizes of about 64 MiB, decreasing: the first sets the high-water mark the bound
  // follows, the later ones leave it (and the bound) alone.
  auto size_of = [](int64_t i) { return (int64_t{16} << 20) - 1024 * i; };
  (void)empty({size_of(0)});
  const memory::Stats start = memory::stats();
  EXPECT_EQ(start.cached, (std::size_t{64} << 20));
  int64_t n = 1;
  for (; memory::stats().cache_evictions == start.cache_evictions; ++n) {
    ASSERT_LT(n, 1000) << "the cache never gave a block back; cached " << memory::stats().cached << " bytes";
    (void)empty({size_of(n)});
  }
  const memory::Stats after = memory::stats();
  EXPECT_EQ(after.cache_bound, start.cache_bound);
  EXPECT_EQ(after.cache_evictions, start.cache_evictions + 1);
  EXPECT_LE(after.cached, after.cache_bound);
  EXPECT_GT(after.cached + (std::size_t{64} << 20), after.cache_bound);  // it was full
  // The oldest size (0) went back to the system; the newest (n - 1) and an older one (1) are reused.
  for (int64_t i : {n - 1, int64_t{1}}) {
    const std::size_t hits = memory::stats().cache_hits;
    (void)empty({size_of(i)});
    EXPECT_EQ(memory::stats().cache_hits, hits + 1) << "size " << i;
  }
  const std::size_t hits = memory::stats().cache_hits;
  (void)empty({size_of(0)});
  EXPECT_EQ(memory::stats().cache_hits, hits);
  memory::empty_cache();
}

TEST(MemoryLimit, TheGuardRestoresThePreviousLimit) {
  memory::set_limit(std::size_t{1} << 40);
  {
    memory::LimitGuard g(std::size_t{1} << 30);
    EXPECT_EQ(memory::limit(), std::size_t{1} << 30);
  }
  EXPECT_EQ(memory::limit(), std::size_t{1} << 40);
  memory::clear_limit();
  { memory::LimitGuard g(std::size_t{1} << 30); }
  EXPECT_EQ(memory::limit(), 0u);
}

TEST(MemorySummary, HasTorchsRowsAndTheLiveFigures) {
  memory::empty_cache();
  Tensor a = empty({1 << 20});
  const std::string s = memory::summary();
  for (const char* row : {"gradlab CPU memory summary", "Metric", "Cur Usage", "Peak Usage", "Tot Alloc", "Tot Freed",
                          "Allocated memory", "Reserved memory", "Allocations"})
    EXPECT_THAT(s, HasSubstr(row));
  EXPECT_THAT(s, HasSubstr("OOMs: " + std::to_string(memory::stats().ooms)));
  EXPECT_THAT(s, HasSubstr(memory::format_bytes(memory::allocated())));
  const memory::Stats st = memory::stats();
  EXPECT_GE(st.allocations_total, 1u);
  EXPECT_EQ(st.reserved, st.allocated + st.cached);
  EXPECT_GE(st.allocated_total - st.freed_total, st.allocated);
}

TEST(PeakScope, ReadsTheScopesPeakAndKeepsTheGlobalOne) {
  memory::empty_cache();
  const std::size_t base = memory::allocated();
  memory::reset_peak();
  { Tensor big = empty({static_cast<int64_t>(2) << 20}); }  // 8 MiB, freed: the global peak remembers
  {
    memory::PeakScope scope;
    EXPECT_EQ(scope.start(), base);
    EXPECT_EQ(scope.peak(), base);  // the earlier 8 MiB is not this scope's
    { Tensor t = empty({1 << 20}); }
    EXPECT_EQ(scope.peak_increase(), 4 * kMiB);
  }
  EXPECT_EQ(memory::max_allocated(), base + 8 * kMiB);
}

TEST(PhasePeaks, EachPhaseGetsItsOwnPeakAndRepeatsKeepTheHighest) {
  memory::empty_cache();
  memory::PhasePeaks phases;
  Tensor w = randn({256, 256}, TensorOptions().requires_grad(true));
  Tensor x = randn({512, 256});
  Tensor loss;
  for (int step = 0; step < 2; ++step) {
    {
      auto s = phases.measure("forward");
      loss = relu(matmul(x, w)).pow(2).sum();
    }
    {
      auto s = phases.measure("backward");
      loss.backward();
    }
    {
      auto s = phases.measure("optimizer step");
      NoGradGuard g;
      Tensor upd = w.grad() * 0.1;  // 256 KiB temporary
      w.sub_(upd);
      w.mutable_grad().zero_();
    }
  }
  EXPECT_EQ(phases.phases(), (std::vector<std::string>{"forward", "backward", "optimizer step"}));
  // forward keeps two [512, 256] activations (512 KiB each) for backward at least
  EXPECT_GE(phases.peak_increase("forward"), std::size_t{1} << 20);
  EXPECT_GE(phases.peak_increase("optimizer step"), std::size_t{256} << 10);
  EXPECT_LT(phases.peak_increase("optimizer step"), phases.peak_increase("forward"));
  EXPECT_GE(phases.peak("backward"), phases.peak("optimizer step"));
  EXPECT_THAT(phases.str(), HasSubstr("forward"));
  EXPECT_THROW((void)phases.peak("eval"), ValueError);
}

TEST(PhasePeaks, APeakChangesWhenThePhaseAllocatesMore) {
  memory::empty_cache();
  auto peak_of = [](int64_t n) {
    memory::PhasePeaks phases;
    {
      auto s = phases.measure("forward");
      Tensor t = empty({n});
    }
    return phases.peak_increase("forward");
  };
  EXPECT_EQ(peak_of(1 << 18), std::size_t{1} << 20);
  EXPECT_EQ(peak_of(1 << 19), std::size_t{2} << 20);
}

}  // namespace

// The vectorized sum / max / min kernels (backend/cpu/vec/reduce.hpp) at every capability level
// this CPU runs, and the public sum / mean / amax at the level in use (ctest runs check_ops once
// per GRADLAB_CPU_CAPABILITY: capability_<level>_reduce).
// NOTE: the claims here ARE about bits: every level keeps one documented summation order, so
// each level's sum is compared bit for bit with that order written out in scalar code, and the
// accuracy against a long double reference within the bound reduce.hpp states.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "gradlab/backend/cpu/vec/reduce.hpp"
#include "gradlab/gradlab.hpp"

namespace {

using gradlab::cpu::vec::Capability;
using gradlab::cpu::vec::ReduceKernels;

std::vector<const ReduceKernels*> levels() {
  std::vector<const ReduceKernels*> out;
  for (Capability c : {Capability::Default, Capability::Avx2, Capability::Avx512}) {
    if (const ReduceKernels* k = gradlab::cpu::vec::reduce_kernels_for(c)) out.push_back(k);
    else std::printf("[ note ] level %d: this CPU does not run it; skipped\n", static_cast<int>(c));
  }
  return out;
}

// reduce.hpp's order, written out: lane i mod 32, then l[j] += l[j + w] for w = 16 .. 1.
template <class T>
double documented_sum(const T* p, int64_t n) {
  double l[32] = {};
  for (int64_t i = 0; i < n; ++i) l[i % 32] += static_cast<double>(p[i]);
  for (int w = 16; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) l[j] += l[j + w];
  return l[0];
}

template <class T>
long double exact_ish(const T* p, int64_t n, long double* abs_sum) {  // 64-bit mantissa
  long double s = 0, a = 0;
  for (int64_t i = 0; i < n; ++i) {
    s += static_cast<long double>(p[i]);
    a += std::fabs(static_cast<long double>(p[i]));
  }
  *abs_sum = a;
  return s;
}

uint64_t bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// Sizes around the 32-lane chunk and each level's register width, up to one block (16384). The
// sum loop takes two chunks (64 elements) per trip, then one chunk, then the tail: 95..129 end in
// each of those (96 = one trip + one chunk; 127 = one trip + one chunk + a tail of 31).
const int64_t kSizes[] = {0,  1,  2,   3,   7,   8,   15,  16,   31,   32,    33,    63,
                          64, 65, 95,  96,  97,  100, 127, 128,  129,  1000,  4097,  16383, 16384};

template <class T>
std::vector<T> values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  // Mixed magnitudes and signs: cancellation is where a changed order shows.
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_int_distribution<int> e(-20, 20);
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<T>(std::ldexp(g(rng), e(rng)));
  return v;
}

template <class T>
void check_sum(const ReduceKernels& k, double (*sum)(const T*, int64_t)) {
  for (int64_t n : kSizes) {
    const auto v = values<T>(n, static_cast<uint32_t>(n) + 7);
    const double got = sum(v.data(), n);
    // The order is the claim: the same bits as the scalar pattern (so at every level).
    EXPECT_EQ(bits(got), bits(documented_sum(v.data(), n))) << k.name << " n=" << n;
    // Accuracy: |error| <= (n/32 + 5 + 1) eps Σ|x| (each lane adds at most ceil(n/32) values,
    // the fold 5 more, +1 for the long double reference's own rounding).
    long double abs_sum;
    const long double want = exact_ish(v.data(), n, &abs_sum);
    const double bound = (static_cast<double>((n + 31) / 32) + 6) * std::numeric_limits<double>::epsilon() *
                         static_cast<double>(abs_sum);
    EXPECT_LE(std::fabs(static_cast<double>(static_cast<long double>(got) - want)), bound) << k.name << " n=" << n;
  }
}

TEST(ReduceLevels, SumFollowsTheDocumentedOrderAtEveryLevel) {
  for (const ReduceKernels* k : levels()) {
    check_sum<float>(*k, k->sum_f32);
    check_sum<double>(*k, k->sum_f64);
  }
}

#if defined(__linux__)
// sum_body prefetches ahead of the element it adds, past p + n near a row's end (reduce_level.hpp:
// kSumPrefetchBytes): a prefetch must never fault. The values end right before a page that may
// not be read (PROT_NONE), for every size and level.
TEST(ReduceLevels, SumPrefetchPastTheEndNeverFaults) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE)), len = 8 * page;
  void* map = mmap(nullptr, len + 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  char* guard = static_cast<char*>(map) + len;
  ASSERT_EQ(mprotect(guard, 4 * page, PROT_NONE), 0);
  for (const ReduceKernels* k : levels()) {
    for (int64_t n : {int64_t{64}, int64_t{1000}, static_cast<int64_t>(len / sizeof(float))}) {
      const auto v = values<float>(n, 3);
      float* p = reinterpret_cast<float*>(guard) - n;
      std::memcpy(p, v.data(), v.size() * sizeof(float));
      EXPECT_EQ(bits(k->sum_f32(p, n)), bits(documented_sum(v.data(), n))) << k->name << " n=" << n;
    }
    const int64_t m = static_cast<int64_t>(len / sizeof(double));
    const auto d = values<double>(m, 4);
    double* q = reinterpret_cast<double*>(guard) - m;
    std::memcpy(q, d.data(), d.size() * sizeof(double));
    EXPECT_EQ(bits(k->sum_f64(q, m)), bits(documented_sum(d.data(), m))) << k->name;
  }
  munmap(map, len + 4 * page);
}
#endif

TEST(ReduceLevels, AddRowIsTheScalarColumnLoop) {
  for (const ReduceKernels* k : levels()) {
    for (int64_t n : kSizes) {
      const auto r32 = values<float>(n, 1);
      const auto r64 = values<double>(n, 2);
      const auto a0 = values<double>(n, 3);
      std::vector<double> a = a0, b = a0, want = a0, want64 = a0;
      k->add_row_f32(r32.data(), a.data(), n);
      k->add_row_f64(r64.data(), b.data(), n);
      for (int64_t j = 0; j < n; ++j) {
        want[j] += static_cast<double>(r32[j]);
        want64[j] += r64[j];
      }
      EXPECT_EQ(a, want) << k->name << " n=" << n;
      EXPECT_EQ(b, want64) << k->name << " n=" << n;
    }
  }
}

TEST(ReduceLevels, MaxMinAreExactAndNanWins) {
  for (const ReduceKernels* k : levels()) {
    for (int64_t n : kSizes) {
      if (n == 0) continue;
      auto v = values<double>(n, static_cast<uint32_t>(n));
      const auto f = values<float>(n, static_cast<uint32_t>(n));
      double mx = v[0], mn = v[0];
      float fmx = f[0], fmn = f[0];
      for (int64_t i = 0; i < n; ++i) {
        mx = std::max(mx, v[i]);
        mn = std::min(mn, v[i]);
        fmx = std::max(fmx, f[i]);
        fmn = std::min(fmn, f[i]);
      }
      EXPECT_EQ(k->minmax_f64(true, v.data(), n), mx) << k->name << " n=" << n;
      EXPECT_EQ(k->minmax_f64(false, v.data(), n), mn) << k->name << " n=" << n;
      EXPECT_EQ(k->minmax_f32(true, f.data(), n), fmx) << k->name << " n=" << n;
      EXPECT_EQ(k->minmax_f32(false, f.data(), n), fmn) << k->name << " n=" << n;
      for (int64_t at : {int64_t{0}, n / 2, n - 1}) {  // a NaN anywhere (SIMD body or tail) wins
        auto w = v;
        w[at] = std::numeric_limits<double>::quiet_NaN();
        EXPECT_TRUE(std::isnan(k->minmax_f64(true, w.data(), n))) << k->name << " n=" << n << " at " << at;
        EXPECT_TRUE(std::isnan(k->minmax_f64(false, w.data(), n))) << k->name << " n=" << n << " at " << at;
      }
    }
  }
}

// reduce.hpp's max / min pattern, written out: lanes start at p[0], element i is combined into
// lane i mod 32, then l[j] with l[j + w] for w = 16 .. 1 (math::reduce_combine's rule: v replaces
// acc where v > acc (v < acc) or v is NaN). The value is exact in any order; the pattern fixes
// which NaN payload comes out (ties keep the lane's value, so -0 / +0 follow p[0]), so compare bits.
template <class T>
double documented_minmax(bool is_max, const T* p, int64_t n) {
  auto comb = [&](double acc, double v) { return (is_max ? v > acc : v < acc) || v != v ? v : acc; };
  double l[32];
  for (double& x : l) x = static_cast<double>(p[0]);
  for (int64_t i = 0; i < n; ++i) l[i % 32] = comb(l[i % 32], static_cast<double>(p[i]));
  for (int w = 16; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) l[j] = comb(l[j], l[j + w]);
  return l[0];
}

TEST(ReduceLevels, MaxMinFollowTheDocumentedPatternBitForBit) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> pick(0, 7);
  std::uniform_int_distribution<uint32_t> payload(1, 0x3fffff);
  for (const ReduceKernels* k : levels()) {
    for (int64_t n : kSizes) {
      if (n == 0) continue;
      for (int with_nan = 0; with_nan < 2; ++with_nan) {
        std::vector<float> f(static_cast<size_t>(n));
        std::vector<double> d(f.size());
        for (size_t i = 0; i < f.size(); ++i) {  // mostly zeros of both signs, so ties decide
          const int c = pick(rng);
          float v = c < 3 ? 0.0f : c < 6 ? -0.0f : c < 7 ? 1.0f : -1.0f;
          if (with_nan && pick(rng) < 4) {  // half NaNs, distinct payloads: the last one a lane meets wins
            const uint32_t b = 0x7fc00000u | payload(rng);
            std::memcpy(&v, &b, sizeof v);
          }
          f[i] = v;
          d[i] = static_cast<double>(v);
        }
        for (bool is_max : {true, false}) {
          EXPECT_EQ(bits(k->minmax_f32(is_max, f.data(), n)), bits(documented_minmax(is_max, f.data(), n)))
              << k->name << " n=" << n << " max " << is_max;
          EXPECT_EQ(bits(k->minmax_f64(is_max, d.data(), n)), bits(documented_minmax(is_max, d.data(), n)))
              << k->name << " n=" << n << " max " << is_max;
        }
      }
    }
  }
}

// The public ops at the level in use (ctest repeats this per level).
TEST(ReduceLevels, Float32SumOfManyValuesIsCorrectlyRoundedOrNearly) {
  // 2^20 + 5 values (64 blocks and a tail): accumulated in double, the float32 result is within
  // one float ulp of the long double sum (the double sum's error is ~1e-13 of Σ|x| here).
  gradlab::Generator gen(28);
  const gradlab::Tensor x = gradlab::randn({(1 << 20) + 5}, gradlab::dtype(gradlab::kFloat32), &gen) + 0.25;
  const float* p = x.data_ptr<float>();
  long double abs_sum;
  const long double want = exact_ish(p, x.numel(), &abs_sum);
  const float got = gradlab::sum(x).item<float>();
  const float w = static_cast<float>(want);
  EXPECT_LE(std::fabs(static_cast<double>(got) - static_cast<double>(want)),
            std::nextafter(std::fabs(w), INFINITY) - std::fabs(w))
      << gradlab::cpu_capability();
  const float m = gradlab::mean(x).item<float>();
  EXPECT_NEAR(m, static_cast<double>(want / x.numel()), 1e-7) << gradlab::cpu_capability();
}

TEST(ReduceLevels, Float64SumsOverDimsMatchTheReference) {
  // [37, 1000, 45]: over all (64+ blocks... 1.6M values), the inner dim (rows of 45: the tail only),
  // the middle dim (a copy, rows of 1000) and the leading dim (the column path).
  gradlab::Generator gen(7);
  const gradlab::Tensor x = gradlab::randn({37, 1000, 45}, gradlab::dtype(gradlab::kFloat64), &gen) * 1e3 + 1.0;
  const double* p = x.data_ptr<double>();
  const int64_t A = 37, B = 1000, C = 45;
  const double eps = std::numeric_limits<double>::epsilon();
  long double abs_sum;
  const long double all = exact_ish(p, x.numel(), &abs_sum);
  // all: blocks of 16384 in lanes (<= 512 + 5 adds each), then ~102 blocks left to right
  EXPECT_LE(std::fabs(static_cast<double>(gradlab::sum(x).item<double>() - all)),
            (512 + 6 + 102) * eps * static_cast<double>(abs_sum));
  const gradlab::Tensor s2 = gradlab::sum(x, {2}), s1 = gradlab::sum(x, {1}), s0 = gradlab::sum(x, {0});
  for (int64_t a = 0; a < A; a += 5)
    for (int64_t b = 0; b < B; b += 97) {
      long double s = 0, q = 0;
      for (int64_t c = 0; c < C; ++c) {
        s += p[(a * B + b) * C + c];
        q += std::fabs(p[(a * B + b) * C + c]);
      }
      EXPECT_LE(std::fabs(static_cast<double>(s2[a][b].item<double>() - s)), 8 * eps * static_cast<double>(q));
    }
  for (int64_t a = 0; a < A; a += 9)
    for (int64_t c = 0; c < C; c += 11) {
      long double s = 0, q = 0;
      for (int64_t b = 0; b < B; ++b) {
        s += p[(a * B + b) * C + c];
        q += std::fabs(p[(a * B + b) * C + c]);
      }
      EXPECT_LE(std::fabs(static_cast<double>(s1[a][c].item<double>() - s)), 38 * eps * static_cast<double>(q));
    }
  for (int64_t b = 0; b < B; b += 97)
    for (int64_t c = 0; c < C; c += 11) {
      long double s = 0, q = 0;
      for (int64_t a = 0; a < A; ++a) {
        s += p[(a * B + b) * C + c];
        q += std::fabs(p[(a * B + b) * C + c]);
      }
      EXPECT_LE(std::fabs(static_cast<double>(s0[b][c].item<double>() - s)), (A + 1) * eps * static_cast<double>(q));
    }
}

// sum_columns (reduce.cpp: a middle or leading dim of a contiguous tensor, no copy) keeps the
// row path's order: its bits equal those of moving the dims last and summing contiguous rows.
TEST(ReduceLevels, ColumnSumsHaveTheRowPathsBits) {
  struct Case {
    gradlab::Shape shape;
    gradlab::Dims dims, perm;
  };
  const Case cases[] = {
      {{3, 20000, 5}, {1}, {0, 2, 1}},         // more than one block of 16384 rows
      {{40000, 7}, {0}, {1, 0}},               // leading dim, the bias-gradient path
      {{5, 33, 130}, {1}, {0, 2, 1}},          // a middle dim, small
      {{2, 40, 9000}, {1}, {0, 2, 1}},         // more columns than one tile of 8192
      {{2, 3, 64, 9}, {1, 2}, {0, 3, 1, 2}},   // two dims, 192 rows
      {{4, 5, 2}, {0, 1}, {2, 0, 1}},          // fewer rows than 32 lanes
  };
  for (auto dt : {gradlab::kFloat32, gradlab::kFloat64}) {
    gradlab::Generator gen(5);
    for (const Case& c : cases) {
      const gradlab::Tensor x = gradlab::randn(c.shape, gradlab::dtype(dt), &gen) * 3.0 + 0.5;
      const gradlab::Tensor cols = gradlab::sum(x, c.dims);
      gradlab::Dims last;
      for (size_t i = 0; i < c.dims.size(); ++i)
        last.push_back(static_cast<int64_t>(c.shape.size() - c.dims.size() + i));
      const gradlab::Tensor rows = gradlab::sum(x.permute(c.perm).contiguous(), last);
      ASSERT_EQ(cols.sizes(), rows.sizes());
      const gradlab::Tensor a = cols.to(gradlab::kFloat64).contiguous(), b = rows.to(gradlab::kFloat64).contiguous();
      for (int64_t i = 0; i < a.numel(); ++i)
        ASSERT_EQ(bits(a.data_ptr<double>()[i]), bits(b.data_ptr<double>()[i]))
            << gradlab::cpu_capability() << " dtype " << static_cast<int>(dt) << " shape[1] " << c.shape[1] << " i=" << i;
    }
  }
}

// max(dim) / argmax (reduce.cpp: the vector kernel's value, then its first index) give the scalar
// rule's answer: the first NaN if there is one, else the first index of the largest (smallest)
// value, -0 and +0 counted as ties. Rows with repeated values, zeros of both signs and NaNs.
TEST(ReduceLevels, MaxMinIndicesFollowTheScalarRule) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> pick(0, 9);
  for (int64_t n : {1, 2, 31, 32, 33, 100, 1000}) {
    std::vector<double> v(static_cast<size_t>(4 * n));
    for (size_t r = 0; r < 4; ++r)
      for (int64_t i = 0; i < n; ++i) {
        const int c = pick(rng);
        double& e = v[r * n + i];
        e = c < 2 ? 0.0 : c < 4 ? -0.0 : c < 5 && r == 3 ? std::numeric_limits<double>::quiet_NaN() : (c - 5) * 0.5;
      }
    for (auto dt : {gradlab::kFloat32, gradlab::kFloat64}) {
      const gradlab::Tensor x = gradlab::from_vector(v, {4, n}).to(dt);
      for (bool is_max : {true, false}) {
        auto [val, idx] = is_max ? gradlab::max(x, 1) : gradlab::min(x, 1);
        for (int64_t r = 0; r < 4; ++r) {
          const double* row = v.data() + r * n;
          int64_t best = 0;
          for (int64_t i = 1; i < n; ++i) {
            if (std::isnan(row[best])) break;
            if (std::isnan(row[i])) { best = i; break; }
            if (is_max ? row[i] > row[best] : row[i] < row[best]) best = i;
          }
          EXPECT_EQ(idx[r].item<int64_t>(), best) << gradlab::cpu_capability() << " n=" << n << " row " << r;
          EXPECT_EQ(bits(val[r].to(gradlab::kFloat64).item<double>()), bits(row[best]))
              << gradlab::cpu_capability() << " n=" << n << " row " << r;
        }
      }
    }
  }
}

}  // namespace

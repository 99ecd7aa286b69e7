// Matrix products on gradlab's own threads (backend/cpu/gemm.hpp): a product big enough is split
// into blocks of C over parallel_for, each block one single-threaded OpenBLAS call, and OpenBLAS
// itself stays at 1 thread.
//
// The bound: each element of C is one dot product over K, so the split and the unsplit product
// both lie within GEMM's rounding bound of the exact one; |split - unsplit| <= 2 K u (|A||B|)_ij,
// u the unit roundoff (2^-24 float32, 2^-53 float64). (In practice the two are usually equal;
// the check claims only the bound: which kernel edge path a block takes is OpenBLAS's business.)

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gradlab/backend/cpu/cpu.hpp"
#include "gradlab/backend/cpu/gemm.hpp"
#include "gradlab/backend/cpu/parallel.hpp"
#include "gradlab/gradlab.hpp"
#include "core/fork_child.hpp"

namespace gradlab {
namespace {

struct ThreadsGuard {
  int saved = get_num_threads();
  ~ThreadsGuard() { set_num_threads(saved); }
};

template <class T>
std::vector<T> random_vec(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(d(rng));
  return v;
}

// op(X)[i, k] for a row-major X with leading dimension ld (transposed: X is [K, M]).
template <class T>
T at(const std::vector<T>& x, bool t, int64_t ld, int64_t i, int64_t k) {
  return t ? x[k * ld + i] : x[i * ld + k];
}

// Counts elements of c outside 2 K u (|A||B|)_ij (+ |beta c0| u) of ref.
template <class T>
int64_t outside_bound(const std::vector<T>& c, const std::vector<T>& ref, const std::vector<T>& a,
                      const std::vector<T>& b, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                      int64_t lda, int64_t ldb, int64_t ldc) {
  const double u = std::numeric_limits<T>::epsilon() / 2;
  int64_t bad = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double ab = 0;
      for (int64_t k = 0; k < K; ++k)
        ab += std::abs(static_cast<double>(at(a, ta, lda, i, k)) * at(b, tb, ldb, k, j));
      const double diff = std::abs(static_cast<double>(c[i * ldc + j]) - ref[i * ldc + j]);
      if (diff > 2 * K * u * ab + 4 * u * std::abs(static_cast<double>(ref[i * ldc + j])))
        ++bad;
    }
  return bad;
}

TEST(GemmSplit, PlanSplitsOnlyProductsWorthIt) {
  ThreadsGuard guard;
  set_num_threads(1);
  EXPECT_EQ(cpu::detail::gemm_plan(1024, 1024, 1024).how, 'S');
  set_num_threads(2);
  EXPECT_EQ(cpu::detail::gemm_plan(64, 10, 100).how, 'S');  // 2 M N K = 128000 < kGemmGrain
  const cpu::detail::GemmPlan rows = cpu::detail::gemm_plan(256, 256, 784);
  EXPECT_EQ(rows.how, 'M');
  EXPECT_EQ(rows.blocks, 2);
  EXPECT_EQ(cpu::detail::gemm_plan(10, 4096, 1568).how, 'N');  // M small: columns of N
  EXPECT_EQ(cpu::detail::gemm_plan(16, 16, 1 << 16).how, 'S');  // one tile: nothing to split
  set_num_threads(3);
  EXPECT_EQ(cpu::detail::gemm_plan(256, 256, 784).blocks, 3);
  // Inside a parallel_for chunk a product is one call on that thread.
  char inside = '?';
  cpu::parallel_for(0, 2, 1, [&](int64_t b, int64_t) {
    if (b == 0) inside = cpu::detail::gemm_plan(256, 256, 784).how;
  });
  EXPECT_EQ(inside, 'S');
  // Someone set OpenBLAS's own count above 1: the product goes to OpenBLAS whole.
  cpu::detail::set_blas_threads(2);
  EXPECT_EQ(cpu::detail::gemm_plan(256, 256, 784).how, 'S');
  set_num_threads(3);  // and set_num_threads puts OpenBLAS back at 1
  EXPECT_EQ(cpu::detail::blas_threads(), 1);
}

// The rule: set_num_threads(n) sets gradlab's count and OpenMP's to n and OpenBLAS's to 1, for
// every n (GRADLAB_NUM_THREADS at start too: run this binary with it set).
TEST(GemmSplit, OpenBlasStaysAtOneThread) {
  ThreadsGuard guard;
  EXPECT_EQ(cpu::detail::blas_threads(), 1) << "at start, GRADLAB_NUM_THREADS="
                                           << get_num_threads();
  for (int n : {3, 1, 2}) {
    set_num_threads(n);
    EXPECT_EQ(get_num_threads(), n);
    EXPECT_EQ(cpu::detail::runtime_threads(), n);
    EXPECT_EQ(cpu::detail::blas_threads(), 1) << "after set_num_threads(" << n << ")";
  }
}

struct Shape {
  int64_t M, N, K;
};

// Odd shapes (ragged last blocks) split by rows and by columns; every transpose combination;
// leading dimensions wider than the matrix (strided operands: views of a wider buffer); beta 0
// and 1; float32 and float64; 1, 2 and 3 threads.
template <class T>
void check_split_matches() {
  ThreadsGuard guard;
  const Shape shapes[] = {{203, 77, 301}, {7, 1001, 333}, {1000, 5, 450}, {129, 131, 257}};
  for (const Shape& s : shapes)
    for (int tt = 0; tt < 4; ++tt)
      for (T beta : {T(0), T(1)}) {
        const bool ta = tt & 1, tb = tt & 2;
        const int64_t lda = (ta ? s.M : s.K) + 3, ldb = (tb ? s.K : s.N) + 5, ldc = s.N + 2;
        const std::vector<T> a = random_vec<T>((ta ? s.K : s.M) * lda, 1);
        const std::vector<T> b = random_vec<T>((tb ? s.N : s.K) * ldb, 2);
        const std::vector<T> c0 = random_vec<T>(s.M * ldc, 3);
        set_num_threads(1);
        std::vector<T> ref = c0;
        cpu::gemm(ta, tb, s.M, s.N, s.K, a.data(), lda, b.data(), ldb, beta, ref.data(), ldc);
        for (int n : {1, 2, 3}) {
          set_num_threads(n);
          SCOPED_TRACE("M=" + std::to_string(s.M) + " N=" + std::to_string(s.N) +
                       " K=" + std::to_string(s.K) + " ta=" + std::to_string(ta) +
                       " tb=" + std::to_string(tb) + " beta=" + std::to_string(beta) +
                       " threads=" + std::to_string(n));
          if (n > 1) {
            ASSERT_NE(cpu::detail::gemm_plan(s.M, s.N, s.K).how, 'S');
          }
          std::vector<T> c = c0;
          cpu::gemm(ta, tb, s.M, s.N, s.K, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
          EXPECT_EQ(outside_bound(c, ref, a, b, ta, tb, s.M, s.N, s.K, lda, ldb, ldc), 0);
          // The padding between rows of C is never written.
          int64_t pad_changed = 0;
          for (int64_t i = 0; i < s.M; ++i)
            for (int64_t j = s.N; j < ldc; ++j) pad_changed += c[i * ldc + j] != c0[i * ldc + j];
          EXPECT_EQ(pad_changed, 0);
        }
      }
}

TEST(GemmSplit, SplitProductMatchesTheUnsplitOneFloat32) { check_split_matches<float>(); }
TEST(GemmSplit, SplitProductMatchesTheUnsplitOneFloat64) { check_split_matches<double>(); }

// |x - ref| <= tol elementwise, tol from the bound with a crude |A||B| <= K max|a| max|b|.
bool within(const Tensor& x, const Tensor& ref, double tol) {
  return (abs(x.to(kFloat64) - ref.to(kFloat64)).max().item<double>()) <= tol;
}
double max_abs(const Tensor& t) { return abs(t.to(kFloat64)).max().item<double>(); }

// bmm through matmul: a batch at least the thread count (one product per chunk), a batch of 1
// (each product split), a transposed operand (a view), float32.
TEST(GemmSplit, BmmMatchesAtAnyThreadCount) {
  ThreadsGuard guard;
  manual_seed(11);
  struct Case {
    Tensor a, b;
  };
  const Case cases[] = {
      {randn({5, 67, 129}), randn({5, 71, 129}).transpose(1, 2)},  // batch 5, b a view
      {randn({1, 301, 203}), randn({1, 203, 157})},                // batch 1: rows
      {randn({2, 9, 333}), randn({2, 333, 1001})},                 // batch 2 at 3 threads: columns
  };
  for (const Case& c : cases) {
    set_num_threads(1);
    const Tensor ref = matmul(c.a, c.b);
    const int64_t K = c.a.size(2);
    const double tol =
        2.0 * K * K * std::numeric_limits<float>::epsilon() / 2 * max_abs(c.a) * max_abs(c.b);
    for (int n : {1, 2, 3}) {
      set_num_threads(n);
      SCOPED_TRACE("a " + std::to_string(c.a.size(0)) + "x" + std::to_string(c.a.size(1)) + "x" +
                   std::to_string(K) + " threads=" + std::to_string(n));
      EXPECT_TRUE(within(matmul(c.a, c.b), ref, tol));
    }
  }
}

// The GEMM path of conv2d (float64: oneDNN takes float32), forward and both backwards; each
// product here is ~10 MFLOP, so 2 and 3 threads split it.
TEST(GemmSplit, ConvolutionMatchesAtAnyThreadCount) {
  ThreadsGuard guard;
  manual_seed(12);
  cpu::Conv2dGeom g;
  g.N = 2, g.C = 16, g.H = 32, g.W = 32, g.O = 32, g.groups = 1;
  g.win.kh = g.win.kw = 3, g.win.ph = g.win.pw = 1;
  g.oh = g.win.out_h(g.H), g.ow = g.win.out_w(g.W);
  const Tensor x = randn({g.N, g.C, g.H, g.W}, kFloat64), w = randn({g.O, g.C, 3, 3}, kFloat64);
  const Tensor dy = randn({g.N, g.O, g.oh, g.ow}, kFloat64);
  set_num_threads(2);
  ASSERT_NE(cpu::detail::gemm_plan(g.O, g.oh * g.ow, g.C * 9).how, 'S');
  set_num_threads(1);
  const Tensor y1 = cpu::conv2d_forward(x, w, Tensor(), g);
  const Tensor dx1 = cpu::conv2d_backward_input(dy, w, Tensor(), g);
  const Tensor dw1 = cpu::conv2d_backward_weight(x, dy, g);
  const double u = std::numeric_limits<double>::epsilon() / 2;
  const double mx = max_abs(x), mw = max_abs(w), md = max_abs(dy);
  const double Ky = g.C * 9, Kx = g.O, Kw = g.N * g.oh * g.ow;  // the sums' lengths
  for (int n : {1, 2, 3}) {
    set_num_threads(n);
    SCOPED_TRACE("threads=" + std::to_string(n));
    EXPECT_TRUE(within(cpu::conv2d_forward(x, w, Tensor(), g), y1, 2 * Ky * Ky * u * mx * mw));
    // dx also adds up to 9 window entries after the GEMM (col2im), in the same order.
    EXPECT_TRUE(within(cpu::conv2d_backward_input(dy, w, Tensor(), g), dx1,
                       9 * 2 * Kx * Kx * u * md * mw));
    EXPECT_TRUE(within(cpu::conv2d_backward_weight(x, dy, g), dw1, 2 * Kw * Kw * u * mx * md));
  }
}

// A forked child (an MPI relaunch) multiplies serially on its one thread: a split-size product
// there neither hangs on the parent's team nor differs from the parent's result beyond the bound.
TEST(GemmSplit, AForkedChildStillMultiplies) {
  ThreadsGuard guard;
  set_num_threads(2);
  manual_seed(13);
  const Tensor a = randn({300, 400}), b = randn({400, 200});
  const Tensor parent = matmul(a, b);  // split over the parent's team
  const double tol = 2.0 * 400 * 400 * 6e-8 * max_abs(a) * max_abs(b);
  std::fflush(nullptr);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const bool ok = cpu::detail::gemm_plan(300, 200, 400).how != '?' &&
                    within(matmul(a, b), parent, tol) && cpu::detail::blas_threads() == 1;
    ::_exit(ok ? 0 : 1);
  }
  testing_fork::expect_child_succeeds(child, "a matrix product", "the child's product differs from the parent's");
}

}  // namespace
}  // namespace gradlab

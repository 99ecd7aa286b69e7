// CUDA reductions and index kernels (backend/cuda/reduce.cuh, index.cuh) against the CPU
// reference, through the public ops: op(x.cuda()).cpu() == op(x) for many shapes (odd sizes,
// size-1 and empty dims, rank 0, strided / expanded inputs, reductions long enough to take the
// rounds path), float32 / float64 / int64, gradients back to a CPU leaf, and the same error type
// (and message) for bad input. Poisoned allocations make an unwritten output element visible.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cuda_env.hpp"
#include "gradlab/backend/kernels.hpp"
#include "gradlab/gradlab.hpp"

using namespace gradlab;

namespace {

// Poisoned blocks for every test here; off again afterwards so other suites see the default.
class CudaReduceIndex : public ::testing::Test {
 protected:
  void SetUp() override { cuda::set_poison_allocations(true); }
  void TearDown() override { cuda::set_poison_allocations(false); }
};

std::string shape_of(const Tensor& t) { return shape_str(t.sizes()); }

// `got` (a CUDA result) equals `want` (the CPU's): device, dtype, shape, and values (floats
// within `rel` relative tolerance, NaN where the CPU has NaN; integers exactly).
void expect_same(const Tensor& want, const Tensor& got, const std::string& what, double rel = 0) {
  ASSERT_TRUE(got.is_cuda()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what << ": " << shape_of(got) << " vs " << shape_of(want);
  const Tensor g = got.cpu();
  if (want.is_floating_point()) {
    const std::vector<double> a = want.to_vector<double>(), b = g.to_vector<double>();
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::isnan(a[i])) {
        EXPECT_TRUE(std::isnan(b[i])) << what << " at " << i;
      } else if (rel == 0) {
        EXPECT_EQ(a[i], b[i]) << what << " at " << i;
      } else {
        EXPECT_NEAR(a[i], b[i], rel * (1 + std::fabs(a[i]))) << what << " at " << i;
      }
    }
  } else {
    EXPECT_EQ(want.to_vector<int64_t>(), g.to_vector<int64_t>()) << what;
  }
}

double sum_tol(ScalarType dt) { return dt == kFloat32 ? 2e-6 : (dt == kFloat64 ? 1e-11 : 0); }

Tensor sample(const Shape& shape, ScalarType dt) {
  if (dt == kInt64) return randint(-20, 20, shape);
  if (dt == kBool) return randint(0, 2, shape).to(kBool);
  return randn(shape, TensorOptions().dtype(dt));
}

// A layout: how the tested tensor is made from a contiguous base of `base` shape; the same view
// is taken on the CPU base and on its CUDA copy, so the kernel sees the strides under test.
struct Layout {
  std::string name;
  std::function<Shape(const Shape&)> base;       // base shape for a wanted shape
  std::function<Tensor(const Tensor&)> view;     // base -> tensor of the wanted shape
};

std::vector<Layout> layouts(const Shape& s) {
  std::vector<Layout> ls;
  ls.push_back({"contiguous", [](const Shape& w) { return w; }, [](const Tensor& b) { return b; }});
  if (s.size() >= 2) {
    // transposed: base has the last two dims swapped
    ls.push_back({"transposed",
                  [](const Shape& w) {
                    Shape b = w;
                    std::swap(b[b.size() - 1], b[b.size() - 2]);
                    return b;
                  },
                  [](const Tensor& b) { return b.transpose(-1, -2); }});
  }
  if (!s.empty()) {
    // sliced: every other element along dim 0 of a base twice as long (plus one), from 1
    ls.push_back({"sliced",
                  [](const Shape& w) {
                    Shape b = w;
                    b[0] = 2 * w[0] + 1;
                    return b;
                  },
                  [](const Tensor& b) { return b.slice(0, 1, b.size(0), 2); }});
    // expanded: dim 0 broadcast from size 1 (stride 0)
    ls.push_back({"expanded",
                  [](const Shape& w) {
                    Shape b = w;
                    b[0] = 1;
                    return b;
                  },
                  [s](const Tensor& b) { return b.expand(s); }});
  }
  return ls;
}

// Every subset of [0, rank) as a Dims (the empty one means "all dims" to the ops).
std::vector<Dims> dim_subsets(int64_t rank) {
  std::vector<Dims> r;
  for (int64_t m = 0; m < (int64_t{1} << rank); ++m) {
    Dims d;
    for (int64_t k = 0; k < rank; ++k)
      if (m & (int64_t{1} << k)) d.push_back(k);
    r.push_back(d);
  }
  return r;
}

const std::vector<Shape> kReduceShapes = {{},      {1},        {7},        {33},       {0},         {1, 1},
                                          {3, 0},  {0, 4},     {5, 37},    {32, 32},   {31, 1, 33}, {2, 3, 4, 5},
                                          {4097},  {3, 2500},  {2100, 2}};

// Runs `check(x_cpu, x_cuda, label)` for every shape, layout and dtype given.
void for_each_input(const std::vector<Shape>& shapes, const std::vector<ScalarType>& dtypes,
                    const std::function<void(const Tensor&, const Tensor&, const std::string&)>& check) {
  for (const Shape& s : shapes)
    for (const Layout& l : layouts(s))
      for (ScalarType dt : dtypes) {
        const Tensor base = sample(l.base(s), dt);
        const Tensor x = l.view(base), xc = l.view(base.cuda());
        ASSERT_EQ(x.sizes(), s);
        ASSERT_EQ(xc.strides(), x.strides());
        check(x, xc, shape_str(s) + " " + l.name + " " + to_string(dt));
      }
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

// ---- reductions -----------------------------------------------------------------------------------
TEST_F(CudaReduceIndex, SumOverEveryDimSubsetMatchesCpu) {
  GRADLAB_USE_CUDA_BACKEND();
  manual_seed(11);
  for_each_input(kReduceShapes, {kFloat32, kFloat64, kInt64}, [](const Tensor& x, const Tensor& xc, const std::string& what) {
    expect_same(sum(x), sum(xc), "sum() " + what, sum_tol(x.dtype()));
    for (const Dims& d : dim_subsets(x.dim()))
      for (bool keep : {false, true})
        expect_same(sum(x, d, keep), sum(xc, d, keep), "sum " + shape_str(d) + (keep ? " keepdim " : " ") + what,
                    sum_tol(x.dtype()));
  });
}

TEST_F(CudaReduceIndex, AmaxAminMatchCpu) {
  GRADLAB_USE_CUDA_BACKEND();
  manual_seed(12);
  for_each_input(kReduceShapes, {kFloat32, kFloat64, kInt64}, [](const Tensor& x, const Tensor& xc, const std::string& what) {
    for (const Dims& d : dim_subsets(x.dim()))
      for (bool keep : {false, true}) {
        const std::string w = shape_str(d) + (keep ? " keepdim " : " ") + what;
        Dims all = d;  // the dims as the ops pass them: all when empty
        if (all.empty())
          for (int64_t k = 0; k < x.dim(); ++k) all.push_back(k);
        int64_t n = 1;
        for (auto k : all) n *= x.size(k);
        if (n == 0) {  // max of nothing: the same error on both
          EXPECT_THROW((void)amax(x, d, keep), ShapeError) << w;
          EXPECT_EQ(error_of([&] { (void)amax(x, d, keep); }), error_of([&] { (void)amax(xc, d, keep); })) << w;
          EXPECT_THROW((void)amin(xc, d, keep), ShapeError) << w;
          continue;
        }
        expect_same(amax(x, d, keep), amax(xc, d, keep), "amax " + w);
        expect_same(amin(x, d, keep), amin(xc, d, keep), "amin " + w);
      }
  });
}

TEST_F(CudaReduceIndex, MaxMinWithIndexArgmaxArgminMatchCpu) {
  GRADLAB_USE_CUDA_BACKEND();
  manual_seed(13);
  // Few distinct values: many ties, so "the first index wins" is exercised everywhere.
  for (const Shape& s : kReduceShapes)
    for (const Layout& l : layouts(s))
      for (ScalarType dt : {kFloat32, kFloat64, kInt64, kBool}) {
        const Tensor base = randint(-3, 3, l.base(s)).to(dt);
        const Tensor x = l.view(base), xc = l.view(base.cuda());
        const std::string what = shape_str(s) + " " + l.name + " " + to_string(dt);
        if (x.numel() > 0) {
          expect_same(argmax(x), argmax(xc), "argmax() " + what);
          expect_same(argmin(x), argmin(xc), "argmin() " + what);
        }
        for (int64_t d = -1; d < std::max<int64_t>(x.dim(), 1); ++d)
          for (bool keep : {false, true}) {
            const std::string w = "dim " + std::to_string(d) + (keep ? " keepdim " : " ") + what;
            if (x.dim() > 0 && x.size(d) == 0) {
              EXPECT_THROW((void)max(xc, d, keep), ShapeError) << w;
              EXPECT_EQ(error_of([&] { (void)max(x, d, keep); }), error_of([&] { (void)max(xc, d, keep); })) << w;
              continue;
            }
            auto [v, i] = max(x, d, keep);
            auto [vc, ic] = max(xc, d, keep);
            expect_same(v, vc, "max values " + w);
            expect_same(i, ic, "max indices " + w);
            auto [mv, mi] = min(x, d, keep);
            auto [mvc, mic] = min(xc, d, keep);
            expect_same(mv, mvc, "min values " + w);
            expect_same(mi, mic, "min indices " + w);
            expect_same(argmax(x, d, keep), argmax(xc, d, keep), "argmax " + w);
            expect_same(argmin(x, d, keep), argmin(xc, d, keep), "argmin " + w);
          }
      }
}

TEST_F(CudaReduceIndex, NanWinsInMaxMinAndTheFirstNanIsTheIndex) {
  GRADLAB_USE_CUDA_BACKEND();
  manual_seed(14);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (ScalarType dt : {kFloat32, kFloat64})
    for (int64_t n : {5, 40, 3000, 9000}) {  // 3000 and 9000 take the rounds path
      Tensor x = randint(-3, 3, {4, n}).to(dt);
      // row 0: no NaN; row 1: one NaN late; row 2: NaNs at two places (first wins); row 3: NaN first
      x.select(0, 1).narrow(0, n - 2, 1).fill_(nan);
      x.select(0, 2).narrow(0, n / 3, 1).fill_(nan);
      x.select(0, 2).narrow(0, n / 2 + 1, 1).fill_(nan);
      x.select(0, 3).narrow(0, 0, 1).fill_(nan);
      const Tensor xc = x.cuda();
      const std::string what = "n " + std::to_string(n) + " " + to_string(dt);
      for (bool keep : {false, true}) {
        auto [v, i] = max(x, 1, keep);
        auto [vc, ic] = max(xc, 1, keep);
        expect_same(v, vc, "max values " + what);
        expect_same(i, ic, "max indices " + what);
        auto [mv, mi] = min(x, 1, keep);
        auto [mvc, mic] = min(xc, 1, keep);
        expect_same(mv, mvc, "min values " + what);
        expect_same(mi, mic, "min indices " + what);
      }
      expect_same(amax(x, {1}), amax(xc, {1}), "amax " + what);
      expect_same(amin(x, {1}), amin(xc, {1}), "amin " + what);
      expect_same(amax(x), amax(xc), "amax all " + what);
      expect_same(argmax(x.select(0, 2)), argmax(xc.select(0, 2)), "argmax row 2 " + what);
      EXPECT_EQ(argmax(xc.select(0, 2)).item<int64_t>(), n / 3) << what;
      EXPECT_TRUE(std::isnan(max(xc).item<double>())) << what;
    }
}

TEST_F(CudaReduceIndex, LongFullReductionsTakeRoundsAndMatchCpu) {
  GRADLAB_USE_CUDA_BACKEND();
  manual_seed(15);
  // 4M + 3 elements: 4097 partials, then 5, then 1 (three passes); 16M: the brief's case.
  for (int64_t n : {(int64_t{1} << 22) + 3, int64_t{1} << 24}) {
    const Tensor x = rand({n});  // in [0, 1): a sum near n / 2, no cancellation
    const Tensor xc = x.cuda();
    expect_same(sum(x), sum(xc), "sum " + std::to_string(n), 1e-6);
    expect_same(amax(x), amax(xc), "amax " + std::to_string(n));
    expect_same(argmin(x), argmin(xc), "argmin " + std::to_string(n));
    if (n > (int64_t{1} << 23)) break;
    const Tensor xi = randint(-1000, 1000, {n});
    expect_same(sum(xi), sum(xi.cuda()), "int64 sum " + std::to_string(n));
    const Tensor xd = x.to(kFloat64);
    expect_same(sum(xd), sum(xd.cuda()), "float64 sum " + std::to_string(n), 1e-12);
    // a tie far apart: the first position wins across partials
    Tensor t = zeros({n});
    t.narrow(0, n - 5, 1).fill_(7.0);
    t.narrow(0, 3000, 1).fill_(7.0);
    t.narrow(0, 2 * 4097 + 1, 1).fill_(7.0);
    EXPECT_EQ(argmax(t.cuda()).item<int64_t>(), 3000);
    EXPECT_EQ(argmax(t).item<int64_t>(), 3000);
  }
}

TEST_F(CudaReduceIndex, BoolReductionsCountAsInt64) {
  GRADLAB_USE_CUDA_BACKEND();
  manual_seed(16);
  const Tensor m = randint(0, 2, {6, 2500}).to(kBool);
  const Tensor mc = m.cuda();
  expect_same(sum(m), sum(mc), "sum(mask)");
  expect_same(sum(m, {1}), sum(mc, {1}), "sum(mask, 1)");
  for (auto op : {kern::Reduce::Sum, kern::Reduce::Max, kern::Reduce::Min}) {
    const Tensor want = kern::reduce(op, m, {1}, false), got = kern::reduce(op, mc, {1}, false);
    EXPECT_EQ(got.dtype(), kInt64);
    expect_same(want, got, "kern::reduce bool");
  }
}

TEST_F(CudaReduceIndex, SumRowsMatchesCpu) {
  GRADLAB_USE_CUDA_BACKEND();
  manual_seed(17);
  for (ScalarType dt : {kFloat32, kFloat64})
    for (Shape s : {Shape{1, 1}, Shape{7, 33}, Shape{0, 5}, Shape{5000, 3}, Shape{64, 100}}) {
      const Tensor x = randn(s, TensorOptions().dtype(dt));
      expect_same(kern::sum_rows(x), kern::sum_rows(x.cuda()), "sum_rows " + shape_str(s), sum_tol(dt));
      const Tensor xt = randn({s[1], s[0]}, TensorOptions().dtype(dt));
      expect_same(kern::sum_rows(xt.t()), kern::sum_rows(xt.cuda().t()), "sum_rows transposed " + shape_str(s),
                  sum_tol(dt));
    }
  const Tensor xi = randint(0, 5, {3, 4});
  EXPECT_THROW((void)kern::sum_rows(xi), DTypeError);
  EXPECT_THROW((void)kern::sum_rows(xi.cuda()), DTypeError);
}

TEST_F(CudaReduceIndex, ReductionGradientsFlowBackToTheCpuLeaf) {
  GRADLAB_USE_CUDA_BACKEND();
  manual_seed(18);
  for (ScalarType dt : {kFloat32, kFloat64})
    for (Shape s : {Shape{5, 37}, Shape{3, 1, 4}, Shape{2100, 2}}) {
      const double tol = dt == kFloat32 ? 1e-5 : 1e-12;
      const std::string what = shape_str(s) + " " + to_string(dt);
      // ties on purpose: amax splits the gradient over them, max(dim) sends it to the first one
      const Tensor base = randint(-2, 2, s).to(dt);
      using Fn = std::function<Tensor(const Tensor&)>;
      const std::vector<std::pair<std::string, Fn>> fns = {
          {"sum", [](const Tensor& x) { return sum(x); }},
          {"sum dims", [](const Tensor& x) { return sum(x, {0, -1}, true); }},
          {"sum scaled", [](const Tensor& x) { return sum(x, {1}) * 0.5; }},
          {"amax", [](const Tensor& x) { return amax(x, {0}); }},
          {"amin all", [](const Tensor& x) { return amin(x); }},
          {"max dim", [](const Tensor& x) { return std::get<0>(max(x, -1)); }},
          {"min dim keep", [](const Tensor& x) { return std::get<0>(min(x, 0, true)); }},
          {"logsumexp", [](const Tensor& x) { return logsumexp(x, {1}); }},
      };
      for (const auto& [name, f] : fns) {
        Tensor a = base.clone().requires_grad_(), b = base.clone().requires_grad_();
        const Tensor y = f(a);
        const Tensor g = randn(y.sizes(), TensorOptions().dtype(dt));
        y.backward(g);
        const Tensor yc = f(b.cuda());
        ASSERT_TRUE(yc.is_cuda());
        yc.backward(g.cuda());
        ASSERT_TRUE(b.grad().defined()) << name << " " << what;
        EXPECT_TRUE(b.grad().is_cpu()) << name;
        const std::vector<double> ga = a.grad().to_vector<double>(), gb = b.grad().to_vector<double>();
        ASSERT_EQ(ga.size(), gb.size());
        for (size_t k = 0; k < ga.size(); ++k)
          ASSERT_NEAR(ga[k], gb[k], tol * (1 + std::fabs(ga[k]))) << name << " " << what << " at " << k;
      }
    }
}

// ---- index kernels --------------------------------------------------------------------------------
namespace {
// (x shape, index shape) pairs for gather: index has x's rank and fits in every dim but `dim`
// (index.size(dim) may exceed x's).
struct GatherCase {
  Shape x, index;
};
const std::vector<GatherCase> kGatherCases = {
    {{}, {}},           {{5}, {3}},          {{5}, {0}},           {{7}, {40}},           {{4, 6}, {4, 6}},
    {{4, 6}, {2, 9}},   {{33, 5}, {31, 1}},  {{3, 1, 4}, {3, 1, 4}}, {{2, 3, 5}, {1, 7, 2}}, {{3, 0}, {3, 0}},
    {{1, 1}, {1, 3}},   {{40, 37}, {39, 36}},
};
Shape with(Shape s, int64_t d, int64_t v) {
  if (!s.empty()) s[d] = v;
  return s;
}
}  // namespace

TEST_F(CudaReduceIndex, GatherMatchesCpuForEveryDimLayoutAndDtype) {
  GRADLAB_USE_CUDA_BACKEND();
  manual_seed(21);
  for (const auto& c : kGatherCases)
    for (int64_t d = 0; d < std::max<int64_t>(int64_t(c.x.size()), 1); ++d) {
      if (!c.x.empty()) {  // index must fit x in every dim but d
        bool fits = true;
        for (size_t k = 0; k < c.x.size(); ++k)
          if (int64_t(k) != d && c.index[k] > c.x[k]) fits = false;
        if (!fits) continue;
        if (c.x[d] == 0 && numel_of(c.index) > 0) continue;  // no valid index into an empty dim
      }
      const int64_t hi = c.x.empty() ? 1 : c.x[d];
      for (const Layout& l : layouts(c.x))
        for (ScalarType dt : {kFloat32, kFloat64, kInt64, kBool}) {
          const Tensor base = sample(l.base(c.x), dt);
          const Tensor x = l.view(base), xc = l.view(base.cuda());
          const Tensor idx = randint(0, std::max<int64_t>(hi, 1), c.index);
          const std::string what = "x " + shape_str(c.x) + " index " + shape_str(c.index) + " dim " +
                                   std::to_string(d) + " " + l.name + " " + to_string(dt);
          expect_same(gather(x, d, idx), gather(xc, d, idx.cuda()), "gather " + what);
          if (c.index.size() >= 2) {  // a strided index: the transpose of a contiguous one
            Shape sw = c.index;
            std::swap(sw[0], sw[1]);
            const Tensor ib = randint(0, std::max<int64_t>(hi, 1), sw);
            expect_same(gather(x, d, ib.transpose(0, 1)), gather(xc, d, ib.cuda().transpose(0, 1)),
                        "gather strided index " + what);
          }
          if (dt == kBool) continue;
          // scatter_add with the same index (repeated indices on purpose), self = x, src larger
          const Tensor src = sample(with(c.index, 0, c.index.empty() ? 0 : c.index[0] + 1), dt);
          expect_same(scatter_add(x, d, idx, src), scatter_add(xc, d, idx.cuda(), src.cuda()), "scatter_add " + what,
                      sum_tol(dt) * 10);
        }
    }
}

TEST_F(CudaReduceIndex, ScatterAddWithManyDuplicatesAndBool) {
  GRADLAB_USE_CUDA_BACKEND();
  manual_seed(22);
  for (ScalarType dt : {kFloat32, kFloat64, kInt64}) {
    // 5000 sources into 3 slots per row: heavy collisions (atomics on a GPU)
    const Tensor self = sample({4, 3}, dt), src = sample({4, 5000}, dt);
    const Tensor idx = randint(0, 3, {4, 5000});
    expect_same(scatter_add(self, 1, idx, src), scatter_add(self.cuda(), 1, idx.cuda(), src.cuda()),
                "scatter_add dup " + to_string(dt), dt == kFloat32 ? 1e-4 : sum_tol(dt) * 100);
    // expanded self (stride 0) and a transposed src
    const Tensor s1 = sample({1, 6}, dt), srct = sample({6, 4}, dt);
    const Tensor i2 = randint(0, 5, {4, 6});
    expect_same(scatter_add(s1.expand({5, 6}), 0, i2, srct.t()),
                scatter_add(s1.cuda().expand({5, 6}), 0, i2.cuda(), srct.cuda().t()), "scatter_add strided " + to_string(dt),
                sum_tol(dt) * 10);
  }
  // bool: an OR (kernel level; the public op would add)
  const Tensor self = randint(0, 2, {3, 4}).to(kBool), src = randint(0, 2, {3, 4}).to(kBool);
  const Tensor idx = randint(0, 4, {3, 4});
  expect_same(kern::scatter_add(self, 1, idx, src), kern::scatter_add(self.cuda(), 1, idx.cuda(), src.cuda()),
              "scatter_add bool");
}

TEST_F(CudaReduceIndex, IndexSelectAndIndexAddMatchCpu) {
  GRADLAB_USE_CUDA_BACKEND();
  manual_seed(23);
  const std::vector<Shape> shapes = {{}, {7}, {1}, {33, 5}, {4, 1, 6}, {2, 3, 4, 5}, {0, 3}, {3, 0}};
  for (const Shape& s : shapes)
    for (int64_t d = 0; d < std::max<int64_t>(int64_t(s.size()), 1); ++d)
      for (int64_t n : {0, 1, 5, 70}) {
        const int64_t size = s.empty() ? 1 : s[d];
        if (size == 0 && n > 0) continue;
        if (s.empty() && n != 1) continue;  // a 0-d input takes exactly one index
        const Tensor idx = randint(0, std::max<int64_t>(size, 1), {n});
        for (const Layout& l : layouts(s))
          for (ScalarType dt : {kFloat32, kFloat64, kInt64, kBool}) {
            const Tensor base = sample(l.base(s), dt);
            const Tensor x = l.view(base), xc = l.view(base.cuda());
            const std::string what = shape_str(s) + " dim " + std::to_string(d) + " n " + std::to_string(n) + " " +
                                     l.name + " " + to_string(dt);
            expect_same(index_select(x, d, idx), index_select(xc, d, idx.cuda()), "index_select " + what);
            const Tensor idx_strided = randint(0, std::max<int64_t>(size, 1), {n, 2}).select(1, 1);
            expect_same(index_select(x, d, idx_strided), index_select(xc, d, idx_strided.cuda()),
                        "index_select strided index " + what);
            if (dt == kBool) {
              EXPECT_THROW((void)index_add(x, d, idx, x.index_select(d, idx)), DTypeError);
              EXPECT_THROW((void)index_add(xc, d, idx.cuda(), xc.index_select(d, idx.cuda())), DTypeError);
              continue;
            }
            const Tensor src = sample(with(s, d, n), dt);
            expect_same(index_add(x, d, idx, src), index_add(xc, d, idx.cuda(), src.cuda()), "index_add " + what,
                        sum_tol(dt) * 10);
            if (src.dim() >= 2) {  // a transposed src
              const Tensor st = sample({src.size(1), src.size(0)}, dt);
              if (src.dim() == 2)
                expect_same(index_add(x, d, idx, st.t()), index_add(xc, d, idx.cuda(), st.cuda().t()),
                            "index_add transposed src " + what, sum_tol(dt) * 10);
            }
          }
      }
  // half types: index_select copies them; compare through float32
  const Tensor h = randn({5, 4}).to(kFloat16), bf = randn({5, 4}).to(kBFloat16);
  const Tensor idx = tensor({4, 0, 0, 2});
  for (const Tensor& t : {h, bf}) {
    const Tensor got = index_select(t.cuda(), 0, idx.cuda());
    EXPECT_EQ(got.dtype(), t.dtype());
    expect_same(index_select(t, 0, idx).to(kFloat32), got.to(kFloat32), "index_select half");
  }
  // embedding = index_select of rows
  const Tensor w = randn({10, 3}), tok = randint(0, 10, {2, 5});
  expect_same(embedding(w, tok), embedding(w.cuda(), tok.cuda()), "embedding");
}

TEST_F(CudaReduceIndex, IndexGradientsFlowBackToTheCpuLeaf) {
  GRADLAB_USE_CUDA_BACKEND();
  manual_seed(24);
  for (ScalarType dt : {kFloat32, kFloat64}) {
    const double tol = dt == kFloat32 ? 1e-5 : 1e-12;
    const TensorOptions o = TensorOptions().dtype(dt);
    const Tensor gidx = randint(0, 6, {4, 9}), sidx = randint(0, 3, {4, 6}), iidx = randint(0, 6, {11});
    const Tensor src_base = randn({4, 6}, o);
    struct Case {
      std::string name;
      std::function<Tensor(const Tensor&, const Tensor&, bool)> f;  // (leaf moved to the device, other input, on cuda)
    };
    auto dev = [](const Tensor& t, bool c) { return c ? t.cuda() : t; };
    const std::vector<Case> cases = {
        {"gather", [&](const Tensor& x, const Tensor&, bool c) { return gather(x, 1, dev(gidx, c)); }},
        {"scatter_add self", [&](const Tensor& x, const Tensor& other, bool c) {
           return scatter_add(x.narrow(1, 0, 3), 1, dev(sidx, c), other); }},
        {"scatter_add src", [&](const Tensor& x, const Tensor& other, bool c) {
           return scatter_add(other.narrow(1, 0, 3), 1, dev(sidx, c), x); }},
        {"index_select", [&](const Tensor& x, const Tensor&, bool c) { return index_select(x, 1, dev(iidx, c)); }},
        {"index_select dim0", [&](const Tensor& x, const Tensor&, bool c) { return index_select(x, 0, dev(tensor({3, 3, 0}), c)); }},
        {"index_add src", [&](const Tensor& x, const Tensor& other, bool c) {
           return index_add(other, 1, dev(tensor({5, 0, 5, 1, 2, 3}), c), x); }},
        {"index_add self", [&](const Tensor& x, const Tensor& other, bool c) {
           return index_add(x, 1, dev(tensor({1, 1, 4, 0, 2, 3}), c), other); }},
        {"max dim", [&](const Tensor& x, const Tensor&, bool) { return std::get<0>(max(x, 1)); }},
    };
    for (const auto& cs : cases) {
      Tensor a = src_base.clone().requires_grad_(), b = src_base.clone().requires_grad_();
      const Tensor other = randn({4, 6}, o);
      const Tensor y = cs.f(a, other, false);
      const Tensor g = randn(y.sizes(), o);
      y.backward(g);
      const Tensor yc = cs.f(b.cuda(), other.cuda(), true);
      ASSERT_TRUE(yc.is_cuda()) << cs.name;
      yc.backward(g.cuda());
      ASSERT_TRUE(b.grad().defined()) << cs.name;
      EXPECT_TRUE(b.grad().is_cpu()) << cs.name;
      const std::vector<double> ga = a.grad().to_vector<double>(), gb = b.grad().to_vector<double>();
      ASSERT_EQ(ga.size(), gb.size()) << cs.name;
      for (size_t k = 0; k < ga.size(); ++k)
        EXPECT_NEAR(ga[k], gb[k], tol * (1 + std::fabs(ga[k]))) << cs.name << " " << to_string(dt) << " at " << k;
    }
  }
}

// ---- bad input: the CPU's error type and message ----------------------------------------------
// A CUDA index check runs on the device: its error is raised at the next synchronization (here
// the .cpu() after the op), or at the op itself with GRADLAB_CUDA_SYNC=1 (tools/gpu_check.sh
// runs the tests once that way) or blocking checks. Either way the message starts with the
// CPU's, word for word; raised later, it goes on to say where.
void expect_cpu_error_first(const std::string& what, const std::string& cpu, const std::string& cuda) {
  ASSERT_FALSE(cpu.empty()) << what << ": no CPU error";
  ASSERT_GE(cuda.size(), cpu.size()) << what << ": " << cuda;
  EXPECT_EQ(cuda.substr(0, cpu.size()), cpu) << what;
  if (cuda.size() > cpu.size()) {
    EXPECT_THAT(cuda, ::testing::HasSubstr("raised at the next synchronization, copy (cuda -> cpu)")) << what;
  }
}

TEST_F(CudaReduceIndex, OutOfRangeIndicesGiveTheCpuError) {
  GRADLAB_USE_CUDA_BACKEND();
  manual_seed(25);
  const Tensor x = randn({4, 6});
  const Tensor xc = x.cuda();
  auto same_error = [](const std::string& what, const std::function<void()>& on_cpu,
                       const std::function<Tensor()>& on_cuda) {
    EXPECT_THROW((void)on_cuda().cpu(), ShapeError) << what;
    const std::string a = error_of(on_cpu), b = error_of([&] { (void)on_cuda().cpu(); });
    expect_cpu_error_first(what, a, b);
    EXPECT_THAT(b, ::testing::HasSubstr("index out of range")) << what;
    // raised once: the record is clear afterwards
    EXPECT_NO_THROW(cuda::synchronize()) << what;
  };
  for (int bad : {6, -1, 1000}) {
    const Tensor gi = tensor({{0, 1}, {2, bad}, {0, 0}, {5, 5}});
    same_error("gather " + std::to_string(bad), [&] { (void)gather(x, 1, gi); }, [&] { return gather(xc, 1, gi.cuda()); });
    const Tensor ii = tensor({0, 5, bad, 2});
    same_error("index_select", [&] { (void)index_select(x, 1, ii); }, [&] { return index_select(xc, 1, ii.cuda()); });
    same_error("index_add", [&] { (void)index_add(x, 1, ii, randn({4, 4})); },
               [&] { return index_add(xc, 1, ii.cuda(), randn({4, 4}).cuda()); });
    same_error("scatter_add", [&] { (void)scatter_add(x, 1, gi, ones({4, 2})); },
               [&] { return scatter_add(xc, 1, gi.cuda(), ones({4, 2}).cuda()); });
  }
  // a long index (the check runs in rounds): the first bad position is named, from either side
  Tensor big = randint(0, 6, {20000});
  big.narrow(0, 17001, 1).fill_(-3);
  big.narrow(0, 5000, 1).fill_(6);
  big.narrow(0, 12345, 1).fill_(99);
  same_error("long index", [&] { (void)index_select(x, 1, big); }, [&] { return index_select(xc, 1, big.cuda()); });
  EXPECT_THAT(error_of([&] { (void)index_select(xc, 1, big.cuda()).cpu(); }), ::testing::HasSubstr("position 5000"));
  // a strided index: positions count in its row-major order
  const Tensor gt = tensor({{0, 1, 2, 3}, {4, 5, 7, 0}}).t();  // [4, 2], bad value 7 at row-major 5
  const Tensor gtc = tensor({{0, 1, 2, 3}, {4, 5, 7, 0}}).cuda().t();
  same_error("strided cuda index", [&] { (void)gather(x, 1, gt); }, [&] { return gather(xc, 1, gtc); });
  EXPECT_THAT(error_of([&] { (void)gather(xc, 1, gtc).cpu(); }), ::testing::HasSubstr("position 5"));
  // kernel level: check_indices on its own, raised by cuda::synchronize()
  EXPECT_NO_THROW(kern::check_indices(randint(0, 3, {5000}).cuda(), 3, "probe"); cuda::synchronize());
  EXPECT_NO_THROW(kern::check_indices(zeros({0}, TensorOptions().dtype(kInt64)).cuda(), 0, "probe"); cuda::synchronize());
  EXPECT_THROW(kern::check_indices(tensor({0, 3}).cuda(), 3, "probe"); cuda::synchronize(), ShapeError);
  EXPECT_THROW(kern::check_indices(ones({2}).cuda(), 3, "probe"), DTypeError);
  EXPECT_NO_THROW(cuda::synchronize());
}

// The check never stalls the host: the op returns, and its kernels never read through a bad
// index (gather / index_select write 0 there, the adds skip it) before the error is raised.
TEST_F(CudaReduceIndex, DeferredIndexErrorIsRaisedAtTheNextSyncAndBadSlotsAreNeverRead) {
  GRADLAB_USE_CUDA_BACKEND();
  if (testing_cuda::sync_each_launch()) GTEST_SKIP() << "GRADLAB_CUDA_SYNC=1: checks raise at the op";
  // (the fixture poisons new blocks: an element a kernel forgot to write shows as a huge value)
  const Tensor x = arange(1, 25, 1, dtype(kFloat32)).reshape({4, 6});
  const Tensor xc = x.cuda();
  const Tensor bad = tensor({2, 7, 0}).cuda();  // 7 is out of [0, 6)
  Tensor y;
  ASSERT_NO_THROW(y = index_select(xc, 1, bad));
  // the out-of-range column holds 0, the others x's columns
  try {
    (void)y.cpu();
    ADD_FAILURE() << "no error at the next synchronization";
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("index_select: index out of range at position 1; expected an index in [0, 6), got 7"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("raised at the next synchronization, copy (cuda -> cpu)"));
  }
  // raised once: the same data is readable now, and shows what the kernel wrote
  const std::vector<float> got = y.cpu().to_vector<float>();
  const std::vector<float> want{3, 0, 1, 9, 0, 7, 15, 0, 13, 21, 0, 19};
  EXPECT_EQ(got, want);
  // gather: 0 at the bad slot; scatter_add / index_add: the bad one is skipped, the rest added
  const Tensor g = gather(xc, 1, tensor({{0, 9}, {1, 1}, {2, -4}, {5, 5}}).cuda());
  EXPECT_THROW(cuda::synchronize(), ShapeError);
  EXPECT_EQ(g.cpu().to_vector<float>(), (std::vector<float>{1, 0, 8, 8, 15, 0, 24, 24}));
  const Tensor s = scatter_add(zeros({2, 3}).cuda(), 1, tensor({{0, 3}, {-1, 2}}).cuda(), ones({2, 2}).cuda());
  EXPECT_THROW(cuda::synchronize(), ShapeError);
  EXPECT_EQ(s.cpu().to_vector<float>(), (std::vector<float>{1, 0, 0, 0, 0, 1}));
  const Tensor a = index_add(zeros({3}).cuda(), 0, tensor({1, 5, 1}).cuda(), ones({3}).cuda());
  EXPECT_THROW(cuda::synchronize(), ShapeError);
  EXPECT_EQ(a.cpu().to_vector<float>(), (std::vector<float>{0, 2, 0}));
  // the first failure in stream order is the one raised; both are gone afterwards
  (void)index_select(xc, 0, tensor({4}).cuda());
  (void)gather(xc, 1, tensor({6}).reshape({1, 1}).cuda());
  try {
    cuda::synchronize();
    ADD_FAILURE() << "no error";
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("index_select: index out of range at position 0; expected an index in [0, 4), got 4"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("raised at the next synchronization, cuda::synchronize"));
  }
  EXPECT_NO_THROW(cuda::synchronize());
  // a good op after a raised error works as usual
  EXPECT_EQ(index_select(xc, 1, tensor({5}).cuda()).cpu().to_vector<float>(), (std::vector<float>{6, 12, 18, 24}));
  // item() and Timer::elapsed_ms() are synchronizations too
  const Tensor picked = index_select(xc.reshape({-1}), 0, tensor({30}).cuda());
  EXPECT_THROW((void)picked.sum().item<float>(), ShapeError);
  cuda::Timer timer;
  timer.start();
  (void)gather(xc, 0, tensor({{4, 0, 0, 0, 0, 0}}).cuda());
  timer.stop();
  EXPECT_THROW((void)timer.elapsed_ms(), ShapeError);
}

// Blocking checks: the error is raised at the op, word for word the CPU's message.
TEST_F(CudaReduceIndex, BlockingIndexChecksRaiseAtTheOpWithTheCpuMessage) {
  GRADLAB_USE_CUDA_BACKEND();
  struct Blocking {
    Blocking() { cuda::set_blocking_index_checks(true); }
    ~Blocking() { cuda::set_blocking_index_checks(false); }
  } on;
  EXPECT_TRUE(cuda::blocking_index_checks());
  const Tensor x = randn({4, 6});
  const Tensor ii = tensor({0, 5, 6, 2});
  EXPECT_THROW((void)index_select(x.cuda(), 1, ii.cuda()), ShapeError);
  EXPECT_EQ(error_of([&] { (void)index_select(x.cuda(), 1, ii.cuda()); }),
            error_of([&] { (void)index_select(x, 1, ii); }));
  EXPECT_EQ(error_of([&] { (void)gather(x.cuda(), 0, tensor({4}).reshape({1, 1}).cuda()); }),
            error_of([&] { (void)gather(x, 0, tensor({4}).reshape({1, 1})); }));
  EXPECT_NO_THROW((void)index_select(x.cuda(), 1, tensor({5, 0}).cuda()));
  EXPECT_NO_THROW(cuda::synchronize());
}

TEST_F(CudaReduceIndex, WrongDtypesAndDevicesAreErrors) {
  GRADLAB_USE_CUDA_BACKEND();
  const Tensor x = randn({3, 4});
  const Tensor xc = x.cuda();
  // a float index: the same DTypeError on both
  EXPECT_THROW((void)gather(x, 1, ones({3, 2})), DTypeError);
  EXPECT_THROW((void)gather(xc, 1, ones({3, 2}).cuda()), DTypeError);
  // half types have no CUDA compute kernels (nor CPU ones): DTypeError, not a crash
  EXPECT_THROW((void)sum(x.to(kFloat16)), DTypeError);
  EXPECT_THROW((void)sum(xc.to(kFloat16)), DTypeError);
  // a CPU index for a CUDA tensor: DeviceError (a GPU kernel must not read host memory)
  EXPECT_THROW((void)gather(xc, 1, tensor({{0, 1}, {1, 2}, {2, 0}})), DeviceError);
  EXPECT_THROW((void)index_select(xc, 0, tensor({0, 1})), DeviceError);
  // a 0-d input takes exactly one index
  EXPECT_THROW((void)index_select(tensor(3.0).cuda(), 0, tensor({0, 0}).cuda()), ShapeError);
}

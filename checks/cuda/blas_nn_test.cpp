// CUDA backend: matmul (cuBLAS / the emulator's loop), the nn kernels (im2col, col2im,
// max_pool2d, bias add, threshold_backward, cross-entropy) and the fused optimizer steps, each
// against the CPU reference through the public ops: forward values and gradients, float32 and
// float64. The tiled teaching kernel and cuBLAS-only entry points run with
// GRADLAB_TEST_CUDA=device.
//
// Tolerances (relative to max(1, |expected|)):
//   float64 1e-12; float32 2e-5 (matmul over K <= 129 and exp/log in float: a few ulps times K).
//   Kernels whose sums run in the CPU's order (col2im, max_pool2d, cross-entropy, the optimizer
//   steps) are also checked bit for bit on the emulator, where no FMA contraction happens.
// NOTE: some gradients here pass through other families' kernels (reduce for broadcast batch
// dims and bias sums, scatter_add for max_pool2d): those tests name it in their title.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "common/check_helpers.hpp"
#include "cuda_env.hpp"
#include "gradlab/core/cuda.hpp"
#include "gradlab/backend/cuda/tiled_matmul.hpp"
#include "gradlab/backend/kernels.hpp"
#include "gradlab/nn/functional.hpp"
#include "gradlab/ops/nn_ops.hpp"
#include "gradlab/optim/adam.hpp"
#include "gradlab/optim/sgd.hpp"

namespace gradlab {
namespace {

using checks::vals;
using nn::functional::cross_entropy;
using nn::functional::CrossEntropyFuncOptions;

#define CUDA_TEST_SETUP()     \
  GRADLAB_USE_CUDA_BACKEND(); \
  cuda::set_poison_allocations(true)

double tol_for(ScalarType dt) { return dt == kFloat32 ? 2e-5 : 1e-12; }
bool on_emulator() { return !testing_cuda::want_device(); }

// got (a CUDA tensor) vs want (the CPU reference): same shape, |got - want| <= tol max(1, |want|).
// With exact = true (and on the emulator) the values must be identical, NaNs in the same places.
void expect_close(const Tensor& got, const Tensor& want, const std::string& what,
                  bool exact = false) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_TRUE(want.defined()) << what;
  EXPECT_TRUE(got.is_cuda()) << what << ": result is not on CUDA";
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const std::vector<double> g = vals(got), w = vals(want);
  const double tol = tol_for(want.dtype());
  double worst = 0;
  size_t worst_at = 0, differ = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (g[i] == w[i]) continue;  // infinities included
    if (std::isnan(w[i]) || std::isnan(g[i])) {
      EXPECT_EQ(std::isnan(w[i]), std::isnan(g[i]))
          << what << " at " << i << ": got " << g[i] << ", want " << w[i];
      continue;
    }
    ++differ;
    const double err = std::abs(g[i] - w[i]) / std::max(1.0, std::abs(w[i]));
    if (err >= worst) worst = err, worst_at = i;
  }
  EXPECT_LE(worst, tol) << what << ": worst relative error at flat index " << worst_at << " (got "
                        << g[worst_at] << ", want " << w[worst_at] << ") on the "
                        << testing_cuda::backend_name();
  if (exact && on_emulator()) {
    EXPECT_EQ(differ, 0u) << what << ": " << differ
                          << " elements differ from the CPU in their last bits (e.g. flat "
                          << worst_at << "); on the emulator this kernel should match bit for bit";
  }
}

Tensor rnd(const Shape& s, ScalarType dt, uint64_t seed) {
  Generator gen(seed);
  return randn(s, dtype(dt), &gen);
}
// A CUDA leaf holding the same values as the CPU tensor x.
Tensor to_cuda_leaf(const Tensor& x, bool rg) {
  Tensor c = x.detach().cuda();
  if (rg) c.requires_grad_();
  return c;
}
Tensor cpu_leaf(const Tensor& x, bool rg) {
  Tensor c = x.detach().clone();
  if (rg) c.requires_grad_();
  return c;
}

const ScalarType kDtypes[] = {kFloat32, kFloat64};

// The same values in other memory layouts: channels-last (NHWC) and H/W transposed.
std::vector<Tensor> strided_layouts(const Tensor& x) {
  return {x.cuda().permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2}),
          x.cuda().transpose(2, 3).contiguous().transpose(2, 3)};
}

// ---- matmul ------------------------------------------------------------------------------------

// Forward and both input gradients of matmul(make_a(x), make_b(y)) on CPU and CUDA. `ga`, `gb`
// build the operands from leaves, so a transposed or sliced operand is a view of the leaf.
template <class FA, class FB>
void check_matmul(const Shape& sa, const Shape& sb, ScalarType dt, FA make_a, FB make_b,
                  const std::string& what) {
  SCOPED_TRACE(what + " " + to_string(dt));
  const Tensor a0 = rnd(sa, dt, 11), b0 = rnd(sb, dt, 12);
  Tensor ac = cpu_leaf(a0, true), bc = cpu_leaf(b0, true);
  Tensor ag = to_cuda_leaf(a0, true), bg = to_cuda_leaf(b0, true);
  Tensor yc = matmul(make_a(ac), make_b(bc));
  Tensor yg = matmul(make_a(ag), make_b(bg));
  expect_close(yg, yc, "forward");
  const Tensor dy = rnd(yc.sizes(), dt, 13);
  yc.backward(dy);
  yg.backward(dy.cuda());
  expect_close(ag.grad(), ac.grad(), "grad a");
  expect_close(bg.grad(), bc.grad(), "grad b");
}

auto same = [](const Tensor& t) { return t; };
auto tr = [](const Tensor& t) { return t.t(); };

TEST(CudaBlasNN, MatmulShapesNotMultipleOf32) {
  CUDA_TEST_SETUP();
  for (ScalarType dt : kDtypes) {
    check_matmul({1, 1}, {1, 1}, dt, same, same, "1x1 @ 1x1");
    check_matmul({31, 33}, {33, 31}, dt, same, same, "31x33 @ 33x31");
    check_matmul({100, 37}, {37, 129}, dt, same, same, "100x37 @ 37x129");
    check_matmul({64, 64}, {64, 64}, dt, same, same, "64x64 @ 64x64");
    check_matmul({1, 45}, {45, 7}, dt, same, same, "a single row");
    check_matmul({9, 45}, {45, 1}, dt, same, same, "a single column");
  }
}

TEST(CudaBlasNN, MatmulTransposedAndStridedOperands) {
  CUDA_TEST_SETUP();
  for (ScalarType dt : kDtypes) {
    // transposed views (column-major): cuBLAS reads them with op T, the emulator through strides
    check_matmul({37, 100}, {37, 129}, dt, tr, same, "aᵀ @ b");
    check_matmul({100, 37}, {129, 37}, dt, same, tr, "a @ bᵀ");
    check_matmul({37, 33}, {65, 37}, dt, tr, tr, "aᵀ @ bᵀ");
    // every other column: neither row- nor column-major, a contiguous copy on cuBLAS
    auto every_other = [](const Tensor& t) { return t.slice(1, 0, t.size(1), 2); };
    check_matmul({20, 34}, {17, 9}, dt, every_other, same, "column-strided a");
    // a [1, 1] view with odd strides (size-1 dims have arbitrary strides)
    auto corner = [](const Tensor& t) { return t.slice(0, 1, 2).slice(1, 2, 3); };
    check_matmul({3, 4}, {1, 5}, dt, corner, same, "strided 1x1 a");
  }
}

TEST(CudaBlasNN, MatmulBatchedAndVectors) {
  CUDA_TEST_SETUP();
  for (ScalarType dt : kDtypes) {
    check_matmul({3, 33, 17}, {3, 17, 40}, dt, same, same, "batched");
    auto bt = [](const Tensor& t) { return t.transpose(1, 2); };
    check_matmul({3, 17, 33}, {3, 40, 17}, dt, bt, bt, "batched, transposed");
    check_matmul({7}, {7, 5}, dt, same, same, "vector @ matrix");
    check_matmul({5, 7}, {7}, dt, same, same, "matrix @ vector");
  }
}

TEST(CudaBlasNN, MatmulBroadcastBatchNeedsReduce) {
  CUDA_TEST_SETUP();
  for (ScalarType dt : kDtypes) {
    // [2, 1, 5, 7] @ [3, 7, 4]: batch dims broadcast (stride 0 into bmm); grads sum them (reduce)
    check_matmul({2, 1, 5, 7}, {3, 7, 4}, dt, same, same, "broadcast batch");
    check_matmul({5, 7}, {4, 7, 6}, dt, same, same, "matrix @ batch");
  }
}

TEST(CudaBlasNN, MatmulEmptyAndZeroInnerSize) {
  CUDA_TEST_SETUP();
  for (ScalarType dt : kDtypes) {
    Tensor z = matmul(rnd({3, 0}, dt, 1).cuda(), rnd({0, 4}, dt, 2).cuda());  // an empty sum: zeros
    EXPECT_EQ(z.sizes(), (Shape{3, 4}));
    for (double v : vals(z)) EXPECT_EQ(v, 0.0);  // poisoned memory would show as huge values
    Tensor e = matmul(rnd({0, 5}, dt, 1).cuda(), rnd({5, 3}, dt, 2).cuda());
    EXPECT_EQ(e.sizes(), (Shape{0, 3}));
  }
  // integers are refused, as on the CPU
  EXPECT_THROW((void)matmul(ones({2, 2}, dtype(kInt64)).cuda(), ones({2, 2}, dtype(kInt64)).cuda()),
               DTypeError);
}

TEST(CudaBlasNN, LinearForwardAndGradients) {
  CUDA_TEST_SETUP();
  for (ScalarType dt : kDtypes) {
    SCOPED_TRACE(to_string(dt));
    const Tensor x0 = rnd({37, 45}, dt, 3), w0 = rnd({33, 45}, dt, 4), b0 = rnd({33}, dt, 5);
    Tensor xc = cpu_leaf(x0, true), wc = cpu_leaf(w0, true);
    Tensor xg = to_cuda_leaf(x0, true), wg = to_cuda_leaf(w0, true);
    Tensor yc = linear(xc, wc, b0), yg = linear(xg, wg, b0.cuda());  // bias add kernel
    expect_close(yg, yc, "linear forward");
    const Tensor dy = rnd({37, 33}, dt, 6);
    yc.backward(dy);
    yg.backward(dy.cuda());
    expect_close(xg.grad(), xc.grad(), "linear dx");
    expect_close(wg.grad(), wc.grad(), "linear dw");
    // a strided bias (every other element of a longer vector)
    const Tensor b2 = rnd({66}, dt, 7);
    expect_close(linear(x0.cuda(), w0.cuda(), b2.cuda().slice(0, 0, 66, 2)),
                 linear(x0, w0, b2.slice(0, 0, 66, 2)), "linear, strided bias");
  }
}

TEST(CudaBlasNN, LinearBiasGradientNeedsSumRows) {
  CUDA_TEST_SETUP();
  for (ScalarType dt : kDtypes) {
    const Tensor x0 = rnd({6, 5}, dt, 3), w0 = rnd({4, 5}, dt, 4), b0 = rnd({4}, dt, 5);
    Tensor bc = cpu_leaf(b0, true), bg = to_cuda_leaf(b0, true);
    Tensor yc = linear(x0, w0, bc), yg = linear(x0.cuda(), w0.cuda(), bg);
    const Tensor dy = rnd({6, 4}, dt, 6);
    yc.backward(dy);
    yg.backward(dy.cuda());
    expect_close(bg.grad(), bc.grad(), "linear db");
  }
}

// ---- unfold / fold (im2col / col2im), conv2d -------------------------------------------------

struct Win {
  IntPair k, d, p, s;
};
const Win kWindows[] = {
    {{3, 3}, {1, 1}, {0, 0}, {1, 1}},  // plain
    {{3, 2}, {1, 2}, {1, 2}, {2, 1}},  // every knob, different per axis
    {{2, 2}, {1, 1}, {1, 1}, {2, 2}},  // no overlap, padded
    {{4, 3}, {2, 1}, {2, 1}, {3, 2}},  // stride > kernel along one axis: pixels no window covers
};

TEST(CudaBlasNN, UnfoldAndFoldForwardAndBackward) {
  CUDA_TEST_SETUP();
  for (ScalarType dt : kDtypes) {
    for (const Win& w : kWindows) {
      SCOPED_TRACE(to_string(dt) + " kernel " + w.k.str() + " dilation " + w.d.str() + " padding " +
                   w.p.str() + " stride " + w.s.str());
      const Tensor x0 = rnd({2, 3, 9, 11}, dt, 21);
      Tensor xc = cpu_leaf(x0, true), xg = to_cuda_leaf(x0, true);
      Tensor cc = unfold(xc, w.k, w.d, w.p, w.s), cg = unfold(xg, w.k, w.d, w.p, w.s);
      expect_close(cg, cc, "unfold", /*exact=*/true);
      const Tensor dc = rnd(cc.sizes(), dt, 22);
      cc.backward(dc);  // unfold's backward is fold (col2im): overlapping windows add up
      cg.backward(dc.cuda());
      expect_close(xg.grad(), xc.grad(), "unfold backward = fold", /*exact=*/true);

      // fold of a non-contiguous cols (a transposed copy viewed back), and fold's backward (unfold)
      const Tensor cols0 = rnd({cc.size(0), cc.size(2), cc.size(1)}, dt, 23);
      Tensor fc = cpu_leaf(cols0, true), fg = to_cuda_leaf(cols0, true);
      Tensor yc = fold(fc.transpose(1, 2), {9, 11}, w.k, w.d, w.p, w.s);
      Tensor yg = fold(fg.transpose(1, 2), {9, 11}, w.k, w.d, w.p, w.s);
      expect_close(yg, yc, "fold of strided cols", /*exact=*/true);
      const Tensor dy = rnd(yc.sizes(), dt, 24);
      yc.backward(dy);
      yg.backward(dy.cuda());
      expect_close(fg.grad(), fc.grad(), "fold backward = unfold", /*exact=*/true);
    }
  }
}

TEST(CudaBlasNN, UnfoldOfStridedInput) {
  CUDA_TEST_SETUP();
  const Tensor x0 = rnd({2, 3, 9, 11}, kFloat64, 25);
  for (const Tensor& xs : strided_layouts(x0)) {
    EXPECT_FALSE(xs.is_contiguous());
    expect_close(unfold(xs, {3, 2}, 1, 1, 1), unfold(x0, {3, 2}, 1, 1, 1), "unfold reads strides",
                 true);
  }
}

TEST(CudaBlasNN, Conv2dForward) {
  CUDA_TEST_SETUP();
  for (ScalarType dt : kDtypes) {
    SCOPED_TRACE(to_string(dt));
    const Tensor x0 = rnd({2, 3, 9, 11}, dt, 31), w0 = rnd({4, 3, 3, 2}, dt, 32),
                 b0 = rnd({4}, dt, 33);
    expect_close(conv2d(x0.cuda(), w0.cuda(), b0.cuda(), {2, 1}, {1, 2}, {1, 2}),
                 conv2d(x0, w0, b0, {2, 1}, {1, 2}, {1, 2}), "conv2d");
    expect_close(conv2d(x0.cuda(), w0.cuda()), conv2d(x0, w0), "conv2d, no bias");
  }
}

TEST(CudaBlasNN, Conv2dGradientsNeedReduce) {
  CUDA_TEST_SETUP();
  for (ScalarType dt : kDtypes) {
    SCOPED_TRACE(to_string(dt));
    const Tensor x0 = rnd({2, 3, 9, 11}, dt, 31), w0 = rnd({4, 3, 3, 2}, dt, 32),
                 b0 = rnd({4}, dt, 33);
    Tensor xc = cpu_leaf(x0, true), wc = cpu_leaf(w0, true), bc = cpu_leaf(b0, true);
    Tensor xg = to_cuda_leaf(x0, true), wg = to_cuda_leaf(w0, true), bg = to_cuda_leaf(b0, true);
    Tensor yc = conv2d(xc, wc, bc, {2, 1}, {1, 2}, {1, 2}),
           yg = conv2d(xg, wg, bg, {2, 1}, {1, 2}, {1, 2});
    const Tensor dy = rnd(yc.sizes(), dt, 34);
    yc.backward(dy);
    yg.backward(dy.cuda());
    expect_close(xg.grad(), xc.grad(), "conv2d dx");
    expect_close(wg.grad(), wc.grad(), "conv2d dw");
    expect_close(bg.grad(), bc.grad(), "conv2d db");
  }
}

// ---- max_pool2d --------------------------------------------------------------------------------

// [2, 3, 9, 11] with ties (values rounded to halves: the first max wins), NaNs (they win and
// propagate, the first of two in a window decides the index) and an all-negative plane (the
// zero padding never wins).
Tensor pool_input(ScalarType dt) {
  std::vector<double> v = vals(rnd({2, 3, 9, 11}, kFloat64, 41));
  for (double& x : v) x = std::round(2 * x) / 2;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  v[5] = nan, v[17] = nan, v[18] = nan, v[99 + 40] = nan, v[99 + 52] = nan;
  for (size_t i = 2 * 99; i < 3 * 99; ++i) v[i] = -1.0 - std::abs(v[i]);
  return from_vector(v, {2, 3, 9, 11}, dtype(dt));
}

TEST(CudaBlasNN, MaxPool2dValuesAndIndices) {
  CUDA_TEST_SETUP();
  for (ScalarType dt : kDtypes) {
    for (const Win& w : kWindows) {
      if (w.p.h * 2 > w.k.h || w.p.w * 2 > w.k.w) continue;  // PyTorch's padding limit
      SCOPED_TRACE(to_string(dt) + " kernel " + w.k.str() + " stride " + w.s.str());
      const Tensor x0 = pool_input(dt);
      Tensor vc, ic, vg, ig;
      std::tie(vc, ic) = max_pool2d_with_indices(x0, w.k, w.s, w.p, w.d);
      std::tie(vg, ig) = max_pool2d_with_indices(x0.cuda(), w.k, w.s, w.p, w.d);
      expect_close(vg, vc, "max_pool2d values", /*exact=*/true);
      EXPECT_EQ(checks::ivals(ig), checks::ivals(ic)) << "max_pool2d indices";
    }
  }
}

TEST(CudaBlasNN, MaxPool2dOfStridedInput) {
  CUDA_TEST_SETUP();
  const Tensor x0 = pool_input(kFloat32);
  Tensor vc, ic, vg, ig;
  std::tie(vc, ic) = max_pool2d_with_indices(x0, {3, 2}, IntPair{2, 1}, {1, 1});
  for (const Tensor& xs : strided_layouts(x0)) {
    EXPECT_FALSE(xs.is_contiguous());
    std::tie(vg, ig) = max_pool2d_with_indices(xs, {3, 2}, IntPair{2, 1}, {1, 1});
    expect_close(vg, vc, "max_pool2d of a strided input", true);
    EXPECT_EQ(checks::ivals(ig), checks::ivals(ic));
  }
}

TEST(CudaBlasNN, MaxPool2dGradientNeedsScatterAdd) {
  CUDA_TEST_SETUP();
  for (ScalarType dt : kDtypes) {
    const Tensor x0 = rnd({2, 3, 9, 11}, dt, 42);
    Tensor xc = cpu_leaf(x0, true), xg = to_cuda_leaf(x0, true);
    Tensor yc = max_pool2d(xc, {3, 3}, IntPair{2, 2}, {1, 1}),
           yg = max_pool2d(xg, {3, 3}, IntPair{2, 2}, {1, 1});
    const Tensor dy = rnd(yc.sizes(), dt, 43);
    yc.backward(dy);
    yg.backward(dy.cuda());
    expect_close(xg.grad(), xc.grad(), "max_pool2d dx (overlapping windows add up)");
  }
}

// ---- relu backward (threshold_backward)
// ----------------------------------------------------------

TEST(CudaBlasNN, ReluBackwardAndThresholdBackward) {
  CUDA_TEST_SETUP();
  for (ScalarType dt : kDtypes) {
    SCOPED_TRACE(to_string(dt));
    std::vector<double> v = vals(rnd({7, 13}, kFloat64, 51));
    v[3] = 0.0, v[4] = -0.0;  // relu'(0) = 0, as in PyTorch
    const Tensor x0 = from_vector(v, {7, 13}, dtype(dt));
    Tensor xc = cpu_leaf(x0, true), xg = to_cuda_leaf(x0, true);
    Tensor yc = relu(xc), yg = relu(xg);
    expect_close(yg, yc, "relu", true);
    const Tensor dy = rnd({7, 13}, dt, 52);
    yc.backward(dy);
    yg.backward(dy.cuda());
    expect_close(xg.grad(), xc.grad(), "relu backward", true);
    // strided grad, y of another dtype (converted to grad's), a nonzero threshold
    const Tensor g0 = rnd({13, 7}, dt, 53).t(), y0 = rnd({7, 13}, kFloat64, 54);
    expect_close(threshold_backward(g0.cuda(), y0.cuda(), 0.25), threshold_backward(g0, y0, 0.25),
                 "threshold_backward, strided grad, float64 y", true);
  }
}

// ---- cross-entropy -----------------------------------------------------------------------------

struct CeCase {
  int64_t ignore;
  double smoothing;
};
const CeCase kCeCases[] = {{-100, 0.0}, {-100, 0.1}, {2, 0.0}, {2, 0.25}};
// Class indices with two rows to ignore (marked -1: replaced by the case's ignore_index; with
// ignore_index 2 the rows whose class is 2 are skipped too).
Tensor ce_targets(int64_t ignore) {
  std::vector<int64_t> t = {0, 4, -1, 2, 1, 2, 3, -1, 4};
  for (int64_t& v : t) v = v < 0 ? ignore : v;
  return from_vector(t, {9}, dtype(kInt64));
}

TEST(CudaBlasNN, CrossEntropyPerRowForwardAndBackward) {
  CUDA_TEST_SETUP();
  for (ScalarType dt : kDtypes) {
    for (const CeCase& cc : kCeCases) {
      SCOPED_TRACE(to_string(dt) + " ignore_index " + std::to_string(cc.ignore) + " smoothing " +
                   std::to_string(cc.smoothing));
      // large logits in one row (max subtraction) and a -inf in another
      std::vector<double> v = vals(rnd({9, 5}, kFloat64, 61));
      v[0] = 80, v[1] = 95, v[7] = -std::numeric_limits<double>::infinity();
      const Tensor x0 = from_vector(v, {9, 5}, dtype(dt));
      const Tensor t = ce_targets(cc.ignore);
      const auto opts = CrossEntropyFuncOptions()
                            .ignore_index(cc.ignore)
                            .label_smoothing(cc.smoothing)
                            .reduction(nn::functional::kNone);
      Tensor xc = cpu_leaf(x0, true), xg = to_cuda_leaf(x0, true);
      Tensor lc = cross_entropy(xc, t, opts), lg = cross_entropy(xg, t.cuda(), opts);
      expect_close(lg, lc, "loss per row", true);
      const Tensor dl = rnd({9}, dt, 62);
      lc.backward(dl);
      lg.backward(dl.cuda());
      expect_close(xg.grad(), xc.grad(), "dlogits", true);
    }
  }
}

TEST(CudaBlasNN, CrossEntropyMeanAndSumNeedReduce) {
  CUDA_TEST_SETUP();
  for (ScalarType dt : kDtypes) {
    for (const CeCase& cc : kCeCases) {
      for (auto r : {nn::functional::kMean, nn::functional::kSum}) {
        const Tensor x0 = rnd({9, 5}, dt, 63);
        const Tensor t = ce_targets(cc.ignore);
        const auto opts = CrossEntropyFuncOptions()
                              .ignore_index(cc.ignore)
                              .label_smoothing(cc.smoothing)
                              .reduction(r);
        Tensor xc = cpu_leaf(x0, true), xg = to_cuda_leaf(x0, true);
        Tensor lc = cross_entropy(xc, t, opts), lg = cross_entropy(xg, t.cuda(), opts);
        expect_close(lg, lc, "reduced loss");
        lc.backward();
        lg.backward();
        expect_close(xg.grad(), xc.grad(), "dlogits (reduced)");
      }
    }
  }
}

TEST(CudaBlasNN, CrossEntropyManyRowsAndBadTargets) {
  CUDA_TEST_SETUP();
  // > 1024 rows: the target check runs in chunks of 1024 and the first bad row is the one named
  const int64_t N = 2500;
  std::vector<int64_t> tv(N);
  for (int64_t i = 0; i < N; ++i) tv[i] = i % 7 == 3 ? -100 : i % 3;
  const Tensor x0 = rnd({N, 3}, kFloat32, 64);
  const auto none = CrossEntropyFuncOptions().reduction(nn::functional::kNone);
  expect_close(cross_entropy(x0.cuda(), from_vector(tv, {N}, dtype(kInt64)).cuda(), none),
               cross_entropy(x0, from_vector(tv, {N}, dtype(kInt64)), none), "2500 rows", true);
  tv[2100] = 3, tv[2400] = -1;
  const Tensor bad = from_vector(tv, {N}, dtype(kInt64));
  // raised at the next synchronization (the .cpu()), or at the op with GRADLAB_CUDA_SYNC=1
  try {
    (void)cross_entropy(x0.cuda(), bad.cuda(), none).cpu();
    ADD_FAILURE() << "no error for a target out of range";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cross_entropy: target out of range at position 2100"), std::string::npos) << msg;
    EXPECT_NE(msg.find("a class index in [0, 3)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("got 3"), std::string::npos) << msg;
  }
  // the CPU says the same
  try {
    (void)cross_entropy(x0, bad, none);
    ADD_FAILURE() << "no CPU error";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("position 2100"), std::string::npos);
  }
  // a negative target in the first chunk
  std::vector<int64_t> t2 = {0, 1, -5, 2};
  EXPECT_THROW((void)cross_entropy(rnd({4, 3}, kFloat64, 1).cuda(),
                                   from_vector(t2, {4}, dtype(kInt64)).cuda(), none).cpu(),
               ShapeError);
  EXPECT_NO_THROW(cuda::synchronize());
}

// The target check and the valid-row count stay on the device: the op returns without waiting,
// a bad row's loss is NaN (its logits are never read through the bad label), the mean divides
// by the count on the device, and the error comes at the next synchronization.
TEST(CudaBlasNN, CrossEntropyTargetErrorIsDeferredAndTheMeanUsesTheDeviceCount) {
  CUDA_TEST_SETUP();
  const Tensor x = rnd({5, 4}, kFloat64, 8);
  const std::vector<int64_t> good{0, -100, 3, 2, -100};  // two rows ignored: mean over 3
  for (double smoothing : {0.0, 0.1}) {
    const auto opts = CrossEntropyFuncOptions().label_smoothing(smoothing);
    Tensor xc = x.cuda().requires_grad_(), xg = x.clone().requires_grad_();
    Tensor lc = cross_entropy(xc, from_vector(good, {5}, dtype(kInt64)).cuda(), opts);
    Tensor lg = cross_entropy(xg, from_vector(good, {5}, dtype(kInt64)), opts);
    expect_close(lc, lg, "mean over the kept rows");
    lc.backward();
    lg.backward();
    expect_close(xc.grad(), xg.grad(), "dlogits / valid rows");
  }
  // every row ignored: 0 / 0 = NaN, as on the CPU
  const std::vector<int64_t> none_kept(5, -100);
  EXPECT_TRUE(std::isnan(cross_entropy(x.cuda(), from_vector(none_kept, {5}, dtype(kInt64)).cuda()).item<double>()));
  EXPECT_TRUE(std::isnan(cross_entropy(x, from_vector(none_kept, {5}, dtype(kInt64))).item<double>()));
  if (testing_cuda::sync_each_launch()) return;  // then the error is raised at the op
  const std::vector<int64_t> bad{0, 1, 9, 2, 7};
  Tensor per_row;
  ASSERT_NO_THROW(per_row = cross_entropy(x.cuda(), from_vector(bad, {5}, dtype(kInt64)).cuda(),
                                          CrossEntropyFuncOptions().reduction(nn::functional::kNone)));
  try {
    cuda::synchronize();
    ADD_FAILURE() << "no error at the synchronization";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cross_entropy: target out of range at position 2; expected a class index in [0, 4), got 9"),
              std::string::npos) << msg;
    EXPECT_NE(msg.find("raised at the next synchronization, cuda::synchronize"), std::string::npos) << msg;
  }
  const std::vector<double> rows = per_row.cpu().to_vector<double>();
  EXPECT_TRUE(std::isnan(rows[2]) && std::isnan(rows[4])) << "bad rows are NaN";
  EXPECT_FALSE(std::isnan(rows[0]) || std::isnan(rows[1]) || std::isnan(rows[3]));
  // blocking checks: raised at the op, word for word the CPU's message
  cuda::set_blocking_index_checks(true);
  std::string gpu_msg, cpu_msg;
  try {
    (void)cross_entropy(x.cuda(), from_vector(bad, {5}, dtype(kInt64)).cuda());
  } catch (const ShapeError& e) {
    gpu_msg = e.what();
  }
  cuda::set_blocking_index_checks(false);
  try {
    (void)cross_entropy(x, from_vector(bad, {5}, dtype(kInt64)));
  } catch (const ShapeError& e) {
    cpu_msg = e.what();
  }
  EXPECT_FALSE(cpu_msg.empty());
  EXPECT_EQ(gpu_msg, cpu_msg);
}

// ---- fused optimizer steps
// -----------------------------------------------------------------------

// A deterministic gradient for step t: 2 (p - 0.1 t) + 0.5 p², computed on the CPU.
Tensor fake_grad(const Tensor& p_cpu, int t) {
  std::vector<double> v = vals(p_cpu);
  for (double& x : v) x = 2 * (x - 0.1 * t) + 0.5 * x * x;
  return from_vector(v, p_cpu.sizes(), dtype(p_cpu.dtype()));
}

// Runs `steps` steps of the same optimizer on CPU parameters (composite update, the reference:
// kern::set_cpu_fused_step(false)) and on CUDA copies (fused kernel where it applies), comparing
// the parameters after each step.
// exact: on the emulator the fused kernel must reproduce the composite bit for bit.
template <class Opt, class Options>
void check_optimizer(const Options& o, ScalarType dt, bool expect_fused, const std::string& what) {
  SCOPED_TRACE(what + " " + to_string(dt));
  // The CPU side is the composite (CPU parameters take the fused update by default).
  struct CompositeOnCpu {
    bool was = kern::set_cpu_fused_step(false);
    ~CompositeOnCpu() { kern::set_cpu_fused_step(was); }
  } composite_on_cpu;
  const Tensor a0 = rnd({3, 33}, dt, 71), b0 = rnd({5}, dt, 72);
  std::vector<Tensor> pc = {cpu_leaf(a0, true), cpu_leaf(b0, true)};
  std::vector<Tensor> pg = {to_cuda_leaf(a0, true), to_cuda_leaf(b0, true)};
  Opt oc(pc, o), og(pg, o);
  for (int t = 0; t < 5; ++t) {
    for (size_t i = 0; i < pc.size(); ++i) {
      Tensor g = fake_grad(pc[i], t);
      pc[i].mutable_grad() = g;
      pg[i].mutable_grad() = g.cuda();
    }
    oc.step();
    const std::size_t before = cuda::memory_allocated();
    cuda::reset_peak_memory_stats();
    const uint32_t version = pg[0].version();
    og.step();
    EXPECT_GT(pg[0].version(), version) << "the step must bump the parameter's version";
    // The fused kernel works in place: from the second step on (state exists), no temporaries.
    if (expect_fused && t > 0) {
      EXPECT_EQ(cuda::max_memory_allocated(), before)
          << "step " << t << " allocated temporaries: not fused?";
    }
    for (size_t i = 0; i < pc.size(); ++i)
      expect_close(pg[i].detach(), pc[i].detach(),
                   "param " + std::to_string(i) + " after step " + std::to_string(t + 1),
                   /*exact=*/true);
  }
}

TEST(CudaBlasNN, FusedSgdMatchesComposite) {
  CUDA_TEST_SETUP();
  using optim::SGD;
  using optim::SGDOptions;
  for (ScalarType dt : kDtypes) {
    check_optimizer<SGD>(SGDOptions(0.1), dt, true, "plain");
    check_optimizer<SGD>(SGDOptions(0.1).weight_decay(0.01), dt, true, "weight decay");
    check_optimizer<SGD>(SGDOptions(0.1).momentum(0.9).dampening(0.1).weight_decay(0.01), dt, true,
                         "momentum + dampening + weight decay");
    check_optimizer<SGD>(SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(0.1), dt, true,
                         "nesterov");
    check_optimizer<SGD>(SGDOptions(0.1).momentum(0.5).maximize(true), dt, false,
                         "maximize (composite on CUDA)");
  }
}

TEST(CudaBlasNN, FusedAdamAndAdamWMatchComposite) {
  CUDA_TEST_SETUP();
  using optim::Adam;
  using optim::AdamOptions;
  using optim::AdamW;
  using optim::AdamWOptions;
  for (ScalarType dt : kDtypes) {
    check_optimizer<Adam>(AdamOptions(0.01), dt, true, "Adam");
    check_optimizer<Adam>(AdamOptions(0.01).betas({0.8, 0.99}).eps(1e-6).weight_decay(0.1), dt,
                          true, "Adam + L2 weight decay");
    check_optimizer<AdamW>(AdamWOptions(0.01), dt, true, "AdamW");
    check_optimizer<AdamW>(AdamWOptions(0.02).betas({0.5, 0.9}).weight_decay(0.2), dt, true,
                           "AdamW, strong decay");
    check_optimizer<Adam>(AdamOptions(0.01).amsgrad(true), dt, false,
                          "Adam amsgrad (composite on CUDA)");
    check_optimizer<AdamW>(AdamWOptions(0.01).maximize(true), dt, false,
                           "AdamW maximize (composite on CUDA)");
  }
}

TEST(CudaBlasNN, FusedStepKeepsStateLikeComposite) {
  CUDA_TEST_SETUP();
  // The state the fused path leaves is the composite's: same keys, values, devices.
  Tensor pc = cpu_leaf(rnd({4}, kFloat32, 81), true),
         pg = to_cuda_leaf(rnd({4}, kFloat32, 81), true);
  optim::SGD oc(std::vector<Tensor>{pc}, optim::SGDOptions(0.1).momentum(0.9));
  optim::SGD og(std::vector<Tensor>{pg}, optim::SGDOptions(0.1).momentum(0.9));
  for (int t = 0; t < 2; ++t) {
    Tensor g = fake_grad(pc, t);
    pc.mutable_grad() = g;
    pg.mutable_grad() = g.cuda();
    oc.step();
    og.step();
  }
  const Tensor& bc = oc.state(pc).at("momentum_buffer");
  const Tensor& bg = og.state(pg).at("momentum_buffer");
  EXPECT_TRUE(bg.is_cuda());
  expect_close(bg, bc, "momentum_buffer", true);
  optim::Adam ac(std::vector<Tensor>{pc}, optim::AdamOptions(0.01));
  optim::Adam ag(std::vector<Tensor>{pg}, optim::AdamOptions(0.01));
  ac.step();
  ag.step();
  EXPECT_EQ(ag.state(pg).at("step").item<double>(), 1.0);
  expect_close(ag.state(pg).at("exp_avg"), ac.state(pc).at("exp_avg"), "exp_avg", true);
  expect_close(ag.state(pg).at("exp_avg_sq"), ac.state(pc).at("exp_avg_sq"), "exp_avg_sq", true);
}

// ---- GPU-only entry points: the tiled teaching kernel and the plain cuBLAS call
// --------------------

TEST(CudaBlasNN, TiledMatmulNeedsARealGpu) {
  CUDA_TEST_SETUP();
  if (!on_emulator()) GTEST_SKIP() << "checks the emulator's refusal";
  const Tensor a = rnd({4, 3}, kFloat32, 1).cuda(), b = rnd({3, 2}, kFloat32, 2).cuda();
  for (auto f : {&cuda::tiled_matmul, &cuda::cublas_matmul}) {
    try {
      (void)f(a, b);
      ADD_FAILURE() << "no error on the emulator";
    } catch (const DeviceError& e) {
      EXPECT_NE(std::string(e.what()).find("needs a real GPU"), std::string::npos) << e.what();
    }
  }
}

TEST(CudaBlasNN, TiledMatmulOnDevice) {
  if (on_emulator())
    GTEST_SKIP() << "the tiled kernel runs only on a real GPU (GRADLAB_TEST_CUDA=device)";
  CUDA_TEST_SETUP();
  struct Mnk {
    int64_t m, k, n;
  };
  for (ScalarType dt : kDtypes) {
    for (Mnk s : {Mnk{1, 1, 1}, Mnk{31, 31, 31}, Mnk{33, 33, 33}, Mnk{64, 64, 64},
                  Mnk{100, 37, 129}, Mnk{5, 0, 3}}) {
      SCOPED_TRACE(to_string(dt) + " " + std::to_string(s.m) + "x" + std::to_string(s.k) + " @ " +
                   std::to_string(s.k) + "x" + std::to_string(s.n));
      const Tensor a = rnd({s.m, s.k}, dt, 91), b = rnd({s.k, s.n}, dt, 92);
      const Tensor want = matmul(a, b);
      Tensor got = cuda::tiled_matmul(a.cuda(), b.cuda());
      EXPECT_TRUE(got.is_contiguous());
      expect_close(got, want, "tiled_matmul");
      expect_close(cuda::cublas_matmul(a.cuda(), b.cuda()), want, "cublas_matmul");
      // transposed operands: a copy for the tiled kernel, op T for cuBLAS
      expect_close(cuda::tiled_matmul(a.t().contiguous().cuda().t(), b.cuda()), want,
                   "tiled_matmul, aᵀ view");
      expect_close(cuda::cublas_matmul(a.cuda(), b.t().contiguous().cuda().t()), want,
                   "cublas_matmul, bᵀ view");
    }
  }
  EXPECT_THROW(
      (void)cuda::tiled_matmul(rnd({2, 3}, kFloat32, 1).cuda(), rnd({2, 3}, kFloat32, 2).cuda()),
      ShapeError);
  EXPECT_THROW((void)cuda::tiled_matmul(rnd({2, 3}, kFloat32, 1), rnd({3, 2}, kFloat32, 2)),
               DeviceError);
}

}  // namespace
}  // namespace gradlab

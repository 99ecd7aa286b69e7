// Bit-identical results for any thread count (core/parallel.hpp): sum, mean, softmax, log_softmax,
// gelu and its backward, a matmul-free MLP's forward and backward, and an Adam step, at 1..8 threads, compared bit for
// bit with 1 thread. PyTorch does not promise this; gradlab does.

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstring>
#include <vector>

#include "gradlab/backend/cpu/parallel.hpp"
#include "gradlab/gradlab.hpp"

namespace gradlab {
namespace {

// The bytes of a float32 or float64 tensor (contiguous copy first).
std::vector<unsigned char> bits(const Tensor& t) {
  const Tensor c = t.contiguous();
  const bool f64 = c.dtype() == kFloat64;
  std::vector<unsigned char> b(static_cast<size_t>(c.numel()) * (f64 ? sizeof(double) : sizeof(float)));
  if (!b.empty()) std::memcpy(b.data(), f64 ? static_cast<const void*>(c.data_ptr<double>()) : c.data_ptr<float>(), b.size());
  return b;
}

struct ThreadsGuard {
  int saved = get_num_threads();
  ~ThreadsGuard() { set_num_threads(saved); }
};

// Everything the property compares, computed at the current thread count from one seed.
// NOTE: float32 sums accumulate in double, so a changed summation order rarely shows in their
// bits; float64 cases are the ones that catch it.
std::vector<std::vector<unsigned char>> run(int64_t B, int64_t F, ScalarType dt, uint64_t seed) {
  Generator gen(seed);
  const Tensor x = randn({B, F}, dtype(dt), &gen) * 3.0;
  const Tensor y = randn({B}, dtype(dt), &gen);
  std::vector<std::vector<unsigned char>> r;
  r.push_back(bits(sum(x)));
  r.push_back(bits(mean(x)));
  r.push_back(bits(sum(x, {0})));  // leading dims: the bias-gradient path
  r.push_back(bits(sum(x, {1})));
  r.push_back(bits(softmax(x, -1)));
  r.push_back(bits(log_softmax(x, -1)));
  r.push_back(bits(gelu(x)));                        // float32: polynomial or formula per vector
  r.push_back(bits(gelu_backward(x * 0.5 + 1.0, x)));  // gelu's one-pass backward
  // MLP without a matmul: out_b = Σ_f w2_f tanh(x_bf w1_f + b1_f), loss = mean((out - y)²).
  Tensor w1 = randn({F}, dtype(dt), &gen).requires_grad_(),
         b1 = randn({F}, dtype(dt), &gen).requires_grad_(),
         w2 = randn({F}, dtype(dt), &gen).requires_grad_();
  const Tensor out = sum(tanh(x * w1 + b1) * w2, {1});
  const Tensor loss = mean(pow(out - y, 2));
  loss.backward();
  r.push_back(bits(out));
  r.push_back(bits(loss));
  for (const Tensor* p : {&w1, &b1, &w2}) r.push_back(bits(p->grad()));
  optim::Adam adam({w1, b1, w2}, optim::AdamOptions(1e-2));
  adam.step();
  adam.step();
  for (const Tensor* p : {&w1, &b1, &w2}) r.push_back(bits(*p));
  return r;
}

RC_GTEST_PROP(Threads, BitIdenticalForAnyThreadCount, ()) {
  // NOTE: resize(100): inRange scales with RapidCheck's size, which starts at 0; without it most
  // cases would be too small to split.
  const auto B = *rc::gen::resize(100, rc::gen::inRange<int64_t>(1, 600));
  const auto F = *rc::gen::resize(100, rc::gen::inRange<int64_t>(1, 600));
  const ScalarType dt = *rc::gen::element(kFloat32, kFloat64);
  const auto seed = *rc::gen::arbitrary<uint32_t>();
  // Cases too small to split test nothing; most are large enough (see the printed split).
  RC_CLASSIFY(B * F > 2 * cpu::kGrain, "split over threads");
  RC_CLASSIFY(dt == kFloat64, "float64");
  ThreadsGuard guard;
  set_num_threads(1);
  const auto ref = run(B, F, dt, seed);
  for (int t = 2; t <= 8; ++t) {
    set_num_threads(t);
    const auto got = run(B, F, dt, seed);
    for (size_t k = 0; k < ref.size(); ++k) {
      if (got[k] != ref[k]) RC_FAIL("result " + std::to_string(k) + " differs at " + std::to_string(t) + " threads");
    }
  }
}

}  // namespace
}  // namespace gradlab

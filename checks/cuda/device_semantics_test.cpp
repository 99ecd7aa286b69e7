// Device semantics of CUDA tensors (on the host emulator by default, on a GPU under the `cuda`
// label): moving tensors, autograd across devices, device-mixing errors, memory statistics,
// out-of-memory errors, poisoning, half-precision storage, and the no-GPU error path.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "cuda_env.hpp"
#include "gradlab/backend/cuda/allocator.hpp"
#include "gradlab/backend/cuda/exec.hpp"
#include "gradlab/backend/cuda/runtime.hpp"
#include "gradlab/gradlab.hpp"
#include "gradlab/testing/gradcheck.hpp"

using namespace gradlab;
using ::testing::HasSubstr;

// A test of host code only (no CUDA tensor): it runs in the emulator pass, not again on a GPU.
#define HOST_ONLY() \
  if (testing_cuda::want_device()) GTEST_SKIP() << "host-only test: covered by the emulator run"

namespace {
const Device kCuda(kCUDA);
TensorOptions f64() { return TensorOptions().dtype(kFloat64); }
}  // namespace

// ---- without a GPU: clear errors ------------------------------------------------------------
TEST(CudaNoDevice, MovingATensorSaysWhyCudaIsUnavailable) {
  if (testing_cuda::want_device()) GTEST_SKIP() << "this test is about machines without a GPU";
  if (cuda::emulator::enabled()) cuda::emulator::disable();
  if (cuda::is_available()) GTEST_SKIP() << "a GPU is present";
  EXPECT_EQ(cuda::device_count(), 0);
  EXPECT_FALSE(cuda::unavailable_reason().empty());
  try {
    (void)ones({2}).cuda();
    FAIL() << "expected DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("to: CUDA is not available"));
    EXPECT_THAT(e.what(), HasSubstr(cuda::unavailable_reason()));
  }
  EXPECT_THROW((void)zeros({2}, TensorOptions().device(kCuda)), DeviceError);
  EXPECT_EQ(cuda::memory_allocated(), 0u);
  cuda::synchronize();  // a no-op, not a crash
}

// ---- moving tensors ---------------------------------------------------------------------------
TEST(CudaDevice, ToCudaAndBackKeepsValuesDtypesAndShapes) {
  GRADLAB_USE_CUDA_BACKEND();
  manual_seed(1);
  for (ScalarType dt : {kFloat32, kFloat64, kInt64, kBool}) {
    Tensor x = randint(-5, 5, {3, 4, 5}).to(dt);
    Tensor c = x.cuda();
    EXPECT_TRUE(c.is_cuda());
    EXPECT_EQ(c.device().str(), "cuda:0");
    EXPECT_EQ(c.dtype(), dt);
    EXPECT_EQ(c.sizes(), x.sizes());
    Tensor back = c.cpu();
    EXPECT_TRUE(back.is_cpu());
    EXPECT_TRUE(equal(back, x)) << to_string(dt);
  }
  // a strided view moves as its logical values
  Tensor x = arange(24, f64()).reshape({4, 6}).transpose(0, 1).slice(0, 1, 5, 2);
  EXPECT_TRUE(equal(x.cuda().cpu(), x));
  // empty and 0-d
  EXPECT_EQ(empty({0, 3}).cuda().cpu().sizes(), (Shape{0, 3}));
  EXPECT_EQ(tensor(2.5).cuda().item<double>(), 2.5);
}

TEST(CudaDevice, FactoriesTakeADeviceAndDrawTheSameNumbersAsOnTheCpu) {
  GRADLAB_USE_CUDA_BACKEND();
  manual_seed(7);
  Tensor a = randn({5, 3}, f64());
  manual_seed(7);
  Tensor b = randn({5, 3}, f64().device(kCuda));
  EXPECT_TRUE(b.is_cuda());
  EXPECT_TRUE(equal(b.cpu(), a));
  Tensor z = zeros({2, 3}, TensorOptions().device(kCuda));
  EXPECT_TRUE(z.is_cuda());
  EXPECT_EQ(z.sum().item<double>(), 0.0);
  Tensor f = full({4}, 1.5, TensorOptions().device(kCuda));
  EXPECT_EQ(f.to_vector<double>(), (std::vector<double>{1.5, 1.5, 1.5, 1.5}));
  Tensor t = tensor({1.0, 2.0}, TensorOptions().device(kCuda));
  EXPECT_TRUE(t.is_cuda());
  EXPECT_THAT(t.str(), HasSubstr("device='cuda:0'"));
}

TEST(CudaDevice, GradientsFlowBackThroughTheCopyToTheCpuLeaf) {
  GRADLAB_USE_CUDA_BACKEND();
  Tensor x = tensor({1.0, -2.0, 3.0}, f64().requires_grad(true));
  Tensor y = x.cuda() * x.cuda();  // two copies, one leaf
  EXPECT_TRUE(y.is_cuda());
  EXPECT_EQ(y.grad_fn()->name(), "MulBackward0");
  Tensor loss = (y * 3.0).cpu();
  loss.backward(ones_like(loss));
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(x.grad().is_cpu());
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{6.0, -12.0, 18.0}));  // 6x
}

TEST(CudaDevice, ACudaLeafGetsItsGradientOnTheDevice) {
  GRADLAB_USE_CUDA_BACKEND();
  Tensor w = full({2, 2}, 2.0, f64().device(kCuda).requires_grad(true));
  Tensor loss = (w * w).sum();
  loss.backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_TRUE(w.grad().is_cuda());
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>(4, 4.0)));
}

TEST(CudaDevice, MixingDevicesInOneOpNamesBothDevices) {
  GRADLAB_USE_CUDA_BACKEND();
  Tensor a = ones({3}), b = ones({3}).cuda();
  for (auto f : {+[](const Tensor& x, const Tensor& y) { return x + y; },
                 +[](const Tensor& x, const Tensor& y) { return x * y; },
                 +[](const Tensor& x, const Tensor& y) { return cat({x, y}); }}) {
    try {
      (void)f(a, b);
      FAIL() << "expected DeviceError";
    } catch (const DeviceError& e) {
      EXPECT_THAT(e.what(), HasSubstr("cpu"));
      EXPECT_THAT(e.what(), HasSubstr("cuda:0"));
    }
  }
  // copy_ across devices is allowed (how a CPU state_dict loads into a CUDA model)
  Tensor dst = zeros({3}).cuda();
  dst.copy_(full({3}, 4.0));
  EXPECT_EQ(dst.to_vector<double>(), (std::vector<double>{4, 4, 4}));
}

TEST(CudaDevice, ModuleToMovesParametersInPlaceAndLoadsACpuStateDict) {
  GRADLAB_USE_CUDA_BACKEND();
  manual_seed(3);
  nn::Linear lin(4, 2);
  Tensor w_handle = lin->weight;  // handles taken before the move see the moved tensor
  StateDict cpu_state = lin->state_dict();
  lin->to(kCuda);
  for (const Tensor& p : lin->parameters()) EXPECT_TRUE(p.is_cuda());
  EXPECT_TRUE(w_handle.is_cuda());
  EXPECT_TRUE(equal(lin->weight.cpu(), cpu_state.at("weight")));
  // load a CPU dict into the CUDA module
  StateDict zeros_dict;
  zeros_dict.insert("weight", zeros({2, 4}));
  zeros_dict.insert("bias", full({2}, 0.5));
  lin->load_state_dict(zeros_dict);
  EXPECT_TRUE(lin->weight.is_cuda());
  EXPECT_EQ(lin->bias.to_vector<double>(), (std::vector<double>{0.5, 0.5}));
  lin->to(Device(kCPU));
  EXPECT_TRUE(lin->weight.is_cpu());
}

// ---- memory -----------------------------------------------------------------------------------
TEST(CudaMemory, AllocatedPeakResetAndEmptyCache) {
  GRADLAB_USE_CUDA_BACKEND();
  cuda::empty_cache();
  const std::size_t base = cuda::memory_allocated();
  cuda::reset_peak_memory_stats();
  {
    Tensor a = empty({1000}, TensorOptions().device(kCuda));  // 4000 B -> 4096 B block
    EXPECT_EQ(cuda::memory_allocated(), base + 4096);
    {
      Tensor b = empty({3 << 20}, TensorOptions().device(kCuda));  // 12 MiB
      EXPECT_EQ(cuda::memory_allocated(), base + 4096 + (std::size_t{12} << 20));
    }
    EXPECT_EQ(cuda::memory_allocated(), base + 4096);
    EXPECT_EQ(cuda::max_memory_allocated(), base + 4096 + (std::size_t{12} << 20));
    EXPECT_GE(cuda::memory_reserved(), cuda::memory_allocated() + (std::size_t{12} << 20));  // cached
    cuda::reset_peak_memory_stats();
    EXPECT_EQ(cuda::max_memory_allocated(), cuda::memory_allocated());
  }
  cuda::empty_cache();
  EXPECT_EQ(cuda::memory_reserved(), cuda::memory_allocated());
  EXPECT_EQ(cuda::memory_allocated(), base);
}

TEST(CudaMemory, OutOfMemoryNamesTheSizeWhatGradlabHoldsAndWhatToTry) {
  if (testing_cuda::want_device()) {
    GRADLAB_USE_CUDA_BACKEND();
    // On a GPU: ask for more than the device has.
    const auto info = cuda::mem_get_info();
    try {
      (void)empty({static_cast<int64_t>(info.total / 4 + (1 << 20))}, TensorOptions().device(kCuda));
      FAIL() << "expected OutOfMemoryError";
    } catch (const OutOfMemoryError& e) {
      EXPECT_THAT(e.what(), HasSubstr("out of memory"));
    }
    return;
  }
  // On the emulator with 8 MiB of "device" memory.
  if (cuda::emulator::enabled()) cuda::emulator::disable();
  cuda::emulator::enable(std::size_t{8} << 20);
  {
    Tensor keep = empty({1 << 20}, TensorOptions().device(kCuda));  // 4 MiB
    try {
      (void)empty({static_cast<int64_t>(3) << 20}, TensorOptions().device(kCuda));  // 12 MiB
      FAIL() << "expected OutOfMemoryError";
    } catch (const OutOfMemoryError& e) {
      const std::string m = e.what();
      EXPECT_THAT(m, HasSubstr("out of memory"));
      EXPECT_THAT(m, HasSubstr("12.0 MiB"));                 // what was asked
      EXPECT_THAT(m, HasSubstr("4.0 MiB in live tensors"));  // what gradlab holds
      EXPECT_THAT(m, HasSubstr("free of 8.0 MiB total"));    // free of total
      EXPECT_THAT(m, HasSubstr("smaller batch"));
      EXPECT_THAT(m, HasSubstr("gradient accumulation"));
      EXPECT_THAT(m, HasSubstr("mixed precision"));
      EXPECT_THAT(m, HasSubstr("NoGradGuard"));
    }
    EXPECT_EQ(cuda::memory_allocated(), std::size_t{4} << 20);  // a failed allocation holds nothing
  }
  // Cached blocks are handed back to the driver before giving up: 6 MiB cached, then 6 MiB of
  // another size fits only after the cache is emptied.
  { Tensor a = empty({3 << 19}, TensorOptions().device(kCuda)); }
  EXPECT_GT(cuda::memory_reserved(), 0u);
  { Tensor b = empty({(3 << 19) + 1024}, TensorOptions().device(kCuda)); }
  cuda::empty_cache();
  cuda::emulator::disable();
  cuda::emulator::enable();
}

TEST(CudaMemory, CachingAllocatorReusesBlocksBySizeClass) {
  HOST_ONLY();
  struct Fake : cuda_rt::RawMemory {
    std::size_t used = 0, cap = 1 << 20, calls = 0;
    void* malloc(std::size_t n) override {
      ++calls;
      if (used + n > cap) return nullptr;
      used += n;
      return ::operator new(n);
    }
    void free(void* p) override { ::operator delete(p); used = 0; }
    std::pair<std::size_t, std::size_t> mem_info() override { return {cap - used, cap}; }
    std::string where() const override { return "fake"; }
  } raw;
  cuda_rt::CachingAllocator a(raw);
  EXPECT_EQ(cuda_rt::CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(cuda_rt::CachingAllocator::round_size(513), 1024u);
  EXPECT_EQ(cuda_rt::CachingAllocator::round_size((1 << 20) + 1), std::size_t{2} << 20);
  EXPECT_EQ(cuda_rt::CachingAllocator::round_size((2 << 20) + 1), std::size_t{4} << 20);
  void* p = a.malloc(1000, "t");
  a.free(p);
  void* q = a.malloc(900, "t");  // same 1024 B class: the cached block, no driver call
  EXPECT_EQ(p, q);
  EXPECT_EQ(raw.calls, 1u);
  EXPECT_EQ(a.stats().allocated, 1024u);
  a.free(q);
  EXPECT_EQ(a.stats().cached, 1024u);
  EXPECT_THROW(a.malloc(std::size_t{2} << 20, "t"), OutOfMemoryError);
}

TEST(CudaMemory, PoisonedAllocationsShowUnwrittenElements) {
  GRADLAB_USE_CUDA_BACKEND();
  cuda::set_poison_allocations(true);
  Tensor e = empty({4}, TensorOptions().device(kCuda));
  cuda::set_poison_allocations(false);
  const float poison = [] {
    float f;
    uint32_t u = 0x7F7F7F7Fu;
    std::memcpy(&f, &u, 4);
    return f;
  }();
  for (double v : e.to_vector<double>()) EXPECT_EQ(v, poison);
}

TEST(CudaErrors, AFailedCudaCallBecomesAnErrorWithTheCallTheCodeAndTheOp) {
  HOST_ONLY();
  try {
    cuda_rt::throw_cuda_error(2, "cudaErrorMemoryAllocation", "out of memory", "cudaMalloc(&p, n)", "matmul");
    FAIL();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_THAT(m, HasSubstr("matmul: CUDA call failed: cudaMalloc(&p, n) returned cudaErrorMemoryAllocation (2)"));
    EXPECT_THAT(m, HasSubstr("GRADLAB_CUDA_SYNC=1"));
  }
}

// ---- float16 / bfloat16 storage ---------------------------------------------------------------
TEST(HalfStorage, EveryHalfRoundTripsThroughFloatExactly) {
  HOST_ONLY();
  for (uint32_t b = 0; b < 65536; ++b) {
    const gradlab::Half h{static_cast<uint16_t>(b)};
    const float f = gradlab::half_to_float(h);
    const gradlab::Half back = gradlab::half_from_float(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(gradlab::half_to_float(back)));
    } else {
      ASSERT_EQ(back.bits, h.bits) << "half bits " << b;
    }
#if defined(__FLT16_MAX__)
    _Float16 ref;
    std::memcpy(&ref, &h.bits, 2);
    if (!std::isnan(f)) {
      ASSERT_EQ(f, static_cast<float>(ref)) << "half bits " << b;
    }
#endif
  }
}

TEST(HalfStorage, FloatToHalfRoundsToNearestEvenLikeTheCompiler) {
  HOST_ONLY();
#if !defined(__FLT16_MAX__)
  GTEST_SKIP() << "this compiler has no _Float16 to compare with";
#else
  std::mt19937 rng(42);
  std::vector<float> cases = {0.f, -0.f, 1.f, 65504.f, 65519.f, 65520.f, 1e-8f, 5.96e-8f, 2.98e-8f,
                              2.9802322e-8f, 6.1035156e-5f, 6.1e-5f, 1.0009765625f, 1.00048828125f,
                              INFINITY, -INFINITY, 3.0e38f};
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = bits(rng);
    float f;
    std::memcpy(&f, &u, 4);
    if (!std::isnan(f) && std::fabs(f) < 1e6f) cases.push_back(f);
  }
  for (float f : cases) {
    const _Float16 ref = static_cast<_Float16>(f);
    uint16_t rb;
    std::memcpy(&rb, &ref, 2);
    ASSERT_EQ(gradlab::half_from_float(f).bits, rb) << "float " << f;
  }
#endif
}

TEST(HalfStorage, BFloat16KeepsTheNearestOfItsTwoNeighbours) {
  HOST_ONLY();
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = bits(rng);
    float f;
    std::memcpy(&f, &u, 4);
    if (std::isnan(f)) continue;
    if ((u & 0x7FFF0000u) == 0x7F7F0000u) continue;  // above the largest bfloat16: may round to inf
    const float lo = gradlab::f32_from_bits(u & 0xFFFF0000u);  // truncation (toward zero)
    const float hi = gradlab::f32_from_bits((u & 0xFFFF0000u) + 0x10000u);
    const float r = gradlab::bf16_to_float(gradlab::bf16_from_float(f));
    const double dlo = std::fabs(static_cast<double>(f) - lo), dhi = std::fabs(static_cast<double>(hi) - f);
    if (dlo < dhi) {
      ASSERT_EQ(r, lo);
    } else if (dhi < dlo) {
      ASSERT_EQ(r, hi);
    }
  }
  EXPECT_EQ(gradlab::bf16_to_float(gradlab::bf16_from_float(1.0f)), 1.0f);
}

TEST(HalfStorage, TensorsConvertToHalfTypesIdenticallyOnCpuAndCuda) {
  GRADLAB_USE_CUDA_BACKEND();
  manual_seed(5);
  Tensor x = randn({257}) * 1000.0;
  for (ScalarType h : {kFloat16, kBFloat16}) {
    Tensor on_cpu = x.to(h);
    Tensor on_cuda = x.cuda().to(h);
    EXPECT_EQ(on_cpu.dtype(), h);
    EXPECT_EQ(on_cuda.dtype(), h);
    EXPECT_TRUE(on_cuda.is_cuda());
    EXPECT_TRUE(equal(on_cuda.to(kFloat32).cpu(), on_cpu.to(kFloat32))) << to_string(h);
    // one rounding: relative error at most 2^-11 (half) or 2^-8 (bfloat16)
    const double tol = h == kFloat16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    Tensor back = on_cpu.to(kFloat32);
    EXPECT_LE(((back - x).abs() / x.abs().clamp(1e-3, std::nullopt)).max().item<double>(), tol);
    EXPECT_EQ(on_cuda.cpu().dtype(), h);  // half storage moves between devices as is
  }
  // half compute: the CUDA path (the emulator here) gives the CPU's bits
  for (ScalarType h : {kFloat16, kBFloat16}) {
    Tensor s = (x / 1000.0).to(h);
    EXPECT_TRUE(equal(s.exp().to(kFloat32), s.cuda().exp().cpu().to(kFloat32))) << to_string(h);
    EXPECT_EQ(s.cuda().exp().dtype(), h);
  }
}

// ---- kernel indexing --------------------------------------------------------------------------
TEST(CudaIndexer, MergedDimsGiveTheSameOffsetsAsTheFullShape) {
  HOST_ONLY();
  std::mt19937 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    const int rank = static_cast<int>(rng() % 6);
    Shape shape;
    Strides strides;
    for (int d = 0; d < rank; ++d) shape.push_back(static_cast<int64_t>(rng() % 4));  // 0..3, size 1 too
    // strides: contiguous, a permutation of it, or broadcast (0) per dim
    int64_t step = 1;
    strides.assign(shape.size(), 0);
    for (int d = rank - 1; d >= 0; --d) {
      strides[d] = rng() % 4 == 0 ? 0 : step * (rng() % 3 == 0 ? 2 : 1);
      step *= std::max<int64_t>(shape[d], 1) * 2;
    }
    if (rng() % 2 == 0) strides = contiguous_strides(shape);
    const gpu::Indexer ix = gpu::make_indexer(shape, strides, "test");
    EXPECT_LE(ix.rank, std::max(rank, 1));
    const int64_t n = numel_of(shape);
    for (int64_t i = 0; i < n; ++i) {
      int64_t off = 0, rest = i;
      for (int d = rank - 1; d >= 0; --d) {
        off += (rest % shape[d]) * strides[d];
        rest /= shape[d];
      }
      ASSERT_EQ(ix(i), off) << "shape " << shape_str(shape) << " element " << i;
    }
  }
  // a contiguous tensor becomes one dim
  EXPECT_EQ(gpu::make_indexer(Shape{4, 5, 6}, Strides{30, 6, 1}, "test").rank, 1);
  EXPECT_THROW(gpu::make_indexer(Shape(11, 2), Strides(11, 1), "test"), ShapeError);  // nothing merges
  EXPECT_NO_THROW(gpu::make_indexer(Shape(11, 2), Strides(11, 0), "test"));  // broadcast: merges
}

TEST(CudaDevice, OptimizerStateFromACpuFileLoadsOntoTheParametersDevice) {
  GRADLAB_USE_CUDA_BACKEND();
  manual_seed(4);
  nn::Linear lin(3, 2);
  lin->to(kCuda);
  const Tensor x = randn({5, 3}).cuda();
  auto step = [&](optim::Optimizer& opt) {
    opt.zero_grad();
    lin->forward(x).pow(2).sum().backward();
    opt.step();
  };
  optim::Adam a(lin->parameters(), optim::AdamOptions(0.01));
  step(a);
  // what a checkpoint file gives back: every tensor on the CPU
  StateDict saved = a.state_dict(), on_cpu;
  for (const auto& k : saved.keys()) on_cpu.insert(k, saved.at(k).cpu().clone());  // (step is on the CPU already)
  StateDict model_before;  // state_dict() shares storage with the module: copy it
  for (const auto& k : lin->state_dict().keys()) model_before.insert(k, lin->state_dict().at(k).clone());
  step(a);  // the uninterrupted run
  const Tensor w_uninterrupted = lin->weight.cpu();
  lin->load_state_dict(model_before);
  optim::Adam b(lin->parameters(), optim::AdamOptions(0.01));
  b.load_state_dict(on_cpu);
  const StateDict loaded = b.state_dict();
  for (const auto& k : loaded.keys()) {
    if (k.find("exp_avg") != std::string::npos) {
      EXPECT_TRUE(loaded.at(k).is_cuda()) << k;
    }
  }
  step(b);
  EXPECT_TRUE(equal(lin->weight.cpu(), w_uninterrupted));
}

// ---- gradcheck on CUDA inputs -----------------------------------------------------------------
TEST(CudaGradcheck, ChecksTheCudaKernelsOfAFunctionAndCatchesAWrongGradient) {
  GRADLAB_USE_CUDA_BACKEND();
  manual_seed(9);
  Tensor x = randn({3, 4}, f64().device(kCuda).requires_grad(true));
  Tensor w = randn({4, 2}, f64().device(kCuda).requires_grad(true));
  auto f = [](const TensorList& in) { return TensorList{(matmul(in[0], in[1]).tanh() * in[0].sum()).softmax(1)}; };
  auto ok = gradlab::testing::gradcheck(f, {x, w}, gradlab::testing::GradcheckOptions().raise_exception(false));
  EXPECT_TRUE(ok.ok) << ok.text();
  // the same function with its gradient doubled on the way back through a CUDA tensor
  auto wrong = [](const TensorList& in) {
    Tensor y = in[0] * 1.0;
    EXPECT_TRUE(y.is_cuda());
    y.register_hook(GradHook([](const Tensor& g) { return g * 2.0; }));
    return TensorList{y.sin()};
  };
  auto bad = gradlab::testing::gradcheck(wrong, {x}, gradlab::testing::GradcheckOptions().raise_exception(false));
  EXPECT_FALSE(bad.ok);
  EXPECT_TRUE(x.is_cuda());  // the caller's tensors stay where they were
}

// jit::compile: fused regions equal eager within float tolerance, their one-node backward passes
// gradcheck in float64, unsupported ops fall back with a reason, and the CUDA kernel source
// compiles with NVRTC (launched only when a GPU is present).

#include <gtest/gtest.h>

#include <cmath>
#include <gradlab/backend/cuda/fused.hpp>
#include <gradlab/gradlab.hpp>
#include <gradlab/jit/compile.hpp>
#include <gradlab/testing/gradcheck.hpp>

using namespace gradlab;

namespace {

Tensor relu_affine(const Tensor& x) { return relu(x * 2 + 1); }
Tensor gelu_chain(const Tensor& x) { return gelu(x) * sigmoid(x) - tanh(x) / 3; }
// LayerNorm over the last dim, written out with elementwise ops and sums (no fused layer_norm).
std::vector<Tensor> layer_norm_chain(const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const double D = static_cast<double>(x.size(-1));
  Tensor xc = x - x.sum({-1}, true) / D;
  Tensor var = (xc * xc).sum({-1}, true) / D;
  return {xc / sqrt(var + 1e-5) * in[1] + in[2]};
}

TEST(Compile, FusesAnElementwiseChainAndMatchesEager) {
  auto f = jit::compile(relu_affine);
  Tensor x = randn({1000, 37});
  Tensor y = f(x);
  EXPECT_EQ(f.fused_regions(), 1) << f.report();
  EXPECT_NE(f.report().find("3 ops (Mul, Add, Relu)"), std::string::npos) << f.report();
  EXPECT_TRUE(allclose(y, relu_affine(x), 1e-6, 1e-6));
  // The cached plan runs on new values of the same shape.
  Tensor x2 = randn({1000, 37});
  EXPECT_TRUE(allclose(f(x2), relu_affine(x2), 1e-6, 1e-6));
  EXPECT_EQ(f.cache_size(), 1u);
  // Another shape: another specialization.
  Tensor x3 = randn({5});
  EXPECT_TRUE(allclose(f(x3), relu_affine(x3), 1e-6, 1e-6));
  EXPECT_EQ(f.cache_size(), 2u);
}

TEST(Compile, GeluAndLayerNormChainsMatchEager) {
  auto g = jit::compile(gelu_chain);
  Tensor x = randn({64, 300});
  EXPECT_TRUE(allclose(g(x), gelu_chain(x), 1e-5, 1e-6));
  EXPECT_GE(g.fused_regions(), 1);
  auto ln = jit::compile(layer_norm_chain);
  std::vector<Tensor> in = {randn({33, 70}), randn({70}), randn({70})};
  Tensor y = ln(in)[0], ref = layer_norm_chain(in)[0];
  EXPECT_TRUE(allclose(y, ref, 1e-4, 1e-5)) << amax(abs(y - ref)).item<double>();
  EXPECT_GE(ln.fused_regions(), 2) << ln.report();
  EXPECT_NE(ln.report().find("Sum(-1)"), std::string::npos) << ln.report();
}

TEST(Compile, ReductionTailsMatchEager) {
  auto f = jit::compile([](const std::vector<Tensor>& in) {
    Tensor d = in[0] * in[1] - in[1];
    return std::vector<Tensor>{(d * d).sum(), exp(d).mean({1}), (d * d).sum({1}, true)};
  });
  std::vector<Tensor> in = {randn({17, 300}), randn({17, 300})};
  std::vector<Tensor> y = f(in);
  Tensor d = in[0] * in[1] - in[1];
  EXPECT_TRUE(allclose(y[0], (d * d).sum(), 1e-5, 1e-4));
  EXPECT_TRUE(allclose(y[1], exp(d).mean({1}), 1e-5, 1e-5));
  EXPECT_TRUE(allclose(y[2], (d * d).sum({1}, true), 1e-5, 1e-4));
  EXPECT_EQ(y[2].sizes(), (Shape{17, 1}));
}

TEST(Compile, GradcheckOnCompiledFunctionsFloat64) {
  // Every fused formula's derivative, through one region each, with broadcast inputs.
  auto f = jit::compile([](const std::vector<Tensor>& in) {
    const Tensor &x = in[0], &w = in[1];
    Tensor a = tanh(x * w) + sigmoid(x) * exp(-x) - sin(x) * cos(w) + erf(x) / (abs(w) + 1);
    Tensor b = leaky_relu(a, 0.1) + softplus(x, 2.0, 1.0) + clamp(a, -0.5, 0.5) + pow(a, 3.0);
    Tensor c = maximum(b, x) - minimum(b, w) + log(x * x + 1) + sqrt(w * w + 1) + relu(-a);
    return std::vector<Tensor>{c, (c * x).sum({1}), (c * c).mean()};
  });
  Tensor x = randn({3, 4}, dtype(kFloat64)).requires_grad_();
  Tensor w = randn({4}, dtype(kFloat64)).requires_grad_();
  auto report = gradlab::testing::gradcheck([&](const TensorList& in) { return f(in); }, {x, w},
                                   gradlab::testing::GradcheckOptions().raise_exception(false));
  EXPECT_TRUE(report.ok) << report.text() << "\n" << f.report();
  EXPECT_GE(f.fused_regions(), 1) << f.report();
  // The fused region is one autograd node.
  Tensor y = f({x, w})[0];
  ASSERT_TRUE(y.grad_fn() != nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "FusedBackward0");
}

TEST(Compile, GradientsEqualEager) {
  nn::Linear fc(8, 16);
  auto step = [&](const std::vector<Tensor>& in) {
    Tensor h = gelu(fc->forward(in[0]));
    return std::vector<Tensor>{((h - in[1]) * (h - in[1])).mean()};
  };
  auto f = jit::compile(step);
  Tensor x = randn({32, 8}), t = randn({32, 16});
  f({x, t})[0].backward();  // the first call traces
  fc->weight.zero_grad();
  fc->bias.zero_grad();
  Tensor loss = f({x, t})[0];
  loss.backward();
  Tensor g_compiled = fc->weight.grad().clone(), b_compiled = fc->bias.grad().clone();
  fc->weight.zero_grad();
  fc->bias.zero_grad();
  Tensor eager_loss = step({x, t})[0];
  eager_loss.backward();
  EXPECT_TRUE(allclose(loss, eager_loss, 1e-5, 1e-6));
  EXPECT_TRUE(allclose(g_compiled, fc->weight.grad(), 1e-4, 1e-6));
  EXPECT_TRUE(allclose(b_compiled, fc->bias.grad(), 1e-4, 1e-6));
  EXPECT_NE(f.report().find("Addmm: ran eager (not an elementwise op)"), std::string::npos) << f.report();
}

TEST(Compile, FallsBackWithAReason) {
  // A host read: the trace cannot be trusted, the whole function runs eagerly.
  auto branchy = jit::compile([](const Tensor& x) { return x.sum().item<float>() > 0 ? x * 2 + 1 : -x - 1; });
  Tensor pos = ones({4}), neg = -ones({4});
  EXPECT_TRUE(allclose(branchy(pos), pos * 2 + 1));
  EXPECT_TRUE(allclose(branchy(neg), -neg - 1));  // the other branch: right, because eager
  EXPECT_EQ(branchy.report().rfind("eager: ", 0), 0u) << branchy.report();
  // Random draws (Dropout in training mode): eager, so every call draws a new mask.
  nn::Dropout drop(0.5);
  auto dropped = jit::compile([&](const Tensor& x) { return drop(x) * 2 + 1; });
  Tensor big = ones({1000});
  EXPECT_FALSE(equal(dropped(big), dropped(big)));
  EXPECT_NE(dropped.report().find("draws random numbers"), std::string::npos) << dropped.report();
  // An integer chain and a tensor-exponent pow stay eager, each with its reason.
  auto ints = jit::compile([](const Tensor& x) { return pow(x, x) + x * 3; });
  Tensor xi = arange(5, dtype(kInt64));
  EXPECT_TRUE(equal(ints(xi), pow(xi, xi) + xi * 3));
  EXPECT_NE(ints.report().find("dtype int64"), std::string::npos) << ints.report();
  EXPECT_EQ(ints.fused_regions(), 0);
}

TEST(Compile, DoubleBackwardThroughAFusedRegionIsAnError) {
  auto f = jit::compile([](const Tensor& x) { return exp(x) * x; });
  Tensor x = randn({3}, dtype(kFloat64)).requires_grad_();
  Tensor y = f(x).sum();
  EXPECT_THROW(autograd::grad({y}, {x}, {}, /*retain_graph=*/true, /*create_graph=*/true), AutogradError);
}

TEST(CompileCuda, GeneratedKernelCompilesWithNvrtc) {
  auto f = jit::compile(layer_norm_chain);
  // The programs of a CPU plan, turned into CUDA source: the same program for either device.
  kern::FusedProgram p;
  p.shape = {4, 5};
  p.dtype = kFloat32;
  kern::FusedStep in, c, mul, relu_step;
  in.kind = kern::FusedStep::Kind::Input;
  c.kind = kern::FusedStep::Kind::Const, c.p = 2;
  mul.kind = kern::FusedStep::Kind::Binary, mul.op = static_cast<int>(math::Binary::Mul), mul.a = 0, mul.b = 1;
  relu_step.kind = kern::FusedStep::Kind::Unary, relu_step.op = static_cast<int>(math::Unary::Relu), relu_step.a = 2;
  p.steps = {in, c, mul, relu_step};
  p.outputs = {{3, kern::FusedOutput::Reduce::None, 1}, {3, kern::FusedOutput::Reduce::LastDim, 0.2}};
  Tensor x = randn({4, 1}).expand({4, 5});  // a broadcast input: strides baked into the source
  const std::string src = kern::fused_cuda_source(p, {x});
  EXPECT_NE(src.find("u_Relu"), std::string::npos);
  EXPECT_NE(src.find("select(x < V(0), V(0), x)"), std::string::npos) << src;  // the shared formula
  EXPECT_NE(src.find("atomicAdd(out1 + i / 5LL"), std::string::npos) << src;
  // The CPU loop runs the same program.
  std::vector<Tensor> cpu = kern::run_fused(p, {x});
  EXPECT_TRUE(allclose(cpu[0], relu(x * 2)));
  EXPECT_TRUE(allclose(cpu[1], relu(x * 2).mean({1})));
  if (!kern::nvrtc_available()) GTEST_SKIP() << "built without the CUDA backend: NVRTC not tested";
  const std::string ptx = kern::nvrtc_compile(src);
  EXPECT_NE(ptx.find(".entry gradlab_fused"), std::string::npos) << ptx.substr(0, 400);
  // Every formula (float and double) compiles: one program with each op.
  for (ScalarType dt : {kFloat32, kFloat64}) {
    kern::FusedProgram all;
    all.shape = {8};
    all.dtype = dt;
    all.steps.push_back(in);
    // Every formula of the X-macro (backend/math/elementwise.hpp): a new one is compiled here too.
    auto unary = [&](math::Unary op) {
      kern::FusedStep u;
      u.kind = kern::FusedStep::Kind::Unary, u.op = static_cast<int>(op), u.a = 0, u.p = 0.5, u.q = 2;
      all.steps.push_back(u);
    };
    auto binary = [&](math::Binary op) {
      kern::FusedStep b;
      b.kind = math::is_comparison(op) ? kern::FusedStep::Kind::Compare : kern::FusedStep::Kind::Binary;
      b.op = static_cast<int>(op), b.a = 0, b.b = 1;
      all.steps.push_back(b);
    };
#define GRADLAB_UNARY_STEP_(name, kind, formula) unary(math::Unary::name);
#define GRADLAB_BINARY_STEP_(name, kind, formula) binary(math::Binary::name);
    GRADLAB_UNARY_OPS(GRADLAB_UNARY_STEP_)
    GRADLAB_BINARY_OPS(GRADLAB_BINARY_STEP_)
    GRADLAB_COMPARE_OPS(GRADLAB_BINARY_STEP_)
#undef GRADLAB_UNARY_STEP_
#undef GRADLAB_BINARY_STEP_
    all.outputs = {{static_cast<int>(all.steps.size()) - 1, kern::FusedOutput::Reduce::All, 1}};
    EXPECT_NO_THROW(kern::nvrtc_compile(kern::fused_cuda_source(all, {randn({8}, dtype(dt))})));
  }
  // A broken source gets NVRTC's log in the error.
  try {
    kern::nvrtc_compile("extern \"C\" __global__ void k() { undefined_thing(); }");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("undefined_thing"), std::string::npos) << e.what();
  }
  (void)f;
}

TEST(CompileCuda, FusedKernelOnAGpuMatchesTheCpu) {
  if (!cuda::is_available() || std::string(cuda::device_name(0)).find("emulator") != std::string::npos)
    GTEST_SKIP() << "no CUDA device: the fused kernel's launch is not tested here";
  auto f = jit::compile(layer_norm_chain);
  std::vector<Tensor> in = {randn({64, 257}), randn({257}), randn({257})};
  std::vector<Tensor> gin;
  for (const auto& t : in) gin.push_back(t.to(Device(kCUDA)));
  Tensor y = f(gin)[0].to(Device(kCPU));
  EXPECT_GE(f.fused_regions(), 2) << f.report();
  EXPECT_TRUE(allclose(y, layer_norm_chain(in)[0], 1e-4, 1e-5));
}

}  // namespace

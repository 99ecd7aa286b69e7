// bfloat16 autocast against float32 training steps on the CPU, in gradlab AND LibTorch, in one
// program (built only when find_package(Torch) succeeds): bench_memory's two models, the same
// shapes and optimizer in both libraries.
//
//   amp_<model>_step/<library>_f32, amp_<model>_step/<library>_bf16_autocast
//     mlp: 256 -> 4 x 512 -> 10 (ReLU), batch 4096, cross-entropy, SGD(0.01)
//     cnn: conv 3x3 (3->16, 16->16) pool, conv (16->32, 32->32) pool, linear 2048 -> 10; batch 64
//   autocast: gradlab::amp::autocast(kCPU) / torch's CPU autocast (at::autocast, bfloat16), the
//   forward inside it, backward and the step outside, as the PyTorch docs show.
// One thread in both (run with OMP_NUM_THREADS=1 so gradlab's pool and oneDNN have one too):
//   OMP_NUM_THREADS=1 build/release/bench/bench_amp_torch --benchmark_repetitions=5
//       --benchmark_min_time=0.3 --benchmark_format=json > amp.json

#include <ATen/autocast_mode.h>
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <gradlab/gradlab.hpp>

namespace {

namespace gl = gradlab;

const bool kOneThread = [] {
  torch::set_num_threads(1);
  torch::set_num_interop_threads(1);
  gl::set_num_threads(1);
  return true;
}();

// ---- LibTorch ----------------------------------------------------------------------------------
torch::nn::Sequential torch_model(bool cnn) {
  torch::manual_seed(0);
  torch::nn::Sequential s;
  if (cnn) {
    auto conv = [](int64_t i, int64_t o) { return torch::nn::Conv2d(torch::nn::Conv2dOptions(i, o, 3).padding(1)); };
    s->push_back(conv(3, 16)), s->push_back(torch::nn::ReLU()), s->push_back(conv(16, 16));
    s->push_back(torch::nn::ReLU()), s->push_back(torch::nn::MaxPool2d(2));
    s->push_back(conv(16, 32)), s->push_back(torch::nn::ReLU()), s->push_back(conv(32, 32));
    s->push_back(torch::nn::ReLU()), s->push_back(torch::nn::MaxPool2d(2));
    s->push_back(torch::nn::Flatten()), s->push_back(torch::nn::Linear(32 * 8 * 8, 10));
  } else {
    s->push_back(torch::nn::Linear(256, 512));
    for (int i = 0; i < 3; ++i) s->push_back(torch::nn::ReLU()), s->push_back(torch::nn::Linear(512, 512));
    s->push_back(torch::nn::ReLU()), s->push_back(torch::nn::Linear(512, 10));
  }
  return s;
}

void torch_step(benchmark::State& state, bool cnn, bool bf16) {
  auto model = torch_model(cnn);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.01));
  torch::Tensor x = cnn ? torch::randn({64, 3, 32, 32}) : torch::randn({4096, 256});
  torch::Tensor y = torch::randint(0, 10, {x.size(0)});
  auto step = [&] {
    opt.zero_grad();
    torch::Tensor loss;
    if (bf16) {
      at::autocast::set_cpu_enabled(true);
      at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
      loss = torch::nn::functional::cross_entropy(model->forward(x), y);
      at::autocast::set_cpu_enabled(false);
      at::autocast::clear_cache();
    } else {
      loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    }
    loss.backward();
    opt.step();
  };
  step();
  for (auto _ : state) step();
}

// ---- gradlab -----------------------------------------------------------------------------------
gl::nn::Sequential gradlab_model(bool cnn) {
  namespace nn = gl::nn;
  gl::manual_seed(0);
  nn::Sequential s;
  if (cnn) {
    auto conv = [](int64_t i, int64_t o) { return nn::Conv2d(nn::Conv2dOptions(i, o, 3).padding(1)); };
    s->push_back(conv(3, 16)), s->push_back(nn::ReLU()), s->push_back(conv(16, 16));
    s->push_back(nn::ReLU()), s->push_back(nn::MaxPool2d(2));
    s->push_back(conv(16, 32)), s->push_back(nn::ReLU()), s->push_back(conv(32, 32));
    s->push_back(nn::ReLU()), s->push_back(nn::MaxPool2d(2));
    s->push_back(nn::Flatten()), s->push_back(nn::Linear(32 * 8 * 8, 10));
  } else {
    s->push_back(nn::Linear(256, 512));
    for (int i = 0; i < 3; ++i) s->push_back(nn::ReLU()), s->push_back(nn::Linear(512, 512));
    s->push_back(nn::ReLU()), s->push_back(nn::Linear(512, 10));
  }
  return s;
}

void gradlab_step(benchmark::State& state, bool cnn, bool bf16) {
  auto model = gradlab_model(cnn);
  gl::optim::SGD opt(model->parameters(), gl::optim::SGDOptions(0.01));
  gl::Tensor x = cnn ? gl::randn({64, 3, 32, 32}) : gl::randn({4096, 256});
  gl::Tensor y = gl::randint(0, 10, {x.size(0)});
  auto step = [&] {
    opt.zero_grad();
    gl::Tensor loss;
    {
      gl::amp::autocast ac(gl::kCPU, std::nullopt, bf16);
      loss = gl::nn::functional::cross_entropy(model(x), y);
    }
    loss.backward();
    opt.step();
  };
  step();
  for (auto _ : state) step();
}

#define GRADLAB_AMP_ROW(fn, model, cnn, bf16, name) \
  BENCHMARK_CAPTURE(fn, model##name, cnn, bf16)->Name("amp_" #model "_step/" #name)->Unit(benchmark::kMillisecond)
GRADLAB_AMP_ROW(torch_step, mlp, false, false, libtorch_f32);
GRADLAB_AMP_ROW(torch_step, mlp, false, true, libtorch_bf16_autocast);
GRADLAB_AMP_ROW(gradlab_step, mlp, false, false, gradlab_f32);
GRADLAB_AMP_ROW(gradlab_step, mlp, false, true, gradlab_bf16_autocast);
GRADLAB_AMP_ROW(torch_step, cnn, true, false, libtorch_f32);
GRADLAB_AMP_ROW(torch_step, cnn, true, true, libtorch_bf16_autocast);
GRADLAB_AMP_ROW(gradlab_step, cnn, true, false, gradlab_f32);
GRADLAB_AMP_ROW(gradlab_step, cnn, true, true, gradlab_bf16_autocast);

}  // namespace

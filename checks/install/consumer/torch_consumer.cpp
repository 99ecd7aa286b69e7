// A LibTorch-style program built against an installed gradlab through include/gradlab/compat
// (see checks/install/run_install_test.cmake). It includes only LibTorch's header names.
#include <torch/data.h>
#include <torch/data/datasets/base.h>
#include <torch/nn.h>
#include <torch/optim.h>
#include <torch/script.h>  // compiles: only a call to torch::jit::load would not
#include <torch/torch.h>
#include <torch/types.h>

#include <cstdio>
#include <string>

struct NetImpl : torch::nn::Module {
  NetImpl() : fc(register_module("fc", torch::nn::Linear(3, 1))) {}
  torch::Tensor forward(const torch::Tensor& x) { return fc->forward(x); }
  torch::nn::Linear fc;
};
TORCH_MODULE(Net);

// A torch::data dataset as LibTorch programs write them (CRTP base, optional size).
struct Ramp : torch::data::datasets::Dataset<Ramp> {
  torch::data::Example<> get(size_t index) override {
    torch::Tensor x = torch::full({1, 2, 2}, static_cast<double>(index));
    return {x, torch::tensor(static_cast<int64_t>(index % 2), torch::dtype(torch::kInt64))};
  }
  torch::optional<size_t> size() const override { return 10; }
};

int main() {
  // The thread calls a LibTorch program makes at start.
  torch::set_num_interop_threads(1);
  torch::set_num_threads(1);
  torch::init_num_threads();
  if (torch::get_num_threads() != 1 || torch::get_num_interop_threads() != 1) return 1;
  torch::manual_seed(0);
  Net net;
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1));
  const torch::Tensor x = torch::ones({4, 3}, torch::dtype(torch::kFloat32));
  const torch::Tensor y = torch::zeros({4, 1});
  float first = 0.0F;
  float last = 0.0F;
  for (int step = 0; step < 20; ++step) {
    opt.zero_grad();
    torch::Tensor loss = torch::mse_loss(net->forward(x), y);
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<float>();
  }
  std::printf("compat: loss %g -> %g\n", static_cast<double>(first), static_cast<double>(last));
  TORCH_CHECK(last < first, "loss did not fall: ", first, " -> ", last);
  AT_ASSERT(x.size(0) == 4);
  TORCH_INTERNAL_ASSERT(x.dim() == 2, "dim ", x.dim());

  // TORCH_CHECK throws gradlab::Error with the streamed parts; without parts, LibTorch's wording.
  std::string caught;
  try {
    TORCH_CHECK(x.size(0) == 5, "expected 5 rows, got ", x.size(0));
  } catch (const torch::Error& e) {
    caught = e.what();
  }
  std::printf("TORCH_CHECK: %s\n", caught.c_str());
  if (caught.rfind("expected 5 rows, got 4", 0) != 0) return 1;
  try {
    TORCH_CHECK(false);
    return 1;
  } catch (const torch::Error& e) {
    if (std::string(e.what()).rfind("Expected false to be true, but got false.", 0) != 0) return 1;
  }
  try {
    AT_ASSERT(x.dim() == 3);
    return 1;
  } catch (const torch::Error& e) {
    if (std::string(e.what()).find("INTERNAL ASSERT FAILED") == std::string::npos) return 1;
  }
  // torch::data as in LibTorch's MNIST example: map(Normalize).map(Stack), make_data_loader.
  auto dataset = Ramp().map(torch::data::transforms::Normalize<>(0.5, 2.0))
                     .map(torch::data::transforms::Stack<>());
  const size_t dataset_size = dataset.size().value();
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(dataset), torch::data::DataLoaderOptions().batch_size(4).workers(2));
  size_t seen = 0;
  for (auto& batch : *loader) {
    if (batch.data.dim() != 4 || batch.data.size(1) != 1 || batch.target.dim() != 1) return 1;
    seen += static_cast<size_t>(batch.data.size(0));
  }
  std::printf("torch::data: %zu of %zu examples in batches\n", seen, dataset_size);
  if (seen != dataset_size) return 1;
  std::printf("compat: OK\n");
  return 0;
}

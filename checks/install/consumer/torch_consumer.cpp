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

int main() {
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
  std::printf("compat: OK\n");
  return 0;
}

// Port corpus: data-parallel training the way LibTorch C++ programs do it (LibTorch's C++ API has
// no DistributedDataParallel module; its distributed example allreduces the gradients through a
// c10d ProcessGroup): a c10d::FileStore, a c10d::ProcessGroupGloo over it, rank 0's parameters
// broadcast to every rank, each rank training on its shard of the data
// (torch::data::samplers::DistributedSequentialSampler), the gradients summed with allreduce and
// divided by the world size, then an identical optimizer step on every rank. Rank 0 prints the
// loss averaged over the ranks; every rank checks that its parameters equal rank 0's.
// Started by `mpiexec -n 2` (rank and world size from Open MPI's environment, or RANK and
// WORLD_SIZE). Against gradlab, <torch/csrc/distributed/c10d/...> is gradlab's c10d face over its
// MPI process group (the store only names the rendezvous; the ranks must be the launcher's).
#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "port_out.hpp"

namespace {

int env_int(const char* a, const char* b, int fallback) {
  for (const char* name : {a, b})
    if (const char* v = std::getenv(name)) return std::atoi(v);
  return fallback;
}

// 64 points of y = sin(3 x) + x² on [-1, 1] (deterministic).
struct Curve : torch::data::datasets::Dataset<Curve> {
  torch::data::Example<> get(size_t i) override {
    const double x = -1.0 + 2.0 * static_cast<double>(i) / 63.0;
    return {torch::tensor({x}), torch::tensor({std::sin(3 * x) + x * x})};
  }
  torch::optional<size_t> size() const override { return 64; }
};

}  // namespace

int main() {
  const int rank = env_int("RANK", "OMPI_COMM_WORLD_RANK", 0);
  const int world = env_int("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", 1);
  auto store = c10::make_intrusive<::c10d::FileStore>("ddp_store", world);
  auto options = ::c10d::ProcessGroupGloo::Options::create();
  options->devices.push_back(::c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  auto pg = c10::make_intrusive<::c10d::ProcessGroupGloo>(store, rank, world, options);

  torch::nn::Sequential model(torch::nn::Linear(1, 16), torch::nn::Tanh(), torch::nn::Linear(16, 1));
  port::init_parameters(model, 0.5 + rank);  // different on each rank until the broadcast
  for (auto& p : model->parameters()) {
    std::vector<torch::Tensor> tensors = {p.detach()};
    pg->broadcast(tensors)->wait();
  }

  auto loader = torch::data::make_data_loader(
      Curve().map(torch::data::transforms::Stack<>()),
      torch::data::samplers::DistributedSequentialSampler(64, world, rank),
      torch::data::DataLoaderOptions().batch_size(8));
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  int64_t step = 0;
  for (int epoch = 1; epoch <= 20; ++epoch) {
    for (auto& batch : *loader) {
      optimizer.zero_grad();
      torch::Tensor loss = torch::mse_loss(model->forward(batch.data), batch.target);
      loss.backward();
      for (auto& p : model->parameters()) {
        std::vector<torch::Tensor> grads = {p.grad()};
        pg->allreduce(grads)->wait();
        p.grad().div_(world);
      }
      optimizer.step();
      std::vector<torch::Tensor> mean_loss = {loss.detach().clone()};
      pg->allreduce(mean_loss)->wait();
      ++step;
      if (rank == 0 && (step <= 2 || step % 40 == 0)) {
        const std::string key = port::key(step <= 2 ? "loss_" : "~loss_", step);
        port::out(key, mean_loss[0].item<double>() / world);
      }
    }
  }
  // Every rank holds rank 0's parameters: the largest difference, summed over ranks, is 0.
  double diff = 0;
  for (auto& p : model->parameters()) {
    torch::Tensor mine = p.detach().clone();
    std::vector<torch::Tensor> first = {p.detach().clone()};
    pg->broadcast(first)->wait();
    diff = std::max(diff, (mine - first[0]).abs().max().item<double>());
  }
  std::vector<torch::Tensor> total = {torch::tensor({diff})};
  pg->allreduce(total)->wait();
  if (rank == 0) {
    port::out_int("world_size", world);
    port::out_int("steps", step);
    port::out("replicas_max_difference", total[0].item<double>());
    port::out("~last_layer_bias", model->parameters().back());
  }
  return total[0].item<double>() == 0 ? 0 : 1;
}

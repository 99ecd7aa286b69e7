// Port corpus: the CNN of LibTorch's official MNIST example (pytorch/examples cpp/mnist) through
// torch::data: datasets::MNIST with Normalize<> and Stack<> mapped on, make_data_loader with a
// SequentialSampler for training and the default (random) sampler for testing, Conv2d +
// max_pool2d + Linear + log_softmax, torch::nll_loss (Reduction::Sum in the test), SGD with
// momentum, model.train() / model.eval(), argmax accuracy.
// Changed from the example so that both libraries compute the same numbers: the data are
// deterministic 28x28 "digits" written here as MNIST idx files (the 10,000-image test-split
// format: one root to train on, one to test on); the dropout layers are left out and the
// parameters set from port::wave (the random generators differ); training stops after 150
// batches (CPU time). The test result does not depend on the random test order.
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "port_out.hpp"

namespace {

constexpr int64_t kTrainBatchSize = 64;
constexpr int64_t kTestBatchSize = 1000;
constexpr int64_t kTrainBatches = 150;

void put_be32(std::ofstream& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.put(static_cast<char>((v >> shift) & 0xff));
}

// 10,000 images: image i shows digit class i % 10 as a bright bar at an angle of class * 18°
// through the centre, shifted by up to 3 pixels and over a faint texture; `seed` varies both.
void write_split(const std::string& root, uint32_t seed) {
  std::filesystem::create_directories(root);
  const uint32_t n = 10000;
  std::ofstream images(root + "/t10k-images-idx3-ubyte", std::ios::binary);
  std::ofstream labels(root + "/t10k-labels-idx1-ubyte", std::ios::binary);
  put_be32(images, 2051), put_be32(images, n), put_be32(images, 28), put_be32(images, 28);
  put_be32(labels, 2049), put_be32(labels, n);
  std::vector<char> px(28 * 28);
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t cls = i % 10, h = (i + seed) * 2654435761u;
    const double angle = cls * 0.314159, dx = static_cast<double>(h % 7) - 3,
                 dy = static_cast<double>((h >> 8) % 7) - 3;
    for (int r = 0; r < 28; ++r)
      for (int c = 0; c < 28; ++c) {
        const double y = r - 13.5 - dy, x = c - 13.5 - dx;
        const double dist = std::abs(x * std::sin(angle) - y * std::cos(angle));
        const double along = std::abs(x * std::cos(angle) + y * std::sin(angle));
        double v = (dist < 1.8 && along < 10) ? 230 : 0;
        v += 20 * (0.5 + 0.5 * std::sin((r * 28 + c) * 0.7 + (h % 97)));
        px[static_cast<size_t>(r * 28 + c)] = static_cast<char>(static_cast<unsigned char>(std::min(v, 255.0)));
      }
    images.write(px.data(), static_cast<std::streamsize>(px.size()));
    labels.put(static_cast<char>(cls));
  }
}

struct Net : torch::nn::Module {
  Net()
      : conv1(torch::nn::Conv2dOptions(1, 10, /*kernel_size=*/5)),
        conv2(torch::nn::Conv2dOptions(10, 20, /*kernel_size=*/5)),
        fc1(320, 50),
        fc2(50, 10) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }

  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(torch::max_pool2d(conv1->forward(x), 2));
    x = torch::relu(torch::max_pool2d(conv2->forward(x), 2));
    x = x.view({-1, 320});
    x = torch::relu(fc1->forward(x));
    x = fc2->forward(x);
    return torch::log_softmax(x, /*dim=*/1);
  }

  torch::nn::Conv2d conv1;
  torch::nn::Conv2d conv2;
  torch::nn::Linear fc1;
  torch::nn::Linear fc2;
};

}  // namespace

int main() {
  write_split("mnist_train", 1);
  write_split("mnist_test", 2);
  torch::Device device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);

  Net model;
  {
    torch::NoGradGuard no_grad;
    int k = 0;
    for (auto& p : model.parameters()) {
      const double fan_in = p.dim() > 1 ? static_cast<double>(p.numel() / p.size(0)) : 25.0;
      p.copy_(port::wave(p.sizes(), 1.0 / std::sqrt(fan_in), 0.4 * k++));
    }
  }
  model.to(device);

  auto train_dataset =
      torch::data::datasets::MNIST("mnist_train", torch::data::datasets::MNIST::Mode::kTest)
          .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
          .map(torch::data::transforms::Stack<>());
  const size_t train_dataset_size = train_dataset.size().value();
  port::out_int("train_dataset_size", static_cast<int64_t>(train_dataset_size));
  auto train_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(train_dataset), kTrainBatchSize);

  auto test_dataset =
      torch::data::datasets::MNIST("mnist_test", torch::data::datasets::MNIST::Mode::kTest)
          .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
          .map(torch::data::transforms::Stack<>());
  const size_t test_dataset_size = test_dataset.size().value();
  auto test_loader = torch::data::make_data_loader(std::move(test_dataset), kTestBatchSize);

  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));

  model.train();
  int64_t batch_idx = 0;
  for (auto& batch : *train_loader) {
    auto data = batch.data.to(device), targets = batch.target.to(device);
    if (batch_idx == 0) {
      port::out_shape("batch_data", data);
      port::out("batch_pixels", data.flatten().slice(0, 400, 410));
      port::out("batch_targets", targets.to(torch::kFloat64));
    }
    optimizer.zero_grad();
    auto output = model.forward(data);
    auto loss = torch::nll_loss(output, targets);
    AT_ASSERT(!std::isnan(loss.template item<float>()));
    loss.backward();
    optimizer.step();
    if (batch_idx < 2) port::out(port::key("train_loss_", batch_idx), loss.item<double>());
    if (batch_idx % 50 == 49) port::out(port::key("~train_loss_", batch_idx), loss.item<double>());
    if (++batch_idx == kTrainBatches) break;
  }

  torch::NoGradGuard no_grad;
  model.eval();
  double test_loss = 0;
  int64_t correct = 0;
  for (const auto& batch : *test_loader) {
    auto data = batch.data.to(device), targets = batch.target.to(device);
    auto output = model.forward(data);
    test_loss += torch::nll_loss(output, targets, /*weight=*/{}, torch::Reduction::Sum).template item<float>();
    auto pred = output.argmax(1);
    correct += pred.eq(targets).sum().template item<int64_t>();
  }
  test_loss /= static_cast<double>(test_dataset_size);
  port::out_int("test_dataset_size", static_cast<int64_t>(test_dataset_size));
  port::out("~test_loss", test_loss);
  port::out("~test_accuracy", static_cast<double>(correct) / static_cast<double>(test_dataset_size));
  std::fprintf(stderr, "test: average loss %.4f, accuracy %.3f\n", test_loss,
              static_cast<double>(correct) / static_cast<double>(test_dataset_size));
  return correct > static_cast<int64_t>(test_dataset_size) / 2 ? 0 : 1;
}

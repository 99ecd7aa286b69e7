// Port corpus: a DCGAN, the shape of LibTorch's official example (pytorch/examples cpp/dcgan):
// a generator of ConvTranspose2d + BatchNorm2d + ReLU with a Tanh output (noise [N, Z, 1, 1] to
// 28x28 images), a Sequential discriminator of strided Conv2d + BatchNorm2d + LeakyReLU with a
// Sigmoid, torch::binary_cross_entropy, two Adam optimizers with betas (0.5, 0.5), the
// discriminator trained on real then detached fake images, the generator through the
// discriminator, and a generator checkpoint saved and loaded.
// Changed from the example so that both libraries compute the same numbers: fewer channels (CPU
// time), deterministic "digits" instead of MNIST, port::wave instead of torch::randn for the
// noise, and real labels 0.9 instead of uniform_(0.8, 1.0) (the random generators differ).
#include <torch/torch.h>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "port_out.hpp"

namespace {

constexpr int64_t kNoiseSize = 16;
constexpr int64_t kBatchSize = 8;

struct DCGANGeneratorImpl : torch::nn::Module {
  explicit DCGANGeneratorImpl(int64_t noise_size)
      : conv1(torch::nn::ConvTranspose2dOptions(noise_size, 32, 4).bias(false)),
        batch_norm1(32),
        conv2(torch::nn::ConvTranspose2dOptions(32, 16, 3).stride(2).padding(1).bias(false)),
        batch_norm2(16),
        conv3(torch::nn::ConvTranspose2dOptions(16, 8, 4).stride(2).padding(1).bias(false)),
        batch_norm3(8),
        conv4(torch::nn::ConvTranspose2dOptions(8, 1, 4).stride(2).padding(1).bias(false)) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv3", conv3);
    register_module("conv4", conv4);
    register_module("batch_norm1", batch_norm1);
    register_module("batch_norm2", batch_norm2);
    register_module("batch_norm3", batch_norm3);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(batch_norm1(conv1(x)));  // [N, 32, 4, 4]
    x = torch::relu(batch_norm2(conv2(x)));  // [N, 16, 7, 7]
    x = torch::relu(batch_norm3(conv3(x)));  // [N, 8, 14, 14]
    x = torch::tanh(conv4(x));               // [N, 1, 28, 28]
    return x;
  }
  // NOTE: declared in the order the constructor initializes them (the example's order warns).
  torch::nn::ConvTranspose2d conv1;
  torch::nn::BatchNorm2d batch_norm1;
  torch::nn::ConvTranspose2d conv2;
  torch::nn::BatchNorm2d batch_norm2;
  torch::nn::ConvTranspose2d conv3;
  torch::nn::BatchNorm2d batch_norm3;
  torch::nn::ConvTranspose2d conv4;
};
TORCH_MODULE(DCGANGenerator);

// Deterministic 28x28 "digits" in [-1, 1]: a bright ring or bar per class on a dark field.
torch::Tensor real_batch(int64_t batch) {
  std::vector<float> px(static_cast<size_t>(kBatchSize * 28 * 28));
  for (int64_t n = 0; n < kBatchSize; ++n) {
    const int64_t cls = (batch * kBatchSize + n) % 4;
    for (int64_t i = 0; i < 28; ++i)
      for (int64_t j = 0; j < 28; ++j) {
        const double r = std::hypot(i - 13.5, j - 13.5);
        const bool on = cls == 0   ? std::abs(r - 8) < 2
                        : cls == 1 ? std::abs(j - 14) < 2 && i > 4 && i < 24
                        : cls == 2 ? std::abs(i - j) < 2
                                   : std::abs(i - 14) < 2 && j > 4 && j < 24;
        px[static_cast<size_t>((n * 28 + i) * 28 + j)] = on ? 0.9f : -0.9f;
      }
  }
  return torch::from_blob(px.data(), {kBatchSize, 1, 28, 28}, torch::kFloat).clone();
}

}  // namespace

int main() {
  DCGANGenerator generator(kNoiseSize);
  torch::nn::Sequential discriminator(
      torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 8, 4).stride(2).padding(1).bias(false)),
      torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
      torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 16, 4).stride(2).padding(1).bias(false)),
      torch::nn::BatchNorm2d(16),
      torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
      torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 32, 4).stride(2).padding(1).bias(false)),
      torch::nn::BatchNorm2d(32),
      torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
      torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 1, 3).stride(1).padding(0).bias(false)),
      torch::nn::Sigmoid());
  port::init_parameters(generator, 0.3);
  port::init_parameters(discriminator, 1.1);
  port::out_int("generator_parameters", static_cast<int64_t>(generator->parameters().size()));
  port::out_int("discriminator_parameters", static_cast<int64_t>(discriminator->parameters().size()));

  torch::optim::Adam generator_optimizer(
      generator->parameters(), torch::optim::AdamOptions(2e-3).betas(std::make_tuple(0.5, 0.5)));
  torch::optim::Adam discriminator_optimizer(
      discriminator->parameters(), torch::optim::AdamOptions(2e-3).betas(std::make_tuple(0.5, 0.5)));

  const int64_t kBatches = 4, kEpochs = 2;
  int64_t iteration = 0;
  for (int64_t epoch = 1; epoch <= kEpochs; ++epoch) {
    for (int64_t batch_index = 0; batch_index < kBatches; ++batch_index) {
      ++iteration;
      // Train the discriminator with real images.
      discriminator->zero_grad();
      torch::Tensor real_images = real_batch(batch_index);
      torch::Tensor real_labels = torch::empty(real_images.size(0)).fill_(0.9);
      torch::Tensor real_output = discriminator->forward(real_images).reshape(real_labels.sizes());
      torch::Tensor d_loss_real = torch::binary_cross_entropy(real_output, real_labels);
      d_loss_real.backward();

      // Train the discriminator with fake images.
      torch::Tensor noise = port::wave({real_images.size(0), kNoiseSize, 1, 1}, 1.0, 0.1 * iteration);
      torch::Tensor fake_images = generator->forward(noise);
      torch::Tensor fake_labels = torch::zeros(real_images.size(0));
      torch::Tensor fake_output = discriminator->forward(fake_images.detach()).reshape(fake_labels.sizes());
      torch::Tensor d_loss_fake = torch::binary_cross_entropy(fake_output, fake_labels);
      d_loss_fake.backward();

      torch::Tensor d_loss = d_loss_real + d_loss_fake;
      discriminator_optimizer.step();

      // Train the generator.
      generator->zero_grad();
      fake_labels.fill_(1);
      fake_output = discriminator->forward(fake_images).reshape(fake_labels.sizes());
      torch::Tensor g_loss = torch::binary_cross_entropy(fake_output, fake_labels);
      g_loss.backward();
      generator_optimizer.step();

      if (iteration == 1) {
        port::out_shape("fake_shape", fake_images);
        port::out("fake_pixels_1", fake_images.flatten().slice(0, 300, 316));
        port::out("real_output_1", real_output);
      }
      // Early iterations are compared tightly, later ones loosely (float32 Adam steps drift).
      const std::string mark = iteration <= 2 ? "" : "~";
      port::out(mark + "d_loss_" + std::to_string(iteration), d_loss.item<double>());
      port::out(mark + "g_loss_" + std::to_string(iteration), g_loss.item<double>());
    }
  }

  // Checkpoint the generator, load it into a fresh one, and sample from both in eval mode.
  torch::save(generator, "generator-checkpoint.pt");
  DCGANGenerator restored(kNoiseSize);
  torch::load(restored, "generator-checkpoint.pt");
  generator->eval();
  restored->eval();
  torch::NoGradGuard no_grad;
  torch::Tensor samples = generator->forward(port::wave({2, kNoiseSize, 1, 1}, 1.0, 7.0));
  torch::Tensor again = restored->forward(port::wave({2, kNoiseSize, 1, 1}, 1.0, 7.0));
  const bool same = torch::equal(samples, again);
  port::out_int("restored_equal", same ? 1 : 0);
  port::out("~sample_pixels", samples.flatten().slice(0, 380, 392));
  port::out("~sample_mean", samples.mean().item<double>());
  return same ? 0 : 1;
}

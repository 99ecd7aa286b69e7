// Port corpus: polynomial regression, in the style of LibTorch's cpp/regression example. Fits
// y = x·w + b on the features [x, x², x³, x⁴] with a Linear layer, SGD and smooth_l1_loss until
// the loss is below 1e-3. Idioms: `x.mm(w) + b.item()` (Tensor + Scalar), unsqueeze / pow / cat,
// fc->weight / fc->bias, item<float>(), the optimizer's zero_grad / step.
#include <torch/torch.h>

#include <iostream>
#include <sstream>
#include <vector>

#include "port_out.hpp"

constexpr int64_t kDegree = 4;

// x [n] -> features [n, kDegree]
torch::Tensor make_features(torch::Tensor x) {
  x = x.unsqueeze(1);
  std::vector<torch::Tensor> xs;
  for (int64_t i = 0; i < kDegree; ++i) xs.push_back(x.pow(i + 1));
  return torch::cat(xs, 1);
}

torch::Tensor f(torch::Tensor x, torch::Tensor w, torch::Tensor b) { return x.mm(w) + b.item(); }

std::string poly_desc(torch::Tensor w, torch::Tensor b) {
  auto size = w.size(0);
  std::ostringstream stream;
  stream << "y = ";
  for (int64_t i = 0; i < size; ++i) stream << w[i].item<float>() << " x^" << size - i << " ";
  stream << "+ " << b[0].item<float>();
  return stream.str();
}

int main() {
  auto w_target = port::wave({kDegree, 1}, 2.0, 0.5);
  auto b_target = port::wave({1}, 2.0, 1.5);
  auto fc = torch::nn::Linear(w_target.size(0), 1);
  port::init_parameters(fc);
  torch::optim::SGD optim(fc->parameters(), 0.1);

  float loss = 0;
  int64_t batch_idx = 0;
  for (batch_idx = 1; batch_idx <= 2000; ++batch_idx) {
    // A batch of 32 points in [-1, 1], different for every step.
    auto x = port::wave({32}, 1.0, 0.1 * static_cast<double>(batch_idx));
    auto batch_x = make_features(x);
    auto batch_y = f(batch_x, w_target, b_target);
    optim.zero_grad();
    auto output = torch::smooth_l1_loss(fc(batch_x), batch_y);
    loss = output.item<float>();
    output.backward();
    optim.step();
    if (batch_idx <= 5 || batch_idx % 50 == 0) port::out(port::key("loss_", batch_idx), loss);
    if (loss < 1e-3f) break;
  }
  std::cerr << "Loss: " << loss << " after " << batch_idx << " batches\n";
  std::cerr << "==> Learned function:\t" << poly_desc(fc->weight.view({-1}), fc->bias) << "\n";
  std::cerr << "==> Actual function:\t" << poly_desc(w_target.view({-1}), b_target) << "\n";
  // Convergence: the number of steps may move by a few between libraries (float32), the fit not.
  port::out("~steps", static_cast<double>(batch_idx));
  port::out("converged", loss < 1e-3f ? 1.0 : 0.0);
  port::out("~weight", fc->weight);
  port::out("~bias", fc->bias);
  return loss < 1e-3f ? 0 : 1;
}

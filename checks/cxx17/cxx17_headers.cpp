// Compiled by checks/cxx17/run_cxx17.cmake with `-std=c++17 -Wall -Wextra -Wpedantic -Werror` by
// each C++ compiler it finds (g++, clang++-19, clang++-14), linked against the C++20-built
// libgradlab, and run: the installed headers must serve C++17 readers such as xeus-cling, and
// what they declare must agree with the library (Site's layout, the loader's sentinel, ...).
// Exit 0 and a last line "cxx17 headers: OK" when every check holds.

#if __cplusplus >= 202002L
#error "this file must be compiled as C++17 (-std=c++17)"
#endif

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <gradlab/gradlab.hpp>
#include <gradlab/testing.hpp>  // the test machinery is read by C++17 notebooks too
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace gl = gradlab;
namespace nn = gradlab::nn;

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::cout << (ok ? "ok:   " : "FAIL: ") << what << "\n";
  if (!ok) ++failures;
}

// A user module in LibTorch style: Impl + holder (ModuleHolder's C++17 constructors).
struct TinyImpl : nn::Module {
  nn::Linear fc{nullptr};
  TinyImpl() { fc = register_module("fc", nn::Linear(3, 1)); }
  gl::Tensor forward(const gl::Tensor& x) { return fc(x); }
};
GRADLAB_MODULE(Tiny);

}  // namespace

int main() {
  check(GRADLAB_HAVE_SOURCE_LOCATION == 0, "C++17: Site falls back to the compiler builtins");

  // Site: the default argument is evaluated at the caller, so the op's node names this line.
  gl::Tensor x = gl::tensor({1.0, 2.0, 3.0}).requires_grad_(true);
  const unsigned line = __LINE__ + 1;
  gl::Tensor y = gl::exp(x);
  const gl::Site site = y.grad_fn()->site;
  check(site.loc.line() == line, "an op's Site is the caller's line (" +
                                     std::to_string(site.loc.line()) + " == " +
                                     std::to_string(line) + ")");
  check(std::strstr(site.loc.file_name(), "cxx17_headers.cpp") != nullptr,
        "an op's Site is the caller's file (" + site.str() + ")");
  // An operator's Site comes from the Operand conversion, also at the caller.
  const unsigned op_line = __LINE__ + 1;
  gl::Tensor z = x * 2.0 + 1;
  check(z.grad_fn()->site.loc.line() == op_line, "an operator's Site is the caller's line");

  // Autograd through the C++20 library: d/dx sum(exp(x) * x) = exp(x) * (x + 1).
  gl::sum(y * x).backward();
  const std::vector<double> g = x.grad().to_vector<double>();
  bool grad_ok = g.size() == 3;
  for (size_t i = 0; grad_ok && i < 3; ++i) {
    const double xi = static_cast<double>(i + 1);
    grad_ok = std::abs(g[i] - std::exp(xi) * (xi + 1)) < 1e-3 * std::exp(xi) * (xi + 1);
  }
  check(grad_ok, "backward of sum(exp(x) * x) gives exp(x) * (x + 1)");

  // Devices, Scalars, the error format.
  check(gl::Device(gl::kCPU) == gl::Device(gl::kCPU) && gl::Device(gl::kCPU) != gl::Device(gl::kCUDA, 0),
        "Device == and != (no defaulted comparison in C++17)");
  bool threw = false;
  try {
    (void)gl::matmul(gl::ones({2, 3}), gl::ones({2, 3}));
  } catch (const gl::ShapeError& e) {
    threw = std::string(e.what()).find("expected") != std::string::npos;
  }
  check(threw, "a bad matmul throws a ShapeError with the 'expected ..., got ...' message");

  // A module holder, Sequential, an optimizer, a DataLoader (begin() / Sentinel end()).
  gl::manual_seed(0);
  Tiny net;
  check(net->parameters().size() == 2, "a user module registers fc.weight and fc.bias");
  nn::Sequential seq(nn::Linear(3, 4), nn::ReLU(), nn::Linear(4, 1));
  check(seq->named_parameters().size() == 4, "Sequential(Linear, ReLU, Linear) has 4 parameters");

  // Fit y = x0 - 2 x1 + 0.5 x2 with SGD over a DataLoader: the loss must fall by 100x.
  gl::Tensor data = gl::randn({64, 3});
  gl::Tensor target = gl::matmul(data, gl::from_vector(std::vector<double>{1.0, -2.0, 0.5}, {3, 1}));
  auto dataset = std::make_shared<gl::data::TensorDataset>(data, target);
  gl::data::DataLoader loader(dataset, gl::data::DataLoaderOptions(16));
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
  nn::MSELoss mse;
  const double first = mse(net(data), target).item<double>();
  int batches = 0;
  for (int epoch = 0; epoch < 30; ++epoch) {
    for (auto it = loader.begin(); it != loader.end(); ++it) {
      opt.zero_grad();
      mse(net(it->data), it->target).backward();
      opt.step();
      ++batches;
    }
  }
  const double last = mse(net(data), target).item<double>();
  check(batches == 30 * 4, "the loader hands out 4 batches of 16 per epoch");
  check(last < first / 100, "SGD on a linear model: the loss fell from " + std::to_string(first) +
                                " to " + std::to_string(last));

  if (failures != 0) {
    std::cout << "cxx17 headers: " << failures << " check(s) FAILED\n";
    return 1;
  }
  std::cout << "cxx17 headers: OK\n";
  return 0;
}

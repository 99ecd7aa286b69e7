// A LibTorch program using torch::data the way the official MNIST example does, compiled twice
// (checks/compat/extras.cmake): against gradlab through the compat header, and, when LibTorch is
// found, against LibTorch 1.13. It writes a 10,000-image MNIST test split (the count LibTorch
// demands) into <dir>, runs datasets, transforms, samplers and loaders, and writes one line per
// result to <out>. With `--compare <reference>` it also checks its lines against the other
// build's: words and integers equal, fractional numbers within a relative 1e-5 (float32 sums may
// differ in the last bits).
// Results that depend on a random generator (RandomSampler, DistributedRandomSampler orders) are
// written as what both libraries promise: sizes and coverage, not the order.
//
//   torch_data_program <dir> <out> [--compare <reference>]      exit 0 when everything holds

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

// A custom dataset as users write them: example i = ([i, i*i], i % 4).
struct Squares : torch::data::datasets::Dataset<Squares> {
  explicit Squares(size_t n) : n_(n) {}
  torch::data::Example<> get(size_t index) override {
    const auto x = static_cast<double>(index);
    return {torch::tensor({x, x * x}), torch::tensor(static_cast<int64_t>(index % 4), torch::dtype(torch::kInt64))};
  }
  torch::optional<size_t> size() const override { return n_; }
  size_t n_;
};

void put_be32(std::ofstream& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.put(static_cast<char>((v >> shift) & 0xff));
}

void write_mnist_test_split(const std::string& dir) {
  const uint32_t n = 10000;
  std::ofstream images(dir + "/t10k-images-idx3-ubyte", std::ios::binary);
  put_be32(images, 2051);
  put_be32(images, n);
  put_be32(images, 28);
  put_be32(images, 28);
  std::vector<char> pixels(28 * 28);
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t p = 0; p < 28 * 28; ++p) pixels[p] = static_cast<char>((i * 7 + p * 13) % 256);
    images.write(pixels.data(), static_cast<std::streamsize>(pixels.size()));
  }
  std::ofstream labels(dir + "/t10k-labels-idx1-ubyte", std::ios::binary);
  put_be32(labels, 2049);
  put_be32(labels, n);
  for (uint32_t i = 0; i < n; ++i) labels.put(static_cast<char>((i * 3) % 10));
}

std::string shape(const torch::Tensor& t) {
  std::string s = "[";
  // NOTE: appended piece by piece: g++ 12 -O2 warns (-Wrestrict, falsely) on (d ? "," : "") + str.
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d > 0) s += ',';
    s += std::to_string(t.size(d));
  }
  return s + "]";
}

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

std::string list(const std::vector<size_t>& v) {
  std::string s;
  for (size_t x : v) {
    if (!s.empty()) s += ',';
    s += std::to_string(x);
  }
  return s;
}

template <class S>
std::vector<size_t> drain(S& sampler, size_t batch) {
  std::vector<size_t> all;
  while (auto b = sampler.next(batch)) all.insert(all.end(), b->begin(), b->end());
  return all;
}

std::vector<std::string> run(const std::string& dir) {
  std::vector<std::string> out;
  torch::manual_seed(1);

  // 1. A custom dataset, unstacked batches (std::vector<Example<>>), drop_last.
  auto raw = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Squares(11), torch::data::DataLoaderOptions().batch_size(3).drop_last(true));
  for (auto& batch : *raw) {
    std::string line = "raw_batch size " + std::to_string(batch.size());
    for (auto& e : batch) line += " " + num(e.data[1].item<double>()) + "/" + num(e.target.item<double>());
    out.push_back(line);
  }

  // 2. map + Lambda + Stack, several workers, in order.
  auto stacked = Squares(10)
                     .map(torch::data::transforms::Lambda<torch::data::Example<>>(
                         [](torch::data::Example<> e) {
                           e.data = e.data * 2;
                           return e;
                         }))
                     .map(torch::data::transforms::Stack<>());
  auto workers = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(stacked), torch::data::DataLoaderOptions(4).workers(2));
  for (auto& batch : *workers)
    out.push_back("stacked " + shape(batch.data) + " " + shape(batch.target) + " sum " +
                  num(batch.data.sum().item<double>()) + " targets " +
                  num(batch.target.sum().item<double>()));

  // 3. Normalize per channel.
  torch::data::transforms::Normalize<> norm({0.5, 1.0, 2.0}, {0.5, 0.25, 4.0});
  torch::Tensor img = torch::arange(12, torch::dtype(torch::kFloat32)).reshape({3, 2, 2});
  torch::Tensor normed = norm(img);
  std::string nl = "normalize " + shape(norm.mean) + " " + shape(normed);
  for (int64_t i = 0; i < 12; ++i) nl += " " + num(normed.flatten()[i].item<double>());
  out.push_back(nl);
  torch::data::transforms::Normalize<> scalar(0.1307, 0.3081);
  out.push_back("normalize_scalar " + shape(scalar(torch::ones({1, 28, 28}))) + " " +
                num(scalar(torch::ones({1, 28, 28}))[0][0][0].item<double>()));

  // 4. TensorDataset + Stack<TensorExample>.
  torch::data::datasets::TensorDataset td(torch::arange(6, torch::dtype(torch::kFloat32)).reshape({3, 2}));
  auto tl = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      td.map(torch::data::transforms::Stack<torch::data::TensorExample>()), 2);
  for (auto& batch : *tl)
    out.push_back("tensor_dataset " + shape(batch.data) + " " + num(batch.data.sum().item<double>()));

  // 5. The samplers.
  for (bool dup : {true, false})
    for (size_t r = 0; r < 3; ++r) {
      torch::data::samplers::DistributedSequentialSampler s(10, 3, r, dup);
      out.push_back("dseq dup " + std::to_string(dup) + " rank " + std::to_string(r) + " " +
                    list(drain(s, 3)));
    }
  for (bool dup : {true, false}) {
    std::set<size_t> seen;
    size_t total = 0;
    std::string sizes;
    for (size_t r = 0; r < 4; ++r) {
      torch::data::samplers::DistributedRandomSampler s(10, 4, r, dup);
      s.set_epoch(3);
      s.reset();
      std::vector<size_t> mine = drain(s, 2);
      sizes += " " + std::to_string(mine.size());
      total += mine.size();
      seen.insert(mine.begin(), mine.end());
    }
    out.push_back("drandom dup " + std::to_string(dup) + " sizes" + sizes + " total " +
                  std::to_string(total) + " distinct " + std::to_string(seen.size()));
  }
  torch::data::samplers::RandomSampler rs(20);
  std::vector<size_t> perm = drain(rs, 6);
  std::sort(perm.begin(), perm.end());
  out.push_back("random sorted " + list(perm));

  // 6. MNIST, as the official example loads it.
  write_mnist_test_split(dir);
  auto test = torch::data::datasets::MNIST(dir, torch::data::datasets::MNIST::Mode::kTest);
  out.push_back("mnist is_train " + std::to_string(test.is_train()) + " size " +
                std::to_string(test.size().value()) + " images " + shape(test.images()) +
                " targets " + shape(test.targets()) + " pixel " +
                num(test.images()[9][0][3][4].item<double>()) + " target " +
                num(test.targets()[9].item<double>()) + " dtypes " +
                std::to_string(test.images().dtype() == torch::kFloat32) +
                std::to_string(test.targets().dtype() == torch::kInt64));
  auto test_dataset = torch::data::datasets::MNIST(dir, torch::data::datasets::MNIST::Mode::kTest)
                          .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
                          .map(torch::data::transforms::Stack<>());
  const size_t test_dataset_size = test_dataset.size().value();
  auto test_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(test_dataset), 4000);
  for (const auto& batch : *test_loader)
    out.push_back("mnist_batch " + shape(batch.data) + " " + shape(batch.target) + " sum " +
                  num(batch.data.sum().item<double>()) + " targets " +
                  num(batch.target.sum().item<double>()));
  out.push_back("mnist_size " + std::to_string(test_dataset_size));
  // The default sampler (RandomSampler) visits every example once.
  auto shuffled = torch::data::make_data_loader(
      torch::data::datasets::MNIST(dir, torch::data::datasets::MNIST::Mode::kTest)
          .map(torch::data::transforms::Stack<>()),
      torch::data::DataLoaderOptions().batch_size(2500).workers(2));
  double target_sum = 0;
  size_t count = 0;
  for (auto& batch : *shuffled) {
    target_sum += batch.target.sum().item<double>();
    count += static_cast<size_t>(batch.data.size(0));
  }
  out.push_back("mnist_random count " + std::to_string(count) + " targets " + num(target_sum));
  return out;
}

bool numeric(const std::string& w, double& v) {
  std::istringstream is(w);
  is >> v;
  return !is.fail() && is.eof();
}

// Lines equal word by word; fractional numbers within a relative 1e-5.
int compare(const std::vector<std::string>& mine, const std::string& reference) {
  std::ifstream in(reference);
  std::vector<std::string> ref;
  for (std::string line; std::getline(in, line);) ref.push_back(line);
  int bad = 0;
  if (ref.size() != mine.size()) {
    std::cerr << "line count " << mine.size() << " vs reference " << ref.size() << "\n";
    ++bad;
  }
  for (size_t i = 0; i < std::min(ref.size(), mine.size()); ++i) {
    std::istringstream a(mine[i]), b(ref[i]);
    std::vector<std::string> wa, wb;
    for (std::string w; a >> w;) wa.push_back(w);
    for (std::string w; b >> w;) wb.push_back(w);
    bool same = wa.size() == wb.size();
    for (size_t j = 0; same && j < wa.size(); ++j) {
      double x = 0, y = 0;
      const bool fractional = wa[j].find_first_of(".e") != std::string::npos ||
                              wb[j].find_first_of(".e") != std::string::npos;
      if (fractional && numeric(wa[j], x) && numeric(wb[j], y))
        same = std::fabs(x - y) <= 1e-5 * std::max(1.0, std::max(std::fabs(x), std::fabs(y)));
      else
        same = wa[j] == wb[j];
    }
    if (!same) {
      std::cerr << "differs:\n  here:      " << mine[i] << "\n  reference: " << ref[i] << "\n";
      ++bad;
    }
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 5) {
    std::cerr << "usage: torch_data_program <dir> <out> [--compare <reference>]\n";
    return 2;
  }
  try {
    const std::vector<std::string> lines = run(argv[1]);
    std::ofstream out(argv[2]);
    for (const std::string& l : lines) {
      out << l << "\n";
      std::cout << l << "\n";
    }
    if (argc == 5) {
      const int bad = compare(lines, argv[4]);
      std::cout << (bad == 0 ? "torch_data_program: same as the reference\n"
                             : "torch_data_program: DIFFERS from the reference\n");
      return bad == 0 ? 0 : 1;
    }
    std::cout << "torch_data_program: OK\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "torch_data_program: " << e.what() << "\n";
    return 1;
  }
}

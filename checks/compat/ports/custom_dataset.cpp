// Port corpus: a custom Dataset, as users write them. The program writes a small CSV file
// (x1,x2,label), reads it in a torch::data::datasets::Dataset subclass, stacks batches with
// map(Stack<>()), loads them with a SequentialSampler and trains a two-layer classifier with SGD
// and cross_entropy for a few epochs; prints the loss per epoch and the final accuracy.
#include <torch/torch.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "port_out.hpp"

class CsvDataset : public torch::data::datasets::Dataset<CsvDataset> {
 public:
  explicit CsvDataset(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::stringstream ss(line);
      std::string a, b, c;
      std::getline(ss, a, ',');
      std::getline(ss, b, ',');
      std::getline(ss, c, ',');
      rows_.push_back({std::stof(a), std::stof(b)});
      labels_.push_back(std::stol(c));
    }
  }
  torch::data::Example<> get(size_t index) override {
    auto x = torch::tensor({rows_[index][0], rows_[index][1]});
    auto y = torch::tensor(labels_[index], torch::kLong);
    return {x, y};
  }
  torch::optional<size_t> size() const override { return rows_.size(); }

 private:
  std::vector<std::vector<float>> rows_;
  std::vector<int64_t> labels_;
};

void write_csv(const std::string& path, int n) {
  std::ofstream out(path);
  out << "x1,x2,label\n";
  for (int i = 0; i < n; ++i) {
    const double x1 = std::sin(i * 1.7), x2 = std::cos(i * 2.3);
    const int label = (x1 * x1 + x2 * x2 > 0.7 ? 1 : 0) + (x1 > 0.3 ? 1 : 0);
    out << x1 << "," << x2 << "," << label << "\n";
  }
}

int main() {
  write_csv("points.csv", 120);
  auto dataset = CsvDataset("points.csv").map(torch::data::transforms::Stack<>());
  port::out_int("dataset_size", static_cast<int64_t>(dataset.size().value()));
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(dataset), torch::data::DataLoaderOptions().batch_size(16));

  torch::nn::Sequential model(torch::nn::Linear(2, 16), torch::nn::ReLU(), torch::nn::Linear(16, 3));
  port::init_parameters(model);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.2).momentum(0.9));
  for (int epoch = 1; epoch <= 30; ++epoch) {
    double total = 0;
    int64_t correct = 0, seen = 0, batches = 0;
    for (auto& batch : *loader) {
      auto logits = model->forward(batch.data);
      auto loss = torch::nn::functional::cross_entropy(logits, batch.target);
      opt.zero_grad();
      loss.backward();
      opt.step();
      total += loss.item<double>();
      correct += logits.argmax(1).eq(batch.target).sum().item<int64_t>();
      seen += batch.data.size(0);
      ++batches;
    }
    if (epoch == 1) port::out_int("batches_per_epoch", batches);
    if (epoch <= 3) port::out(port::key("epoch_", epoch) + "_loss", total / batches);
    if (epoch == 30) {
      port::out("~final_loss", total / batches);
      port::out("~final_accuracy", static_cast<double>(correct) / seen);
      std::cerr << "accuracy " << static_cast<double>(correct) / seen << "\n";
    }
  }
  return 0;
}

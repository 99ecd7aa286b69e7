// Port corpus: an LSTM sequence classifier. Token sequences of different lengths are embedded
// (nn::Embedding), packed (nn::utils::rnn::pack_padded_sequence, batch_first, unsorted lengths),
// run through a 2-layer bidirectional nn::LSTM (forward_with_packed_input), and the last layer's
// final states of both directions feed an nn::Linear; cross_entropy, Adam, accuracy. Also the
// padded path (lstm->forward with batch_first output, pad_packed_sequence), nn::GRU, nn::RNN and
// the cells, at fixed inputs. Parameters come from port::wave (the random generators differ).
#include <torch/torch.h>

#include <iostream>
#include <string>
#include <tuple>
#include <vector>

#include "port_out.hpp"

namespace rnn_utils = torch::nn::utils::rnn;

namespace {

constexpr int64_t kVocab = 10, kBatch = 8, kMaxLen = 6;

struct ClassifierImpl : torch::nn::Module {
  ClassifierImpl()
      : embed(register_module("embed", torch::nn::Embedding(kVocab, 4))),
        lstm(register_module("lstm", torch::nn::LSTM(torch::nn::LSTMOptions(4, 5)
                                                         .num_layers(2)
                                                         .batch_first(true)
                                                         .bidirectional(true)))),
        fc(register_module("fc", torch::nn::Linear(10, 3))) {}

  torch::Tensor forward(const torch::Tensor& tokens, const torch::Tensor& lengths) {
    torch::Tensor x = embed(tokens);  // [N, T, 4]
    auto packed = rnn_utils::pack_padded_sequence(x, lengths, /*batch_first=*/true,
                                                  /*enforce_sorted=*/false);
    auto result = lstm->forward_with_packed_input(packed);
    torch::Tensor h_n = std::get<0>(std::get<1>(result));                 // [L * D, N, H]
    torch::Tensor last = torch::cat({h_n.select(0, 2), h_n.select(0, 3)}, 1);  // [N, 2 H]
    return fc(last);
  }

  torch::nn::Embedding embed;
  torch::nn::LSTM lstm;
  torch::nn::Linear fc;
};
TORCH_MODULE(Classifier);

}  // namespace

int main() {
  // Sequences of lengths 1..6, tokens 1..9 (0 pads); class: the number of tokens > 5, mod 3.
  const std::vector<int64_t> lengths_v = {3, 6, 1, 4, 5, 2, 6, 3};
  std::vector<int64_t> tok(kBatch * kMaxLen, 0), cls;
  for (int64_t n = 0; n < kBatch; ++n) {
    int64_t big = 0;
    for (int64_t t = 0; t < lengths_v[n]; ++t) {
      const int64_t v = 1 + (n * 7 + t * 3 + n * t) % 9;
      tok[n * kMaxLen + t] = v;
      big += v > 5;
    }
    cls.push_back(big % 3);
  }
  const torch::Tensor tokens = torch::tensor(tok, torch::dtype(torch::kLong)).reshape({kBatch, kMaxLen});
  const torch::Tensor lengths = torch::tensor(lengths_v, torch::dtype(torch::kLong));
  const torch::Tensor labels = torch::tensor(cls, torch::dtype(torch::kLong));

  Classifier model;
  port::init_parameters(model, 0.2);
  port::out_int("parameters", static_cast<int64_t>(model->parameters().size()));
  port::out("logits", model->forward(tokens, lengths));

  // The padded path and pad_packed_sequence at fixed inputs.
  {
    torch::NoGradGuard no_grad;
    torch::Tensor x = model->embed(tokens);
    auto [out, state] = model->lstm->forward(x);
    port::out_shape("padded_out_shape", out);
    port::out("padded_out_row", out.select(0, 1).select(0, 5));
    port::out("padded_c_n", std::get<1>(state).select(0, 3));
    auto packed = rnn_utils::pack_padded_sequence(x, lengths, true, false);
    port::out("batch_sizes", packed.batch_sizes().to(torch::kDouble));
    port::out("sorted_indices", packed.sorted_indices().to(torch::kDouble));
    auto [packed_out, packed_state] = model->lstm->forward_with_packed_input(packed);
    auto [unpacked, unpacked_lengths] = rnn_utils::pad_packed_sequence(packed_out, true);
    port::out_shape("unpacked_shape", unpacked);
    port::out("unpacked_lengths", unpacked_lengths.to(torch::kDouble));
    port::out("unpacked_row", unpacked.select(0, 0).select(0, 2));
    port::out("packed_h_n", std::get<0>(packed_state).select(0, 1));
  }

  // GRU, RNN and the cells at fixed inputs, with their input gradients.
  {
    const torch::Tensor seq = port::wave({5, 2, 3}, 1.0, 0.6);
    torch::nn::GRU gru(torch::nn::GRUOptions(3, 4).num_layers(2));
    torch::nn::RNN rnn(torch::nn::RNNOptions(3, 4).nonlinearity(torch::kReLU).bidirectional(true));
    torch::nn::LSTMCell lstm_cell(3, 4);
    torch::nn::GRUCell gru_cell(3, 4);
    port::init_parameters(gru, 1.0);
    port::init_parameters(rnn, 2.0);
    port::init_parameters(lstm_cell, 3.0);
    port::init_parameters(gru_cell, 4.0);
    torch::Tensor x = seq.clone().requires_grad_(true);
    auto [gru_out, gru_h] = gru->forward(x);
    auto [rnn_out, rnn_h] = rnn->forward(x, port::wave({2, 2, 4}, 0.5, 1.5));
    torch::Tensor h = torch::zeros({2, 4}), c = torch::zeros({2, 4}), g = torch::zeros({2, 4});
    for (int64_t t = 0; t < 5; ++t) {
      std::tie(h, c) = lstm_cell->forward(x.select(0, t), std::make_tuple(h, c));
      g = gru_cell->forward(x.select(0, t), g);
    }
    port::out("gru_out", gru_out.select(0, 4));
    port::out("gru_h_n", gru_h);
    port::out("rnn_out", rnn_out.select(0, 0));
    port::out("rnn_h_n", rnn_h);
    port::out("lstm_cell_h", h);
    port::out("gru_cell_h", g);
    (gru_out.sum() + rnn_out.pow(2).sum() + h.sum() + g.sum()).backward();
    port::out("cells_input_grad", x.grad());
  }

  // Training.
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(0.05));
  for (int step = 1; step <= 40; ++step) {
    optimizer.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(tokens, lengths), labels);
    loss.backward();
    if (step == 1) port::out("embed_grad", model->embed->weight.grad());
    optimizer.step();
    if (step <= 3) port::out(port::key("loss_", step), loss.item<double>());
    if (step % 10 == 0) port::out(port::key("~loss_", step), loss.item<double>());
  }
  torch::NoGradGuard no_grad;
  const auto correct = model->forward(tokens, lengths).argmax(1).eq(labels).sum().item<int64_t>();
  port::out("~train_accuracy", static_cast<double>(correct) / kBatch);
  return 0;
}

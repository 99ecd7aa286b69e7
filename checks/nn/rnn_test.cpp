// nn::RNN / LSTM / GRU, the cells and packed sequences: each layer against its cell stepped by
// hand (the cell against the formula written out), shapes with batch_first / bidirectional /
// num_layers, packed input against each sequence run alone, gradients (float64 gradcheck), and
// the errors. LibTorch's values: the port program checks/compat/ports/lstm_classifier.cpp.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "nn/nn_helpers.hpp"

namespace gradlab {
namespace {

using checks::d64;
using checks::grad_ok;
using checks::rnd64;
namespace R = nn::utils::rnn;

bool close(const Tensor& a, const Tensor& b, double tol = 1e-12) {
  return a.sizes() == b.sizes() && allclose(a, b, tol, tol);
}

TEST(LSTMCell, IsTheFormulaWrittenOut) {
  nn::LSTMCell cell(3, 2);
  cell->to(kFloat64);
  Tensor x = rnd64({4, 3}, 1).detach(), h = rnd64({4, 2}, 2).detach(), c = rnd64({4, 2}, 3).detach();
  auto [h2, c2] = cell->forward(x, std::make_tuple(h, c));
  Tensor g = matmul(x, cell->weight_ih.t()) + cell->bias_ih + matmul(h, cell->weight_hh.t()) + cell->bias_hh;
  auto sig = [](const Tensor& t) { return 1.0 / (1.0 + exp(-t)); };
  Tensor i = sig(g.narrow(1, 0, 2)), f = sig(g.narrow(1, 2, 2)), gg = tanh(g.narrow(1, 4, 2)),
         o = sig(g.narrow(1, 6, 2));
  Tensor c_want = f * c + i * gg;
  EXPECT_TRUE(close(c2, c_want));
  EXPECT_TRUE(close(h2, o * tanh(c_want)));
  // Unbatched input and the default (zero) state.
  auto [hu, cu] = cell->forward(x.select(0, 1));
  auto [hz, cz] = cell->forward(x, std::make_tuple(zeros({4, 2}, x.options()), zeros({4, 2}, x.options())));
  EXPECT_TRUE(close(hu, hz.select(0, 1)));
  EXPECT_EQ(cell->named_parameters().keys(),
            (std::vector<std::string>{"weight_ih", "weight_hh", "bias_ih", "bias_hh"}));
}

TEST(GRUCell, IsTheFormulaWrittenOut) {
  nn::GRUCell cell(nn::GRUCellOptions(3, 2));
  cell->to(kFloat64);
  Tensor x = rnd64({4, 3}, 4).detach(), h = rnd64({4, 2}, 5).detach();
  Tensor a = matmul(x, cell->weight_ih.t()) + cell->bias_ih;
  Tensor b = matmul(h, cell->weight_hh.t()) + cell->bias_hh;
  auto sig = [](const Tensor& t) { return 1.0 / (1.0 + exp(-t)); };
  Tensor r = sig(a.narrow(1, 0, 2) + b.narrow(1, 0, 2)), z = sig(a.narrow(1, 2, 2) + b.narrow(1, 2, 2));
  Tensor n = tanh(a.narrow(1, 4, 2) + r * b.narrow(1, 4, 2));
  EXPECT_TRUE(close(cell->forward(x, h), (1.0 - z) * n + z * h));
  nn::RNNCell relu_cell(nn::RNNCellOptions(3, 2).nonlinearity(kReLU).bias(false));
  relu_cell->to(kFloat64);
  EXPECT_TRUE(close(relu_cell->forward(x, h),
                    relu(matmul(x, relu_cell->weight_ih.t()) + matmul(h, relu_cell->weight_hh.t()))));
  EXPECT_EQ(relu_cell->named_parameters().size(), 2u);
}

// Runs `layer` (1 layer, 1 direction) by hand with `cell` holding the same weights.
TEST(LSTM, OneLayerIsItsCellSteppedThroughTime) {
  nn::LSTM lstm(nn::LSTMOptions(3, 2));
  lstm->to(kFloat64);
  nn::LSTMCell cell(3, 2);
  cell->to(kFloat64);
  {
    NoGradGuard ng;
    cell->weight_ih.copy_(lstm->named_parameters()["weight_ih_l0"]);
    cell->weight_hh.copy_(lstm->named_parameters()["weight_hh_l0"]);
    cell->bias_ih.copy_(lstm->named_parameters()["bias_ih_l0"]);
    cell->bias_hh.copy_(lstm->named_parameters()["bias_hh_l0"]);
  }
  Tensor x = rnd64({5, 4, 3}, 6).detach();
  Tensor h = rnd64({1, 4, 2}, 7).detach(), c = rnd64({1, 4, 2}, 8).detach();
  auto [out, state] = lstm->forward(x, std::make_tuple(h, c));
  std::tuple<Tensor, Tensor> s{h.select(0, 0), c.select(0, 0)};
  for (int64_t t = 0; t < 5; ++t) {
    s = cell->forward(x.select(0, t), s);
    EXPECT_TRUE(close(out.select(0, t), std::get<0>(s))) << "t = " << t;
  }
  EXPECT_TRUE(close(std::get<0>(state).select(0, 0), std::get<0>(s)));
  EXPECT_TRUE(close(std::get<1>(state).select(0, 0), std::get<1>(s)));
}

TEST(RNNLayers, ShapesNamesAndDirections) {
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true).batch_first(true));
  EXPECT_EQ(lstm->named_parameters().size(), 16u);
  EXPECT_TRUE(lstm->named_parameters().contains("weight_hh_l1_reverse"));
  EXPECT_EQ(lstm->named_parameters()["weight_ih_l1"].sizes(), Shape({16, 8}));
  Tensor x = randn({2, 5, 3});
  auto [out, state] = lstm->forward(x);
  EXPECT_EQ(out.sizes(), Shape({2, 5, 8}));
  EXPECT_EQ(std::get<0>(state).sizes(), Shape({4, 2, 4}));
  EXPECT_EQ(std::get<1>(state).sizes(), Shape({4, 2, 4}));
  // The last layer's forward h_n is its output at the last step; the backward one at step 0.
  EXPECT_TRUE(close(std::get<0>(state).select(0, 2), out.select(1, 4).narrow(1, 0, 4), 1e-6));
  EXPECT_TRUE(close(std::get<0>(state).select(0, 3), out.select(1, 0).narrow(1, 4, 4), 1e-6));
  nn::GRU gru(nn::GRUOptions(3, 4).num_layers(3));
  auto [gout, gh] = gru->forward(randn({6, 2, 3}));
  EXPECT_EQ(gout.sizes(), Shape({6, 2, 4}));
  EXPECT_EQ(gh.sizes(), Shape({3, 2, 4}));
  nn::RNN rnn(nn::RNNOptions(3, 4).nonlinearity(kReLU).bias(false));
  EXPECT_EQ(rnn->named_parameters().size(), 2u);
  auto [rout, rh] = rnn->forward(randn({6, 3}));  // unbatched [T, I]
  EXPECT_EQ(rout.sizes(), Shape({6, 4}));
  EXPECT_EQ(rh.sizes(), Shape({1, 4}));
  EXPECT_GE(rout.min().item<double>(), 0.0);  // relu
  std::ostringstream os;
  lstm->pretty_print(os);
  EXPECT_EQ(os.str(), "LSTM(input_size=3, hidden_size=4, num_layers=2, bias=true, batch_first=true, "
                      "dropout=0, bidirectional=true)");
}

TEST(PackedSequence, PackPadRoundTripAndBatchSizes) {
  // Lengths 2, 3, 1 (not sorted): sorted order 1, 0, 2.
  Tensor x = rnd64({3, 3, 2}, 9).detach();  // [T, N, *]
  Tensor lengths = from_vector(std::vector<int64_t>{2, 3, 1}, {3});
  EXPECT_THROW(R::pack_padded_sequence(x, lengths), ValueError);  // enforce_sorted
  R::PackedSequence p = R::pack_padded_sequence(x, lengths, false, /*enforce_sorted=*/false);
  EXPECT_EQ(p.batch_sizes().to_vector<int64_t>(), (std::vector<int64_t>{3, 2, 1}));
  EXPECT_EQ(p.sorted_indices().to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 2}));
  EXPECT_EQ(p.unsorted_indices().to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 2}));
  EXPECT_EQ(p.data().sizes(), Shape({6, 2}));
  EXPECT_TRUE(close(p.data().select(0, 0), x.select(0, 0).select(0, 1)));  // t 0, sequence 1
  auto [padded, lens] = R::pad_packed_sequence(p, /*batch_first=*/true, -1.0);
  EXPECT_EQ(lens.to_vector<int64_t>(), (std::vector<int64_t>{2, 3, 1}));
  EXPECT_EQ(padded.sizes(), Shape({3, 3, 2}));
  EXPECT_TRUE(close(padded.select(0, 0).narrow(0, 0, 2), x.select(1, 0).narrow(0, 0, 2)));
  EXPECT_EQ(padded.select(0, 2).select(0, 2).to_vector<double>(), (std::vector<double>{-1, -1}));
  auto [longer, l2] = R::pad_packed_sequence(p, false, 0.0, 5);
  EXPECT_EQ(longer.sizes(), Shape({5, 3, 2}));
  EXPECT_THROW(R::pad_packed_sequence(p, false, 0.0, 2), ValueError);
  EXPECT_THROW(R::pack_padded_sequence(x, from_vector(std::vector<int64_t>{4, 3, 1}, {3})), ValueError);
  EXPECT_THROW(R::pack_padded_sequence(x, from_vector(std::vector<int64_t>{2, 1}, {2})), ShapeError);
}

TEST(PackedSequence, EachSequenceGetsTheStateOfItsOwnLastStep) {
  for (bool bidirectional : {false, true}) {
    nn::LSTM lstm(nn::LSTMOptions(2, 3).num_layers(2).bidirectional(bidirectional));
    lstm->to(kFloat64);
    Tensor x = rnd64({4, 3, 2}, 10).detach();
    const std::vector<int64_t> len = {2, 4, 3};
    R::PackedSequence p =
        R::pack_padded_sequence(x, from_vector(len, {3}), false, /*enforce_sorted=*/false);
    auto [out, state] = lstm->forward_with_packed_input(p);
    auto [padded, lens] = R::pad_packed_sequence(out);
    const int64_t D = bidirectional ? 2 : 1;
    for (int64_t n = 0; n < 3; ++n) {
      // Sequence n alone, unpadded.
      Tensor alone = x.narrow(0, 0, len[n]).narrow(1, n, 1);
      auto [o1, s1] = lstm->forward(alone);
      EXPECT_TRUE(close(padded.narrow(0, 0, len[n]).narrow(1, n, 1), o1)) << "n = " << n;
      EXPECT_TRUE(close(std::get<0>(state).narrow(1, n, 1), std::get<0>(s1))) << "n = " << n;
      EXPECT_TRUE(close(std::get<1>(state).narrow(1, n, 1), std::get<1>(s1))) << "n = " << n;
      if (len[n] < 4) {  // padding after the end
        EXPECT_EQ(padded.select(0, 3).select(0, n).abs().sum().item<double>(), 0.0);
      }
    }
    EXPECT_EQ(std::get<0>(state).sizes(), Shape({2 * D, 3, 3}));
  }
  // GRU and RNN take packed input too.
  nn::GRU gru(nn::GRUOptions(2, 3));
  R::PackedSequence q = R::pack_padded_sequence(randn({3, 2, 2}), from_vector(std::vector<int64_t>{3, 2}, {2}));
  auto [gout, gh] = gru->forward_with_packed_input(q);
  EXPECT_EQ(gout.data().sizes(), Shape({5, 3}));
  EXPECT_EQ(gh.sizes(), Shape({1, 2, 3}));
}

TEST(RNNLayers, GradientsAreRightInFloat64) {
  nn::LSTM lstm(nn::LSTMOptions(2, 2).num_layers(2).bidirectional(true));
  lstm->to(kFloat64);
  EXPECT_TRUE(grad_ok([&](const TensorList& in) {
    auto [out, state] = lstm->forward(in[0], std::make_tuple(in[1], in[2]));
    return out.sum() + (std::get<0>(state) * std::get<1>(state)).sum();
  }, {rnd64({3, 2, 2}, 11), rnd64({4, 2, 2}, 12), rnd64({4, 2, 2}, 13)}, "LSTM"));
  nn::GRU gru(nn::GRUOptions(2, 3).batch_first(true));
  gru->to(kFloat64);
  EXPECT_TRUE(grad_ok([&](const TensorList& in) { return std::get<0>(gru->forward(in[0], in[1])); },
                      {rnd64({2, 3, 2}, 14), rnd64({1, 2, 3}, 15)}, "GRU"));
  // Through packing: the gradient reaches only the valid steps.
  nn::RNN rnn(nn::RNNOptions(2, 2));
  rnn->to(kFloat64);
  Tensor x = rnd64({3, 2, 2}, 16);
  auto [po, ph] = rnn->forward_with_packed_input(
      R::pack_padded_sequence(x, from_vector(std::vector<int64_t>{3, 1}, {2})));
  (po.data().sum() + ph.sum()).backward();
  EXPECT_EQ(x.grad().select(0, 1).select(0, 1).abs().sum().item<double>(), 0.0);
  EXPECT_GT(x.grad().select(0, 1).select(0, 0).abs().sum().item<double>(), 0.0);
  EXPECT_TRUE(grad_ok([&](const TensorList& in) {
    auto [o, h] = rnn->forward_with_packed_input(
        R::pack_padded_sequence(in[0], from_vector(std::vector<int64_t>{1, 3}, {2}), false, false));
    return std::get<0>(R::pad_packed_sequence(o)).sum() + h.sum();
  }, {rnd64({3, 2, 2}, 17)}, "packed RNN"));
}

TEST(RNNLayers, ErrorsNameTheLayerAndTheShape) {
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2));
  EXPECT_THROW(lstm->forward(randn({5, 2, 4})), ShapeError);     // input_size 3
  EXPECT_THROW(lstm->forward(randn({5, 2, 3, 1})), ShapeError);  // rank
  EXPECT_THROW(lstm->forward(randn({5, 2, 3}), std::make_tuple(zeros({1, 2, 4}), zeros({2, 2, 4}))),
               ShapeError);
  EXPECT_THROW(nn::LSTM(nn::LSTMOptions(3, 4).proj_size(2)), ValueError);
  EXPECT_THROW(nn::RNN(nn::RNNOptions(3, 4).nonlinearity(kSigmoid)), ValueError);
  EXPECT_THROW(nn::GRU(nn::GRUOptions(3, 0)), ValueError);
  EXPECT_THROW(nn::GRUCell(3, 2)->forward(randn({4, 3}), randn({3, 2})), ShapeError);
  try {
    lstm->forward(randn({5, 2, 3}), std::make_tuple(zeros({1, 2, 4}), zeros({2, 2, 4})));
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("LSTM"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("[2, 2, 4]"));
  }
  // Dropout between layers acts in training only.
  nn::GRU drop(nn::GRUOptions(3, 4).num_layers(2).dropout(0.5));
  drop->eval();
  Tensor x = randn({4, 2, 3});
  EXPECT_TRUE(equal(std::get<0>(drop->forward(x)), std::get<0>(drop->forward(x))));
}

}  // namespace
}  // namespace gradlab

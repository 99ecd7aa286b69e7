// Recurrent cells, LibTorch's top-level torch::lstm_cell, gru_cell, rnn_tanh_cell and
// rnn_relu_cell, composed from linear, sigmoid, tanh, relu and chunk (their backward comes from
// the pieces). nn::RNN / LSTM / GRU and the nn cells step through rnn_detail::step_from_gates,
// the one place the cell formulas are written (nn/rnn.cpp computes x W_ihᵀ + b_ih for all steps
// at once, then steps).

#include "gradlab/ops/common.hpp"
#include "gradlab/ops/nn_ops.hpp"

namespace gradlab {
using namespace ops_detail;

namespace rnn_detail {

int64_t gates_of(Cell cell) { return cell == Cell::Lstm ? 4 : cell == Cell::Gru ? 3 : 1; }

std::pair<Tensor, Tensor> step_from_gates(Cell cell, const Tensor& gx, const Tensor& h,
                                          const Tensor& c, const Tensor& w_hh, const Tensor& b_hh,
                                          const Site& site) {
  Tensor gh = linear(h, w_hh, b_hh, site);  // h W_hhᵀ + b_hh
  switch (cell) {
    case Cell::RnnTanh: return {tanh(add(gx, gh, site), site), Tensor()};
    case Cell::RnnRelu: return {relu(add(gx, gh, site), site), Tensor()};
    case Cell::Lstm: {
      // i, f, g, o = chunk(gx + gh, 4);  c' = σ(f) c + σ(i) tanh(g);  h' = σ(o) tanh(c')
      const TensorList g = chunk(add(gx, gh, site), 4, 1, site);
      Tensor c2 = add(mul(sigmoid(g[1], site), c, site),
                      mul(sigmoid(g[0], site), tanh(g[2], site), site), site);
      return {mul(sigmoid(g[3], site), tanh(c2, site), site), c2};
    }
    case Cell::Gru: {
      // r, z, n: r = σ(r_x + r_h), z = σ(z_x + z_h), n = tanh(n_x + r n_h), h' = (1 - z) n + z h
      const TensorList a = chunk(gx, 3, 1, site), b = chunk(gh, 3, 1, site);
      Tensor r = sigmoid(add(a[0], b[0], site), site), z = sigmoid(add(a[1], b[1], site), site);
      Tensor n = tanh(add(a[2], mul(r, b[2], site), site), site);
      return {add(mul(rsub(z, 1.0, site), n, site), mul(z, h, site), site), Tensor()};
    }
  }
  return {};
}

}  // namespace rnn_detail

namespace {

using rnn_detail::Cell;

const char* cell_name(Cell cell) {
  switch (cell) {
    case Cell::RnnTanh: return "rnn_tanh_cell";
    case Cell::RnnRelu: return "rnn_relu_cell";
    case Cell::Lstm: return "lstm_cell";
    case Cell::Gru: return "gru_cell";
  }
  return "cell";
}

// input [N, I] (or [I]), a state [N, H] (or [H]) per entry of `states`, weights [G H, I] and
// [G H, H], biases [G H]: the shapes LibTorch's cells check.
void check_cell(Cell cell, const Tensor& input, const TensorList& states, const Tensor& w_ih,
                const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh) {
  const char* op = cell_name(cell);
  check_defined(op, input);
  check_defined(op, w_ih, "w_ih");
  check_defined(op, w_hh, "w_hh");
  GRADLAB_CHECK(input.dim() == 1 || input.dim() == 2, ShapeError, op,
                "expected input to be 1-D or 2-D", "[N, input_size] or [input_size]",
                shape_str(input.sizes()));
  const int64_t G = rnn_detail::gates_of(cell);
  GRADLAB_CHECK(w_hh.dim() == 2 && w_hh.size(0) % G == 0 && w_hh.size(1) * G == w_hh.size(0),
                ShapeError, op, "w_hh must be [gates * hidden_size, hidden_size]",
                "[" + std::to_string(G) + " H, H]", shape_str(w_hh.sizes()));
  const int64_t H = w_hh.size(1);
  GRADLAB_CHECK(w_ih.dim() == 2 && w_ih.size(0) == G * H && w_ih.size(1) == input.size(-1),
                ShapeError, op, "w_ih must be [gates * hidden_size, input_size]",
                shape_str({G * H, input.size(-1)}), shape_str(w_ih.sizes()));
  for (const Tensor* b : {&b_ih, &b_hh})
    if (b->defined())
      GRADLAB_CHECK(b->dim() == 1 && b->size(0) == G * H, ShapeError, op,
                    "biases must be [gates * hidden_size]", shape_str({G * H}),
                    shape_str(b->sizes()));
  const Shape want = input.dim() == 2 ? Shape{input.size(0), H} : Shape{H};
  for (const Tensor& s : states) {
    check_defined(op, s, "hx");
    GRADLAB_CHECK(s.sizes() == want, ShapeError, op,
                  "the hidden state must match the input's batch and hidden_size",
                  shape_str(want), shape_str(s.sizes()));
  }
}

// (h', c') of one step on a batched [N, I] input (an unbatched one gets a batch dim of 1).
std::pair<Tensor, Tensor> run_cell(Cell cell, const Tensor& input, const Tensor& h, const Tensor& c,
                                   const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                                   const Tensor& b_hh, const Site& site) {
  const bool unbatched = input.dim() == 1;
  auto batch = [&](const Tensor& t) { return unbatched && t.defined() ? t.unsqueeze(0, site) : t; };
  auto [h2, c2] = rnn_detail::step_from_gates(cell, linear(batch(input), w_ih, b_ih, site),
                                              batch(h), batch(c), w_hh, b_hh, site);
  if (unbatched) {
    h2 = h2.squeeze(0, site);
    if (c2.defined()) c2 = c2.squeeze(0, site);
  }
  return {h2, c2};
}

}  // namespace

std::tuple<Tensor, Tensor> lstm_cell(const Tensor& input, const TensorList& hx, const Tensor& w_ih,
                                     const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh,
                                     Site site) {
  GRADLAB_CHECK(hx.size() == 2, ValueError, "lstm_cell", "hx must be (h, c)", "2 tensors",
                std::to_string(hx.size()) + " tensors");
  check_cell(Cell::Lstm, input, hx, w_ih, w_hh, b_ih, b_hh);
  auto [h, c] = run_cell(Cell::Lstm, input, hx[0], hx[1], w_ih, w_hh, b_ih, b_hh, site);
  return {h, c};
}

Tensor gru_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                const Tensor& b_ih, const Tensor& b_hh, Site site) {
  check_cell(Cell::Gru, input, {hx}, w_ih, w_hh, b_ih, b_hh);
  return run_cell(Cell::Gru, input, hx, Tensor(), w_ih, w_hh, b_ih, b_hh, site).first;
}

Tensor rnn_tanh_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                     const Tensor& b_ih, const Tensor& b_hh, Site site) {
  check_cell(Cell::RnnTanh, input, {hx}, w_ih, w_hh, b_ih, b_hh);
  return run_cell(Cell::RnnTanh, input, hx, Tensor(), w_ih, w_hh, b_ih, b_hh, site).first;
}

Tensor rnn_relu_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                     const Tensor& b_ih, const Tensor& b_hh, Site site) {
  check_cell(Cell::RnnRelu, input, {hx}, w_ih, w_hh, b_ih, b_hh);
  return run_cell(Cell::RnnRelu, input, hx, Tensor(), w_ih, w_hh, b_ih, b_hh, site).first;
}

}  // namespace gradlab

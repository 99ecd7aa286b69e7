// nn::RNN / LSTM / GRU, their cells, and packed sequences (shapes: nn/rnn.hpp; the cell formulas:
// ops/rnn.cpp, rnn_detail::step_from_gates).
// A layer precomputes x W_ihᵀ + b_ih for all steps with one linear, then steps through time;
// packed input is unpacked to [T, N, *] (longest first) and each sequence's state stops
// changing after its last step (where(t < length, new, old)), so h_n is its last step's state.

#include "gradlab/nn/rnn.hpp"

#include <algorithm>
#include <cmath>
#include <ostream>

#include "gradlab/core/factories.hpp"
#include "gradlab/nn/init.hpp"
#include "gradlab/ops/nn_ops.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::nn {

namespace {

rnn_detail::Cell cell_of(RNNMode mode) {
  switch (mode) {
    case RNNMode::RNN_TANH: return rnn_detail::Cell::RnnTanh;
    case RNNMode::RNN_RELU: return rnn_detail::Cell::RnnRelu;
    case RNNMode::LSTM: return rnn_detail::Cell::Lstm;
    case RNNMode::GRU: return rnn_detail::Cell::Gru;
  }
  return rnn_detail::Cell::RnnTanh;
}

int64_t gates_of(RNNMode mode) { return rnn_detail::gates_of(cell_of(mode)); }

RNNMode rnn_mode(init::Nonlinearity n, const char* layer) {
  GRADLAB_CHECK(n == init::Nonlinearity::Tanh || n == init::Nonlinearity::ReLU, ValueError, layer,
                "unknown nonlinearity", "kTanh or kReLU", "another nonlinearity");
  return n == init::Nonlinearity::Tanh ? RNNMode::RNN_TANH : RNNMode::RNN_RELU;
}

// One step (ops/rnn.cpp: the cell formulas) from the input's gates gx = x W_ihᵀ + b_ih.
std::pair<Tensor, Tensor> cell(RNNMode mode, const Tensor& gx, const Tensor& h, const Tensor& c,
                               const Tensor& w_hh, const Tensor& b_hh) {
  return rnn_detail::step_from_gates(cell_of(mode), gx, h, c, w_hh, b_hh);
}

void check_positive(const char* layer, const char* what, int64_t v) {
  GRADLAB_CHECK(v > 0, ValueError, layer, std::string(what) + " must be positive",
                std::string(what) + " > 0", std::to_string(v));
}

std::vector<int64_t> sizes_of(const Tensor& batch_sizes) {
  return batch_sizes.to(kInt64).to_vector<int64_t>();
}

// [T, N, *] from packed data [Σ, *] and batch_sizes (sorted batch order), padding_value where a
// sequence has ended.
Tensor unpack_sorted(const Tensor& data, const std::vector<int64_t>& bs, double padding_value,
                     int64_t total_length) {
  const int64_t N = bs.empty() ? 0 : bs[0];
  TensorList steps;
  int64_t off = 0;
  for (int64_t t = 0; t < total_length; ++t) {
    const int64_t b = t < static_cast<int64_t>(bs.size()) ? bs[t] : 0;
    Tensor step = data.narrow(0, off, b);
    off += b;
    if (b < N) {
      Shape pad = data.sizes();
      pad[0] = N - b;
      step = cat({step, full(pad, padding_value, data.options())}, 0);
    }
    steps.push_back(step);
  }
  return stack(steps, 0);
}

// Packed data [Σ, *] from [T, N, *] (sorted batch order) and batch_sizes.
Tensor pack_sorted(const Tensor& padded, const std::vector<int64_t>& bs) {
  TensorList parts;
  for (size_t t = 0; t < bs.size(); ++t)
    parts.push_back(padded.select(0, static_cast<int64_t>(t)).narrow(0, 0, bs[t]));
  return cat(parts, 0);
}

// Each sequence's length from batch_sizes: the number of steps t with batch_sizes[t] > n.
std::vector<int64_t> lengths_of(const std::vector<int64_t>& bs) {
  std::vector<int64_t> len(static_cast<size_t>(bs.empty() ? 0 : bs[0]), 0);
  for (int64_t b : bs)
    for (int64_t n = 0; n < b; ++n) ++len[static_cast<size_t>(n)];
  return len;
}

void print_rnn(std::ostream& os, const char* name, const RNNImplBase::Config& c) {
  os << name << "(input_size=" << c.input_size << ", hidden_size=" << c.hidden_size
     << ", num_layers=" << c.num_layers << ", bias=" << (c.bias ? "true" : "false")
     << ", batch_first=" << (c.batch_first ? "true" : "false") << ", dropout=" << c.dropout
     << ", bidirectional=" << (c.bidirectional ? "true" : "false") << ")";
}

}  // namespace

// ---- packed sequences ---------------------------------------------------------------------------

namespace utils::rnn {

PackedSequence::PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices,
                               Tensor unsorted_indices)
    : data_(std::move(data)),
      batch_sizes_(std::move(batch_sizes)),
      sorted_indices_(std::move(sorted_indices)),
      unsorted_indices_(std::move(unsorted_indices)) {
  if (sorted_indices_.defined() && !unsorted_indices_.defined()) {  // the inverse permutation
    const std::vector<int64_t> order = sorted_indices_.to(kCPU).to(kInt64).to_vector<int64_t>();
    std::vector<int64_t> inverse(order.size());
    for (size_t i = 0; i < order.size(); ++i) inverse[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
    unsorted_indices_ = from_vector(inverse, {static_cast<int64_t>(inverse.size())},
                                    TensorOptions().dtype(kInt64).device(sorted_indices_.device()));
  }
}

PackedSequence PackedSequence::to(Device device) const {
  auto move = [&](const Tensor& t) { return t.defined() ? t.to(device) : t; };
  return PackedSequence(data_.to(device), batch_sizes_, move(sorted_indices_),
                        move(unsorted_indices_));
}
PackedSequence PackedSequence::to(ScalarType dtype) const {
  return PackedSequence(data_.to(dtype), batch_sizes_, sorted_indices_, unsorted_indices_);
}

PackedSequence pack_padded_sequence(Tensor input, Tensor lengths, bool batch_first,
                                    bool enforce_sorted) {
  const char* op = "pack_padded_sequence";
  GRADLAB_CHECK(input.defined() && input.dim() >= 2, ShapeError, op,
                "expected a padded batch of at least 2 dims",
                batch_first ? "[N, T, *]" : "[T, N, *]",
                input.defined() ? shape_str(input.sizes()) : "an undefined tensor");
  GRADLAB_CHECK(lengths.defined() && lengths.dim() == 1 && !lengths.is_floating_point(), ShapeError,
                op, "lengths must be a 1-D integer tensor", "int64 [N]",
                lengths.defined() ? lengths.describe() : "an undefined tensor");
  if (batch_first) input = input.transpose(0, 1);  // [T, N, *]
  const int64_t T = input.size(0), N = input.size(1);
  std::vector<int64_t> len = lengths.to(kCPU).to(kInt64).to_vector<int64_t>();
  GRADLAB_CHECK(static_cast<int64_t>(len.size()) == N, ShapeError, op,
                "expected one length per sequence of the batch", std::to_string(N) + " lengths",
                std::to_string(len.size()));
  Tensor sorted_indices;
  if (enforce_sorted) {
    for (size_t n = 1; n < len.size(); ++n)
      GRADLAB_CHECK(len[n - 1] >= len[n], ValueError, op,
                    "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                    "true",
                    "decreasing lengths", shape_str(Shape(len.begin(), len.end())),
                    "pass enforce_sorted=false to sort them here");
  } else {
    // Longest first; equal lengths keep their order (a stable sort, as PyTorch's).
    std::vector<int64_t> order(len.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return len[static_cast<size_t>(a)] > len[static_cast<size_t>(b)];
    });
    std::vector<int64_t> sorted;
    for (int64_t i : order) sorted.push_back(len[static_cast<size_t>(i)]);
    len = sorted;
    sorted_indices = from_vector(order, {N}, TensorOptions().dtype(kInt64).device(input.device()));
    input = input.index_select(1, sorted_indices);
  }
  for (int64_t l : len)
    GRADLAB_CHECK(l > 0 && l <= T, ValueError, op, "every length must be in 1..T",
                  "lengths in [1, " + std::to_string(T) + "]", std::to_string(l),
                  "a sequence of length 0 cannot be packed; drop it from the batch");
  std::vector<int64_t> bs;
  for (int64_t t = 0; t < len.front(); ++t) {
    int64_t b = 0;
    while (b < N && len[static_cast<size_t>(b)] > t) ++b;
    bs.push_back(b);
  }
  return PackedSequence(pack_sorted(input, bs),
                        from_vector(bs, {static_cast<int64_t>(bs.size())}), sorted_indices);
}

std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first,
                                               double padding_value,
                                               std::optional<int64_t> total_length) {
  const std::vector<int64_t> bs = sizes_of(sequence.batch_sizes());
  const auto T = static_cast<int64_t>(bs.size());
  GRADLAB_CHECK(!total_length || *total_length >= T, ValueError, "pad_packed_sequence",
                "total_length must be at least the length of the longest sequence",
                "total_length >= " + std::to_string(T),
                std::to_string(total_length.value_or(0)));
  Tensor padded = unpack_sorted(sequence.data(), bs, padding_value, total_length.value_or(T));
  std::vector<int64_t> len = lengths_of(bs);
  if (sequence.unsorted_indices().defined()) {
    padded = padded.index_select(1, sequence.unsorted_indices());
    const std::vector<int64_t> back = sequence.unsorted_indices().to(kCPU).to_vector<int64_t>();
    std::vector<int64_t> orig;
    for (int64_t i : back) orig.push_back(len[static_cast<size_t>(i)]);
    len = orig;
  }
  if (batch_first) padded = padded.transpose(0, 1).contiguous();
  return {padded, from_vector(len, {static_cast<int64_t>(len.size())})};
}

}  // namespace utils::rnn

// ---- RNN, LSTM, GRU -------------------------------------------------------------------------------

RNNImplBase::RNNImplBase(const Config& c, const char* name) : config_(c), name_(name) {
  check_positive(name, "input_size", c.input_size);
  check_positive(name, "hidden_size", c.hidden_size);
  check_positive(name, "num_layers", c.num_layers);
  GRADLAB_CHECK(c.dropout >= 0 && c.dropout <= 1, ValueError, name,
                "dropout should be a number in range [0, 1]", "0 <= dropout <= 1",
                std::to_string(c.dropout));
  const int64_t G = gates_of(c.mode), H = c.hidden_size, D = c.bidirectional ? 2 : 1;
  for (int64_t l = 0; l < c.num_layers; ++l)
    for (int64_t d = 0; d < D; ++d) {
      const std::string sfx = "_l" + std::to_string(l) + (d == 1 ? "_reverse" : "");
      const int64_t in = l == 0 ? c.input_size : H * D;
      flat_weights_.push_back(register_parameter("weight_ih" + sfx, empty({G * H, in})));
      flat_weights_.push_back(register_parameter("weight_hh" + sfx, empty({G * H, H})));
      if (c.bias) {
        flat_weights_.push_back(register_parameter("bias_ih" + sfx, empty({G * H})));
        flat_weights_.push_back(register_parameter("bias_hh" + sfx, empty({G * H})));
      }
    }
  reset_parameters();
}

void RNNImplBase::reset_parameters() {
  const double stdv = 1.0 / std::sqrt(static_cast<double>(config_.hidden_size));
  for (Tensor& w : flat_weights_) init::uniform_(w, -stdv, stdv);
}

std::vector<Tensor> RNNImplBase::all_weights() const { return flat_weights_; }

void RNNImplBase::pretty_print(std::ostream& os) const { print_rnn(os, name_, config_); }

std::tuple<Tensor, Tensor, Tensor> RNNImplBase::run(const Tensor& input, Tensor h0, Tensor c0,
                                                    const std::vector<int64_t>* lengths) const {
  const Config& c = config_;
  const int64_t T = input.size(0), N = input.size(1), H = c.hidden_size;
  const int64_t D = c.bidirectional ? 2 : 1;
  const bool lstm = c.mode == RNNMode::LSTM;
  if (!h0.defined()) h0 = zeros({c.num_layers * D, N, H}, input.options());
  if (lstm && !c0.defined()) c0 = zeros({c.num_layers * D, N, H}, input.options());
  std::vector<Tensor> alive;  // [N, 1] bool per step: t < length of sequence n
  if (lengths)
    for (int64_t t = 0; t < T; ++t) {
      std::vector<bool> m;
      for (int64_t l : *lengths) m.push_back(t < l);
      alive.push_back(from_vector(m, {N, 1}, TensorOptions().device(input.device())));
    }
  const size_t per = c.bias ? 4 : 2;
  Tensor layer_in = input;
  TensorList hn, cn;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    TensorList outputs;
    for (int64_t d = 0; d < D; ++d) {
      const size_t k = static_cast<size_t>(l * D + d) * per;
      const Tensor &w_ih = flat_weights_[k], &w_hh = flat_weights_[k + 1];
      const Tensor b_ih = c.bias ? flat_weights_[k + 2] : Tensor();
      const Tensor b_hh = c.bias ? flat_weights_[k + 3] : Tensor();
      Tensor gx = linear(layer_in, w_ih, b_ih);  // x W_ihᵀ + b_ih for every step: [T, N, G H]
      Tensor h = h0.select(0, l * D + d), cs = lstm ? c0.select(0, l * D + d) : Tensor();
      TensorList steps(static_cast<size_t>(T));
      for (int64_t s = 0; s < T; ++s) {
        const int64_t t = d == 0 ? s : T - 1 - s;  // the reverse direction reads back to front
        auto [h2, c2] = cell(c.mode, gx.select(0, t), h, cs, w_hh, b_hh);
        if (lengths) {  // past its end a sequence keeps its state
          h2 = where(alive[static_cast<size_t>(t)], h2, h);
          if (lstm) c2 = where(alive[static_cast<size_t>(t)], c2, cs);
        }
        h = h2, cs = c2;
        steps[static_cast<size_t>(t)] = h;
      }
      outputs.push_back(stack(steps, 0));
      hn.push_back(h);
      if (lstm) cn.push_back(cs);
    }
    layer_in = D == 2 ? cat(outputs, 2) : outputs[0];
    if (c.dropout > 0 && is_training() && l + 1 < c.num_layers)
      layer_in = dropout(layer_in, c.dropout, true);
  }
  return {layer_in, stack(hn, 0), lstm ? stack(cn, 0) : Tensor()};
}

namespace {
void check_state(const char* layer, const char* what, const Tensor& s, const Shape& want) {
  if (!s.defined()) return;
  GRADLAB_CHECK(s.sizes() == want, ShapeError, layer,
                std::string("Expected ") + what + " size " + shape_str(want) + ", got " +
                    shape_str(s.sizes()),
                shape_str(want) + " ([num_layers * num_directions, N, hidden_size])",
                shape_str(s.sizes()));
}
}  // namespace

std::tuple<Tensor, Tensor, Tensor> RNNImplBase::forward_padded(const Tensor& input, Tensor h0,
                                                               Tensor c0) const {
  const Config& c = config_;
  GRADLAB_CHECK(input.defined(), ValueError, name_, "the input is undefined", "a defined tensor",
                "Tensor()");
  GRADLAB_CHECK(input.dim() == 2 || input.dim() == 3, ShapeError, name_,
                "expected a 2-D (unbatched) or 3-D (batched) input",
                c.batch_first ? "[N, T, input_size] or [T, input_size]"
                              : "[T, N, input_size] or [T, input_size]",
                shape_str(input.sizes()));
  GRADLAB_CHECK(input.size(-1) == c.input_size, ShapeError, name_,
                "input.size(-1) must be equal to input_size",
                std::to_string(c.input_size), std::to_string(input.size(-1)));
  GRADLAB_CHECK(input.is_floating_point(), DTypeError, name_, "expected a floating point input",
                "float32 or float64", to_string(input.dtype()));
  const bool unbatched = input.dim() == 2;
  Tensor x = unbatched ? input.unsqueeze(1) : (c.batch_first ? input.transpose(0, 1) : input);
  if (unbatched) {
    if (h0.defined() && h0.dim() == 2) h0 = h0.unsqueeze(1);
    if (c0.defined() && c0.dim() == 2) c0 = c0.unsqueeze(1);
  }
  const Shape want = {c.num_layers * (c.bidirectional ? 2 : 1), x.size(1), c.hidden_size};
  check_state(name_, "hidden", h0, want);
  check_state(name_, "cell", c0, want);
  auto [out, hn, cn] = run(x, h0, c0, nullptr);
  if (unbatched) {
    out = out.squeeze(1), hn = hn.squeeze(1);
    if (cn.defined()) cn = cn.squeeze(1);
  } else if (c.batch_first) {
    out = out.transpose(0, 1);
  }
  return {out, hn, cn};
}

std::tuple<utils::rnn::PackedSequence, Tensor, Tensor> RNNImplBase::forward_packed(
    const utils::rnn::PackedSequence& input, Tensor h0, Tensor c0) const {
  const std::vector<int64_t> bs = sizes_of(input.batch_sizes());
  GRADLAB_CHECK(!bs.empty() && input.data().dim() == 2 && input.data().size(1) == config_.input_size,
                ShapeError, name_, "packed data must be [Σ lengths, input_size]",
                "[*, " + std::to_string(config_.input_size) + "]", shape_str(input.data().sizes()));
  const std::vector<int64_t> len = lengths_of(bs);
  const Shape want = {config_.num_layers * (config_.bidirectional ? 2 : 1),
                      static_cast<int64_t>(len.size()), config_.hidden_size};
  check_state(name_, "hidden", h0, want);
  check_state(name_, "cell", c0, want);
  // States come in the caller's batch order; the packed batch is sorted.
  const Tensor& sorted = input.sorted_indices();
  if (sorted.defined() && h0.defined()) h0 = h0.index_select(1, sorted);
  if (sorted.defined() && c0.defined()) c0 = c0.index_select(1, sorted);
  Tensor x = unpack_sorted(input.data(), bs, 0.0, static_cast<int64_t>(bs.size()));
  auto [out, hn, cn] = run(x, h0, c0, &len);
  const Tensor& unsorted = input.unsorted_indices();
  if (unsorted.defined()) {
    hn = hn.index_select(1, unsorted);
    if (cn.defined()) cn = cn.index_select(1, unsorted);
  }
  return {utils::rnn::PackedSequence(pack_sorted(out, bs), input.batch_sizes(), sorted, unsorted),
          hn, cn};
}

RNNImpl::RNNImpl(const RNNOptions& o)
    : RNNImplBase({rnn_mode(o.nonlinearity(), "RNN"), o.input_size(), o.hidden_size(),
                   o.num_layers(), o.bias(), o.batch_first(), o.dropout(), o.bidirectional()},
                  "RNN"),
      options(o) {}

std::tuple<Tensor, Tensor> RNNImpl::forward(const Tensor& input, Tensor hx) {
  auto [out, hn, cn] = forward_padded(input, hx, Tensor());
  return {out, hn};
}

std::tuple<utils::rnn::PackedSequence, Tensor> RNNImpl::forward_with_packed_input(
    const utils::rnn::PackedSequence& packed_input, Tensor hx) {
  auto [out, hn, cn] = forward_packed(packed_input, hx, Tensor());
  return {out, hn};
}

LSTMImpl::LSTMImpl(const LSTMOptions& o)
    : RNNImplBase({RNNMode::LSTM, o.input_size(), o.hidden_size(), o.num_layers(), o.bias(),
                   o.batch_first(), o.dropout(), o.bidirectional()},
                  "LSTM"),
      options(o) {
  GRADLAB_CHECK(o.proj_size() == 0, ValueError, "LSTM", "proj_size is not supported by gradlab",
                "proj_size(0)", std::to_string(o.proj_size()),
                "add an nn::Linear on the output to project it");
}

std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTMImpl::forward(
    const Tensor& input, std::optional<std::tuple<Tensor, Tensor>> hx) {
  auto [out, hn, cn] = forward_padded(input, hx ? std::get<0>(*hx) : Tensor(),
                                      hx ? std::get<1>(*hx) : Tensor());
  return {out, {hn, cn}};
}

std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>>
LSTMImpl::forward_with_packed_input(const utils::rnn::PackedSequence& packed_input,
                                    std::optional<std::tuple<Tensor, Tensor>> hx) {
  auto [out, hn, cn] = forward_packed(packed_input, hx ? std::get<0>(*hx) : Tensor(),
                                      hx ? std::get<1>(*hx) : Tensor());
  return {out, {hn, cn}};
}

GRUImpl::GRUImpl(const GRUOptions& o)
    : RNNImplBase({RNNMode::GRU, o.input_size(), o.hidden_size(), o.num_layers(), o.bias(),
                   o.batch_first(), o.dropout(), o.bidirectional()},
                  "GRU"),
      options(o) {}

std::tuple<Tensor, Tensor> GRUImpl::forward(const Tensor& input, Tensor hx) {
  auto [out, hn, cn] = forward_padded(input, hx, Tensor());
  return {out, hn};
}

std::tuple<utils::rnn::PackedSequence, Tensor> GRUImpl::forward_with_packed_input(
    const utils::rnn::PackedSequence& packed_input, Tensor hx) {
  auto [out, hn, cn] = forward_packed(packed_input, hx, Tensor());
  return {out, hn};
}

// ---- the cells ------------------------------------------------------------------------------------

RNNCellImplBase::RNNCellImplBase(RNNMode mode, int64_t input_size, int64_t hidden_size, bool bias,
                                 const char* name)
    : mode_(mode), input_size_(input_size), hidden_size_(hidden_size), name_(name) {
  check_positive(name, "input_size", input_size);
  check_positive(name, "hidden_size", hidden_size);
  const int64_t G = gates_of(mode);
  weight_ih = register_parameter("weight_ih", empty({G * hidden_size, input_size}));
  weight_hh = register_parameter("weight_hh", empty({G * hidden_size, hidden_size}));
  if (bias) {
    bias_ih = register_parameter("bias_ih", empty({G * hidden_size}));
    bias_hh = register_parameter("bias_hh", empty({G * hidden_size}));
  }
  reset_parameters();
}

void RNNCellImplBase::reset_parameters() {
  const double stdv = 1.0 / std::sqrt(static_cast<double>(hidden_size_));
  for (Tensor* w : {&weight_ih, &weight_hh, &bias_ih, &bias_hh})
    if (w->defined()) init::uniform_(*w, -stdv, stdv);
}

void RNNCellImplBase::pretty_print(std::ostream& os) const {
  os << name_ << "(" << input_size_ << ", " << hidden_size_
     << (bias_ih.defined() ? "" : ", bias=false") << ")";
}

std::tuple<Tensor, Tensor> RNNCellImplBase::prepare(const Tensor& input, const Tensor& hx,
                                                    const char* what) const {
  GRADLAB_CHECK(input.defined() && (input.dim() == 1 || input.dim() == 2), ShapeError, name_,
                "expected input to be 1-D or 2-D", "[N, input_size] or [input_size]",
                input.defined() ? shape_str(input.sizes()) : "an undefined tensor");
  GRADLAB_CHECK(input.size(-1) == input_size_, ShapeError, name_,
                "input has inconsistent input_size", std::to_string(input_size_),
                std::to_string(input.size(-1)));
  Tensor x = input.dim() == 1 ? input.unsqueeze(0) : input;
  if (!hx.defined()) return {x, zeros({x.size(0), hidden_size_}, x.options())};
  Tensor h = hx.dim() == 1 ? hx.unsqueeze(0) : hx;
  GRADLAB_CHECK(h.dim() == 2 && h.size(0) == x.size(0) && h.size(1) == hidden_size_, ShapeError,
                name_, std::string(what) + " must match the input's batch and hidden_size",
                shape_str({x.size(0), hidden_size_}), shape_str(hx.sizes()));
  return {x, h};
}

std::tuple<Tensor, Tensor> RNNCellImplBase::step(const Tensor& x, const Tensor& h,
                                                 const Tensor& c) const {
  auto [h2, c2] = cell(mode_, linear(x, weight_ih, bias_ih), h, c, weight_hh, bias_hh);
  return {h2, c2};
}

RNNCellImpl::RNNCellImpl(const RNNCellOptions& o)
    : RNNCellImplBase(rnn_mode(o.nonlinearity(), "RNNCell"), o.input_size(), o.hidden_size(),
                      o.bias(), "RNNCell"),
      options(o) {}

Tensor RNNCellImpl::forward(const Tensor& input, Tensor hx) {
  auto [x, h] = prepare(input, hx, "hx");
  Tensor y = std::get<0>(step(x, h, Tensor()));
  return input.dim() == 1 ? y.squeeze(0) : y;
}

LSTMCellImpl::LSTMCellImpl(const LSTMCellOptions& o)
    : RNNCellImplBase(RNNMode::LSTM, o.input_size(), o.hidden_size(), o.bias(), "LSTMCell"),
      options(o) {}

std::tuple<Tensor, Tensor> LSTMCellImpl::forward(const Tensor& input,
                                                 std::optional<std::tuple<Tensor, Tensor>> hx) {
  auto [x, h] = prepare(input, hx ? std::get<0>(*hx) : Tensor(), "hx[0]");
  auto [x2, c] = prepare(input, hx ? std::get<1>(*hx) : Tensor(), "hx[1]");
  auto [h2, c2] = step(x, h, c);
  if (input.dim() == 1) return {h2.squeeze(0), c2.squeeze(0)};
  return {h2, c2};
}

GRUCellImpl::GRUCellImpl(const GRUCellOptions& o)
    : RNNCellImplBase(RNNMode::GRU, o.input_size(), o.hidden_size(), o.bias(), "GRUCell"),
      options(o) {}

Tensor GRUCellImpl::forward(const Tensor& input, Tensor hx) {
  auto [x, h] = prepare(input, hx, "hx");
  Tensor y = std::get<0>(step(x, h, Tensor()));
  return input.dim() == 1 ? y.squeeze(0) : y;
}

}  // namespace gradlab::nn

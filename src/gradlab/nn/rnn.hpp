#pragma once
// Recurrent layers, as LibTorch's: nn::RNN, nn::LSTM, nn::GRU (num_layers, batch_first,
// bidirectional, dropout between layers, packed input), nn::RNNCell, nn::LSTMCell, nn::GRUCell,
// and nn::utils::rnn::{PackedSequence, pack_padded_sequence, pad_packed_sequence}.
// Composed from linear, sigmoid, tanh and chunk (no node of their own); each step runs the cell
// of ops/rnn.cpp (torch::lstm_cell, gru_cell, rnn_tanh_cell, rnn_relu_cell), which computes:
//   RNN   h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)                  (or relu)
//   LSTM  i, f, g, o = chunk(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh, 4)
//         c' = σ(f) c + σ(i) tanh(g);   h' = σ(o) tanh(c')
//   GRU   r, z, n_x = chunk(x W_ihᵀ + b_ih, 3);  r_h, z_h, n_h = chunk(h W_hhᵀ + b_hh, 3)
//         r = σ(r + r_h);  z = σ(z + z_h);  n = tanh(n_x + r n_h);  h' = (1 - z) n + z h
// Shapes: input [T, N, I] ([N, T, I] with batch_first; [T, I] unbatched), output [T, N, D H],
// h_n (and c_n) [L D, N, H]; D = 2 when bidirectional, L = num_layers. Parameters weight_ih_l{k},
// weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k} (suffix _reverse for the backward direction), each
// U(-1/√H, 1/√H) at start.

#include <optional>
#include <tuple>
#include <vector>

#include "gradlab/nn/arg.hpp"
#include "gradlab/nn/enum.hpp"
#include "gradlab/nn/module.hpp"

namespace gradlab::nn {

namespace utils::rnn {

/// A batch of variable-length sequences without padding (LibTorch's PackedSequence): data holds
/// the valid steps time-major, longest sequence first ([Σ lengths, *]); batch_sizes[t] is how many
/// sequences are longer than t (int64, CPU); sorted_indices / unsorted_indices map between the
/// caller's batch order and the sorted one (undefined when the input was already sorted).
class PackedSequence {
 public:
  PackedSequence() = default;
  PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices = {},
                 Tensor unsorted_indices = {});
  const Tensor& data() const { return data_; }
  const Tensor& batch_sizes() const { return batch_sizes_; }
  const Tensor& sorted_indices() const { return sorted_indices_; }
  const Tensor& unsorted_indices() const { return unsorted_indices_; }
  /// The same sequences on another device (batch_sizes stay on the CPU), or data in another dtype.
  PackedSequence to(Device device) const;
  PackedSequence to(ScalarType dtype) const;
  bool is_cuda() const { return data_.is_cuda(); }

 private:
  Tensor data_, batch_sizes_, sorted_indices_, unsorted_indices_;
};

/// Packs a padded batch [T, N, *] ([N, T, *] with batch_first) of sequences with `lengths`
/// (int64 CPU [N], each in 1..T). enforce_sorted: the lengths must be descending; otherwise they
/// are sorted here and the order is kept in the PackedSequence.
PackedSequence pack_padded_sequence(Tensor input, Tensor lengths, bool batch_first = false,
                                    bool enforce_sorted = true);
/// The inverse: (padded [T, N, *] or [N, T, *], lengths [N]) in the caller's batch order; padding
/// is padding_value; total_length pads T further (it must be >= the longest sequence).
std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence,
                                               bool batch_first = false,
                                               double padding_value = 0.0,
                                               std::optional<int64_t> total_length = std::nullopt);

}  // namespace utils::rnn

/// What kind of recurrence a layer runs.
enum class RNNMode { RNN_TANH, RNN_RELU, LSTM, GRU };

/// Options of nn::RNN (nonlinearity kTanh or kReLU).
struct RNNOptions {
  RNNOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  GRADLAB_ARG(int64_t, input_size);
  GRADLAB_ARG(int64_t, hidden_size);
  GRADLAB_ARG(int64_t, num_layers) = 1;
  GRADLAB_ARG(init::Nonlinearity, nonlinearity) = kTanh;
  GRADLAB_ARG(bool, bias) = true;
  /// Input and output [N, T, *] instead of [T, N, *] (h_n stays [L D, N, H]).
  GRADLAB_ARG(bool, batch_first) = false;
  /// Dropout on each layer's output but the last, when training.
  GRADLAB_ARG(double, dropout) = 0.0;
  GRADLAB_ARG(bool, bidirectional) = false;
};

/// Options of nn::LSTM (proj_size > 0 is refused).
struct LSTMOptions {
  LSTMOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  GRADLAB_ARG(int64_t, input_size);
  GRADLAB_ARG(int64_t, hidden_size);
  GRADLAB_ARG(int64_t, num_layers) = 1;
  GRADLAB_ARG(bool, bias) = true;
  GRADLAB_ARG(bool, batch_first) = false;
  GRADLAB_ARG(double, dropout) = 0.0;
  GRADLAB_ARG(bool, bidirectional) = false;
  GRADLAB_ARG(int64_t, proj_size) = 0;
};

/// Options of nn::GRU.
struct GRUOptions {
  GRUOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  GRADLAB_ARG(int64_t, input_size);
  GRADLAB_ARG(int64_t, hidden_size);
  GRADLAB_ARG(int64_t, num_layers) = 1;
  GRADLAB_ARG(bool, bias) = true;
  GRADLAB_ARG(bool, batch_first) = false;
  GRADLAB_ARG(double, dropout) = 0.0;
  GRADLAB_ARG(bool, bidirectional) = false;
};

/// What RNN, LSTM and GRU share: the parameters and the layer-by-layer, step-by-step recurrence.
class RNNImplBase : public Module {
 public:
  struct Config {
    RNNMode mode;
    int64_t input_size, hidden_size, num_layers;
    bool bias, batch_first;
    double dropout;
    bool bidirectional;
  };
  /// Every parameter U(-1/√hidden_size, 1/√hidden_size).
  void reset_parameters();
  /// The parameters in registration order (weight_ih_l0, weight_hh_l0, bias_ih_l0, ...).
  std::vector<Tensor> all_weights() const;
  /// A no-op: gradlab keeps no fused weight buffer (LibTorch's cuDNN one).
  void flatten_parameters() {}
  void pretty_print(std::ostream& os) const override;

 protected:
  RNNImplBase(const Config& config, const char* name);
  /// Runs the layers: input [T, N, I] (time-major), h0 (and c0 for LSTM) [L D, N, H] or
  /// undefined (zeros); lengths (sorted batch order) masks the steps past each sequence's end.
  /// Returns (output [T, N, D H], h_n, c_n).
  std::tuple<Tensor, Tensor, Tensor> run(const Tensor& input, Tensor h0, Tensor c0,
                                         const std::vector<int64_t>* lengths) const;
  /// The common front of forward: input checks, unbatched and batch_first handling.
  std::tuple<Tensor, Tensor, Tensor> forward_padded(const Tensor& input, Tensor h0,
                                                    Tensor c0) const;
  std::tuple<utils::rnn::PackedSequence, Tensor, Tensor> forward_packed(
      const utils::rnn::PackedSequence& input, Tensor h0, Tensor c0) const;

  Config config_;
  const char* name_;
  std::vector<Tensor> flat_weights_;  ///< per (layer, direction): w_ih, w_hh[, b_ih, b_hh]
};

/// Elman RNN: returns (output, h_n).
class RNNImpl : public RNNImplBase {
 public:
  explicit RNNImpl(const RNNOptions& options);
  RNNImpl(int64_t input_size, int64_t hidden_size) : RNNImpl(RNNOptions(input_size, hidden_size)) {}
  std::tuple<Tensor, Tensor> forward(const Tensor& input, Tensor hx = {});
  std::tuple<utils::rnn::PackedSequence, Tensor> forward_with_packed_input(
      const utils::rnn::PackedSequence& packed_input, Tensor hx = {});
  RNNOptions options;
};
GRADLAB_MODULE(RNN);

/// LSTM: returns (output, (h_n, c_n)).
class LSTMImpl : public RNNImplBase {
 public:
  explicit LSTMImpl(const LSTMOptions& options);
  LSTMImpl(int64_t input_size, int64_t hidden_size) : LSTMImpl(LSTMOptions(input_size, hidden_size)) {}
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(
      const Tensor& input, std::optional<std::tuple<Tensor, Tensor>> hx_opt = {});
  std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>> forward_with_packed_input(
      const utils::rnn::PackedSequence& packed_input,
      std::optional<std::tuple<Tensor, Tensor>> hx_opt = {});
  LSTMOptions options;
};
GRADLAB_MODULE(LSTM);

/// GRU: returns (output, h_n).
class GRUImpl : public RNNImplBase {
 public:
  explicit GRUImpl(const GRUOptions& options);
  GRUImpl(int64_t input_size, int64_t hidden_size) : GRUImpl(GRUOptions(input_size, hidden_size)) {}
  std::tuple<Tensor, Tensor> forward(const Tensor& input, Tensor hx = {});
  std::tuple<utils::rnn::PackedSequence, Tensor> forward_with_packed_input(
      const utils::rnn::PackedSequence& packed_input, Tensor hx = {});
  GRUOptions options;
};
GRADLAB_MODULE(GRU);

/// Options of nn::RNNCell.
struct RNNCellOptions {
  RNNCellOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  GRADLAB_ARG(int64_t, input_size);
  GRADLAB_ARG(int64_t, hidden_size);
  GRADLAB_ARG(bool, bias) = true;
  GRADLAB_ARG(init::Nonlinearity, nonlinearity) = kTanh;
};
/// Options of nn::LSTMCell and nn::GRUCell.
struct LSTMCellOptions {
  LSTMCellOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  GRADLAB_ARG(int64_t, input_size);
  GRADLAB_ARG(int64_t, hidden_size);
  GRADLAB_ARG(bool, bias) = true;
};
using GRUCellOptions = LSTMCellOptions;

/// What the cells share: weight_ih [G H, I], weight_hh [G H, H], bias_ih, bias_hh [G H]
/// (G gates: 1, 4, 3), U(-1/√H, 1/√H) at start; input [N, I] or [I].
class RNNCellImplBase : public Module {
 public:
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;

 protected:
  RNNCellImplBase(RNNMode mode, int64_t input_size, int64_t hidden_size, bool bias,
                  const char* name);
  /// (h', c') from input [N, I] (batched here) and state [N, H].
  std::tuple<Tensor, Tensor> step(const Tensor& input, const Tensor& h, const Tensor& c) const;
  /// Checks input [N, I] / [I] and a state; returns (batched input, batched state or zeros).
  std::tuple<Tensor, Tensor> prepare(const Tensor& input, const Tensor& hx, const char* what) const;

  RNNMode mode_;
  int64_t input_size_, hidden_size_;
  const char* name_;
};

/// h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh) (or relu); hx defaults to zeros.
class RNNCellImpl : public RNNCellImplBase {
 public:
  explicit RNNCellImpl(const RNNCellOptions& options);
  RNNCellImpl(int64_t input_size, int64_t hidden_size)
      : RNNCellImpl(RNNCellOptions(input_size, hidden_size)) {}
  Tensor forward(const Tensor& input, Tensor hx = {});
  RNNCellOptions options;
};
GRADLAB_MODULE(RNNCell);

/// One LSTM step: (h', c'); hx defaults to zeros.
class LSTMCellImpl : public RNNCellImplBase {
 public:
  explicit LSTMCellImpl(const LSTMCellOptions& options);
  LSTMCellImpl(int64_t input_size, int64_t hidden_size)
      : LSTMCellImpl(LSTMCellOptions(input_size, hidden_size)) {}
  std::tuple<Tensor, Tensor> forward(const Tensor& input,
                                     std::optional<std::tuple<Tensor, Tensor>> hx_opt = {});
  LSTMCellOptions options;
};
GRADLAB_MODULE(LSTMCell);

/// One GRU step: h'; hx defaults to zeros.
class GRUCellImpl : public RNNCellImplBase {
 public:
  explicit GRUCellImpl(const GRUCellOptions& options);
  GRUCellImpl(int64_t input_size, int64_t hidden_size)
      : GRUCellImpl(GRUCellOptions(input_size, hidden_size)) {}
  Tensor forward(const Tensor& input, Tensor hx = {});
  GRUCellOptions options;
};
GRADLAB_MODULE(GRUCell);

}  // namespace gradlab::nn

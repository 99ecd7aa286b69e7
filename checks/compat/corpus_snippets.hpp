#pragma once
// The LibTorch compatibility corpus: everyday LibTorch code, each snippet a function written once
// and compiled twice, against LibTorch (corpus_torch.cpp, when LibTorch is found) and against
// gradlab (corpus_test.cpp) through `namespace torch = gradlab;`.
//
// Include this header after `torch` names one of the two. Every snippet gets float64 inputs with
// fixed values and returns one tensor; the runner records its values, the gradients of
// Σ w ⊙ out (w = cos(0, 1, 2, ...)) with respect to each input, the output's grad_fn name, and
// whether it threw. corpus_torch --record writes those numbers from LibTorch into
// libtorch_ref.hpp (committed); the gradlab half compares against that header.
//
// Flags mark deliberate differences (docs/libtorch_parity.md lists each one with its reason);
// the gradlab half checks that a flagged difference is still there, so a fix shows up too.

#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace corpus {

using torch::Tensor;
// NOTE: dim lists are spelled std::vector<int64_t>{...}: in LibTorch 1.13 a braced {0, 1} is
// ambiguous between an int list and a list of dim names.

enum Flags : unsigned {
  kSame = 0,
  kNameDiffers = 1,       ///< gradlab's grad_fn has another name (composite op)
  kGradDiffers = 2,       ///< gradlab's gradient differs on purpose (index_put_ duplicates)
  kThrowsInGradlab = 4,   ///< LibTorch computes it, gradlab refuses (stale view)
};

struct Input {
  std::vector<double> values;
  std::vector<int64_t> shape;
};

struct Snippet {
  const char* name;
  std::vector<Input> inputs;
  std::function<Tensor(const std::vector<Tensor>&)> fn;
  unsigned flags = kSame;
};

struct Result {
  std::vector<double> value;
  std::vector<std::vector<double>> grads;  // one per input (empty: no gradient reached it)
  std::string grad_fn;                      // "" when the output has none
  bool threw = false;
  std::string error;
};

inline torch::TensorOptions f64() { return torch::TensorOptions().dtype(torch::kFloat64); }

inline std::vector<double> flat(const Tensor& t) {
  Tensor c = t.detach().to(torch::kFloat64).contiguous();
  const double* p = c.template data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

// "torch::autograd::generated::MeanBackward0" -> "MeanBackward0" (a template name stays whole)
inline std::string short_name(const std::string& n) {
  if (n.find('<') != std::string::npos) return n;
  const auto k = n.rfind("::");
  return k == std::string::npos ? n : n.substr(k + 2);
}

// A custom function as LibTorch users write them (saved_data, save_for_backward, variable_list).
struct ScaleBy : torch::autograd::Function<ScaleBy> {
  static Tensor forward(torch::autograd::AutogradContext* ctx, Tensor x, double c) {
    ctx->saved_data["c"] = c;
    ctx->save_for_backward({x});
    return x * x * c;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list g) {
    torch::autograd::tensor_list saved = ctx->get_saved_variables();
    return {g[0] * saved[0] * 2 * ctx->saved_data["c"].toDouble(), Tensor()};
  }
};

// An in-place custom function: modifies its input, marks it dirty, returns it.
struct DoubleInPlace : torch::autograd::Function<DoubleInPlace> {
  static Tensor forward(torch::autograd::AutogradContext* ctx, Tensor x) {
    x.mul_(2);
    ctx->mark_dirty({x});
    return x;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list g) {
    return {g[0] * 2};
  }
};

inline const Input kX23{{0.5, -1.25, 2.0, 0.75, 1.5, -0.25}, {2, 3}};
inline const Input kY23{{0.1, 0.2, -0.3, 1.0, -2.0, 0.5}, {2, 3}};
inline const Input kW32{{1.0, -0.5, 0.25, 2.0, -1.5, 0.75}, {3, 2}};
inline const Input kW3{{0.25, -0.5, 2.0}, {3}};
inline const Input kW1{{0.1}, {1}};

/// n values in about [-1.5, 1.5] that do not repeat (no ties for max pooling), of `shape`.
inline Input wave(std::vector<int64_t> shape, double phase) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(1.5 * std::sin(1.3 * static_cast<double>(i) + phase) + 0.01 * static_cast<double>(i));
  return {v, shape};
}

namespace F = torch::nn::functional;

inline std::vector<Snippet> snippets() {
  using V = const std::vector<Tensor>&;
  return {
      // ---- reductions with LibTorch's overloads -------------------------------------------
      {"sum_dim", {kX23}, [](V in) { return in[0].sum(1); }},
      {"sum_dims_keepdim", {kX23}, [](V in) { return in[0].sum(std::vector<int64_t>{0, 1}, true); }},
      {"sum_dtype", {kX23}, [](V in) { return in[0].sum(torch::kFloat64); }},
      {"mean_all", {kX23}, [](V in) { return in[0].mean(); }},
      {"mean_dim_keepdim", {kX23}, [](V in) { return in[0].mean(-1, true); }},
      {"torch_mean_dims", {kX23}, [](V in) { return torch::mean(in[0], std::vector<int64_t>{0}); }},
      {"var_dim_unbiased_keepdim", {kX23}, [](V in) { return in[0].var(1, true, true); }},
      {"var_all", {kX23}, [](V in) { return in[0].var(); }},
      {"var_biased", {kX23}, [](V in) { return in[0].var(false); }},
      {"std_dim_biased_keepdim", {kX23}, [](V in) { return in[0].std(0, false, true); }},
      {"std_all", {kX23}, [](V in) { return in[0].std(); }},
      {"std_of_constant", {kX23}, [](V in) { return (in[0] * 0 + 1).std(); }},
      {"torch_std_dims", {kX23}, [](V in) { return torch::std(in[0], std::vector<int64_t>{1}, true, false); }},
      {"logsumexp_dim_keepdim", {kX23}, [](V in) { return torch::logsumexp(in[0], 1, true); },
       kNameDiffers},
      {"logsumexp_method", {kX23}, [](V in) { return in[0].logsumexp(0); }, kNameDiffers},
      {"norm_all", {kX23}, [](V in) { return in[0].norm(); }, kNameDiffers},
      {"norm_p_dim", {kX23}, [](V in) { return in[0].norm(2, 1); }, kNameDiffers},
      {"norm_p1_dim", {kX23}, [](V in) { return in[0].norm(1, 0); }, kNameDiffers},
      {"all_any", {kX23},
       [](V in) {
         return torch::stack({(in[0] > -2).all().to(torch::kFloat64), (in[0] > 1).any().to(torch::kFloat64),
                              (in[0] > 1).all().to(torch::kFloat64)});
       }},
      {"all_dim", {kX23}, [](V in) { return (in[0] > 0).all(1).to(torch::kFloat64); }},
      {"eq_method", {kX23, kY23}, [](V in) { return in[0].eq(in[0] * 1).to(torch::kFloat64) + in[0].eq(in[1]).to(torch::kFloat64); }},
      {"item_scalar", {kX23},
       [](V in) { return torch::tensor(in[0].sum().item().toDouble() * 2, f64()); }},
      // ---- matrix products ------------------------------------------------------------------
      {"mm_method", {kX23, kW32}, [](V in) { return in[0].mm(in[1]); }},
      {"matmul_2d", {kX23, kW32}, [](V in) { return torch::matmul(in[0], in[1]); }},
      {"matmul_mixed_dtypes", {kX23, kW32},
       [](V in) { return torch::matmul(in[0], in[1].to(torch::kFloat32)); }},
      {"mm_mixed_dtypes", {kX23, kW32}, [](V in) { return in[0].to(torch::kFloat32).mm(in[1]); }},
      // ---- top-level losses ---------------------------------------------------------------
      {"mse_loss", {kX23, kY23}, [](V in) { return torch::mse_loss(in[0], in[1].detach()); }, kNameDiffers},
      {"mse_loss_sum", {kX23, kY23}, [](V in) { return torch::mse_loss(in[0], in[1].detach(), 2); },
       kNameDiffers},
      {"smooth_l1_loss", {kX23, kY23}, [](V in) { return torch::smooth_l1_loss(in[0], in[1].detach()); },
       kNameDiffers},
      {"smooth_l1_loss_beta", {kX23, kY23},
       [](V in) { return torch::smooth_l1_loss(in[0], in[1].detach(), 0, 0.5); }, kNameDiffers},
      {"bce_with_logits", {kX23, kY23},
       [](V in) {
         return torch::binary_cross_entropy_with_logits(in[0], torch::sigmoid(in[1]).detach());
       },
       kNameDiffers},
      {"nll_loss", {kX23},
       [](V in) {
         Tensor target = torch::tensor(std::vector<int64_t>{2, 0});
         return torch::nll_loss(torch::log_softmax(in[0], 1), target);
       },
       kNameDiffers},
      // ---- factories with options ---------------------------------------------------------
      {"arange_options", {kX23},
       [](V in) { return in[0].flatten() * torch::arange(0, 6, f64()); }},
      {"eye_options", {kX23}, [](V in) { return in[0].mm(torch::eye(3, f64())); }},
      {"tensor_from_vector", {kX23},
       [](V in) { return in[0] * torch::tensor(std::vector<double>{1, 2, 3, 4, 5, 6}, f64()).reshape({2, 3}); }},
      {"randn_int_shape", {},
       [](V) {
         Tensor r = torch::randn(3, f64());
         return torch::tensor(std::vector<double>{static_cast<double>(r.dim()), static_cast<double>(r.size(0)),
                                                  r.scalar_type() == torch::kFloat64 ? 1.0 : 0.0},
                              f64());
       }},
      {"tensor_vector_dtype", {},
       [](V) {
         return torch::tensor(std::vector<double>{
             torch::tensor(std::vector<double>{1.5}).scalar_type() == torch::kFloat32 ? 1.0 : 0.0,
             torch::tensor(std::vector<int64_t>{1}).scalar_type() == torch::kInt64 ? 1.0 : 0.0}, f64());
       }},
      // ---- custom functions -----------------------------------------------------------------
      {"custom_function", {kX23}, [](V in) { return ScaleBy::apply(in[0], 1.5); }, kNameDiffers},
      {"custom_function_mark_dirty", {kX23},
       [](V in) {
         Tensor y = in[0] * 1;
         Tensor z = DoubleInPlace::apply(y);  // z is y, rebased onto the custom node
         return z * y + y;
       }},
      // ---- in-place semantics -----------------------------------------------------------------
      {"inplace_on_view_base", {kX23},
       [](V in) {
         Tensor y = in[0] * 1;
         y.narrow(0, 0, 1).mul_(2);
         return y;
       }},
      {"inplace_on_view_view", {kX23},
       [](V in) {
         Tensor y = in[0] * 1;
         Tensor v = y.select(1, 2);
         v.mul_(in[0].select(1, 0));  // NOTE: not v.mul_(v): mul saves v, so backward would refuse
         return v * 3;
       },
       kNameDiffers},  // tensor * number: LibTorch's MulBackward1, gradlab's MulBackward0
      {"inplace_view_from_other", {kX23, kY23},
       [](V in) {
         Tensor y = in[0].detach().clone();  // a tensor that needs no grad, written from one that does
         y.select(0, 1).copy_(in[1].select(0, 0) * 2);
         return y * in[0];
       }},
      {"inplace_on_view_then_base", {kX23},
       [](V in) {
         Tensor y = in[0].sin();  // sin saves its input, not y: writing into y is allowed
         y.narrow(1, 1, 2).add_(1);
         y.mul_(3);
         return y.sum(0);
       }},
      {"stale_view_after_base_write", {kX23},
       [](V in) {
         Tensor y = in[0] * 1;
         Tensor v = y.select(0, 0);
         y.mul_(2);
         return v * 1;
       },
       kThrowsInGradlab},
      {"write_into_expanded", {kX23},
       [](V in) {
         Tensor e = torch::zeros({1, 3}, f64()).expand({2, 3});
         e.add_(1);
         return in[0] + e;
       }},
      {"index_put_repeated", {kY23},
       [](V in) {
         Tensor y = torch::zeros({3, 3}, f64());
         Tensor idx = torch::tensor(std::vector<int64_t>{0, 0, 2});
         Tensor vals = torch::cat({in[0], in[0].narrow(0, 0, 1) * 3});  // [3, 3]
         y.index_put_({idx}, vals);
         return y;
       },
       kGradDiffers | kNameDiffers},
      // ---- activations, top level (torch::elu, ...) ----------------------------------------
      {"elu_alpha", {kX23}, [](V in) { return torch::elu(in[0], 0.5); }, kNameDiffers},
      {"elu_scales", {kX23}, [](V in) { return torch::elu(in[0], 0.7, 1.5, 2.0); }, kNameDiffers},
      {"selu", {kX23}, [](V in) { return torch::selu(in[0]); }, kNameDiffers},
      {"celu_alpha", {kX23}, [](V in) { return torch::celu(in[0], 0.5); }, kNameDiffers},
      {"silu", {kX23}, [](V in) { return torch::silu(in[0]); }, kNameDiffers},
      {"mish", {kX23}, [](V in) { return torch::mish(in[0]); }, kNameDiffers},
      {"hardtanh_bounds", {kX23}, [](V in) { return torch::hardtanh(in[0], -0.5, 1.0); }, kNameDiffers},
      {"relu6", {kX23}, [](V in) { return torch::relu6(in[0] * 3.5); }, kNameDiffers},
      {"log_sigmoid", {kX23}, [](V in) { return torch::log_sigmoid(in[0] * 3); }, kNameDiffers},
      {"hardswish", {kX23}, [](V in) { return torch::hardswish(in[0] * 2.5); }, kNameDiffers},
      // NOTE: LibTorch 1.13's hardsigmoid backward multiplies by float(1 / 6) even in float64
      // (0.41666667908 where 2.5 / 6 = 0.41666666667); gradlab's gradient is the exact one.
      {"hardsigmoid", {kX23}, [](V in) { return torch::hardsigmoid(in[0] * 2.5); }, kNameDiffers | kGradDiffers},
      {"glu_dim0", {kX23}, [](V in) { return torch::glu(in[0], 0); }, kNameDiffers},
      {"glu_odd_size", {kX23}, [](V in) { return torch::glu(in[0]); }},
      {"threshold", {kX23}, [](V in) { return torch::threshold(in[0], 0.6, -2.0); }, kNameDiffers},
      {"prelu_channels", {kX23, kW3}, [](V in) { return torch::prelu(in[0], in[1]); }, kNameDiffers},
      {"prelu_one_weight", {kX23, kW1}, [](V in) { return torch::prelu(in[0], in[1]); }, kNameDiffers},
      {"relu_inplace_top", {kX23},
       [](V in) {
         Tensor y = in[0] * 1;
         torch::relu_(y);
         return y;
       }}, // ReluBackward0, as LibTorch's relu_
      {"leaky_relu_inplace_top", {kX23},
       [](V in) {
         Tensor y = in[0] * 1;
         torch::leaky_relu_(y, 0.2);
         return y;
       },
       kNameDiffers},
      // ---- activations, F:: with option structs -----------------------------------------------
      {"F_elu_options", {kX23}, [](V in) { return F::elu(in[0], F::ELUFuncOptions().alpha(0.5)); }, kNameDiffers},
      {"F_elu_inplace", {kX23},
       [](V in) {
         Tensor y = in[0] * 1;
         F::elu(y, F::ELUFuncOptions().alpha(0.5).inplace(true));
         return y;
       },
       kNameDiffers},
      {"F_selu", {kX23}, [](V in) { return F::selu(in[0]); }, kNameDiffers},
      {"F_celu_options", {kX23}, [](V in) { return F::celu(in[0], F::CELUFuncOptions().alpha(2.0)); }, kNameDiffers},
      {"F_hardtanh_options", {kX23},
       [](V in) { return F::hardtanh(in[0], F::HardtanhFuncOptions().min_val(-0.5).max_val(1.0)); }, kNameDiffers},
      {"F_hardtanh_inplace", {kX23},
       [](V in) {
         Tensor y = in[0] * 1;
         F::hardtanh(y, F::HardtanhFuncOptions().min_val(-0.5).max_val(1.0).inplace(true));
         return y;
       },
       kNameDiffers},
      {"F_relu6", {kX23}, [](V in) { return F::relu6(in[0] * 3.5); }, kNameDiffers},
      {"F_relu_inplace", {kX23},
       [](V in) {
         Tensor y = in[0] * 1;
         F::relu(y, F::ReLUFuncOptions().inplace(true));
         return y;
       }}, // ReluBackward0, as LibTorch's relu_
      {"F_leaky_relu_options", {kX23},
       [](V in) { return F::leaky_relu(in[0], F::LeakyReLUFuncOptions().negative_slope(0.2)); }},
      {"F_leaky_relu_inplace", {kX23},
       [](V in) {
         Tensor y = in[0] * 1;
         F::leaky_relu(y, F::LeakyReLUFuncOptions().negative_slope(0.2).inplace(true));
         return y;
       },
       kNameDiffers},
      {"F_threshold_options", {kX23}, [](V in) { return F::threshold(in[0], F::ThresholdFuncOptions(0.6, -2.0)); },
       kNameDiffers},
      {"F_glu_options", {kX23}, [](V in) { return F::glu(in[0], F::GLUFuncOptions(0)); }, kNameDiffers},
      {"F_gelu_none", {kX23}, [](V in) { return F::gelu(in[0], F::GELUFuncOptions().approximate("none")); }},
      {"F_gelu_tanh", {kX23}, [](V in) { return F::gelu(in[0], F::GELUFuncOptions().approximate("tanh")); },
       kNameDiffers},
      {"F_silu_mish", {kX23}, [](V in) { return F::silu(in[0]) + F::mish(in[0] * 2); }},
      {"F_logsigmoid", {kX23}, [](V in) { return F::logsigmoid(in[0] * 3); }, kNameDiffers},
      {"F_softsign", {kX23}, [](V in) { return F::softsign(in[0]); }},
      {"F_tanhshrink", {kX23}, [](V in) { return F::tanhshrink(in[0]); }},
      {"F_softmin", {kX23}, [](V in) { return F::softmin(in[0], F::SoftminFuncOptions(1)); }, kNameDiffers},
      {"F_softmax_options", {kX23}, [](V in) { return F::softmax(in[0], F::SoftmaxFuncOptions(1)); }, kNameDiffers},
      {"F_log_softmax_options", {kX23},
       [](V in) { return F::log_softmax(in[0], F::LogSoftmaxFuncOptions(0)); }, kNameDiffers},
      {"F_prelu", {kX23, kW3}, [](V in) { return F::prelu(in[0], in[1]); }, kNameDiffers},
      // ---- layers, F:: with option structs -------------------------------------------------------
      {"F_conv2d_options", {wave({1, 2, 5, 5}, 0.0), wave({3, 2, 3, 3}, 1.0), wave({3}, 2.0)},
       [](V in) {
         return F::conv2d(in[0], in[1], F::Conv2dFuncOptions().bias(in[2]).stride(2).padding(1).dilation(1));
       },
       kSame},
      {"F_conv2d_groups", {wave({1, 4, 5, 5}, 0.5), wave({6, 2, 3, 3}, 1.5), wave({6}, 2.5)},
       [](V in) {
         return F::conv2d(in[0], in[1], F::Conv2dFuncOptions().bias(in[2]).padding(1).dilation(2).groups(2));
       },
       kSame},
      // ---- grouped and depthwise conv2d, conv1d: LibTorch's positional order, then the modules ----
      {"conv2d_groups_top", {wave({2, 4, 4, 5}, 0.4), wave({6, 2, 2, 3}, 1.4), wave({6}, 2.4)},
       [](V in) { return torch::conv2d(in[0], in[1], in[2], 1, {1, 0}, 1, 2); }, kSame},
      {"conv2d_depthwise", {wave({2, 3, 5, 5}, 0.2), wave({3, 1, 3, 3}, 1.2), wave({3}, 2.2)},
       [](V in) { return torch::conv2d(in[0], in[1], in[2], 2, 1, 1, 3); }, kSame},
      {"conv2d_depthwise_multiplier_unbatched", {wave({2, 4, 4}, 0.6), wave({4, 1, 3, 3}, 1.6)},
       [](V in) { return torch::conv2d(in[0], in[1], Tensor(), 1, 1, {2, 1}, 2); },
       kNameDiffers},  // unbatched: LibTorch's SqueezeBackward1, gradlab's squeeze(dim) is SqueezeBackward0
      // NOTE: torch::conv2d(x, w, Tensor(), 1, 0, ...) is ambiguous in LibTorch 1.13: a literal 0
      // is also a null c10::string_view, the padding="same" overload's argument.
      {"conv2d_groups_channel_mismatch", {wave({1, 3, 5, 5}, 0.1), wave({6, 2, 3, 3}, 1.1)},
       [](V in) { return torch::conv2d(in[0], in[1], Tensor(), 1, 1, 1, 2); }, kSame},
      {"conv2d_groups_filters_not_divisible", {wave({1, 4, 5, 5}, 0.1), wave({3, 2, 3, 3}, 1.1)},
       [](V in) { return torch::conv2d(in[0], in[1], Tensor(), 1, 1, 1, 2); }, kSame},
      {"nn_conv2d_groups", {wave({1, 4, 5, 5}, 0.8), wave({6, 2, 3, 3}, 1.8), wave({6}, 2.8)},
       [](V in) {
         // weight [out, in / groups, kh, kw]; LibTorch's init bound 1 / sqrt(in / groups * kh * kw)
         torch::nn::Conv2d m(torch::nn::Conv2dOptions(4, 6, 3).padding(1).groups(2));
         m->to(torch::kFloat64);
         const double fresh_max = m->weight.detach().abs().max().template item<double>();
         {
           torch::NoGradGuard no_grad;
           m->weight.copy_(in[1]);
           m->bias.copy_(in[2]);
         }
         const double shape[] = {static_cast<double>(m->weight.size(0)), static_cast<double>(m->weight.size(1)),
                                 fresh_max <= 1 / std::sqrt(18.0) && fresh_max > 1 / std::sqrt(36.0) ? 1.0 : 0.0};
         return torch::cat({m(in[0]).flatten(), torch::tensor({shape[0], shape[1], shape[2]}, f64())});
       },
       kSame},
      {"torch_conv1d_groups", {wave({2, 4, 7}, 0.3), wave({6, 2, 3}, 1.3), wave({6}, 2.3)},
       [](V in) { return torch::conv1d(in[0], in[1], in[2], 2, 1, 1, 2); }, kNameDiffers},
      {"F_conv1d_options", {wave({1, 2, 9}, 0.9), wave({3, 2, 3}, 1.9), wave({3}, 2.9)},
       [](V in) { return F::conv1d(in[0], in[1], F::Conv1dFuncOptions().bias(in[2]).padding(1).dilation(2)); },
       kNameDiffers},
      {"F_conv1d_depthwise_unbatched", {wave({3, 6}, 0.5), wave({3, 1, 2}, 1.5)},
       [](V in) { return F::conv1d(in[0], in[1], F::Conv1dFuncOptions().stride(2).groups(3)); },
       kNameDiffers},  // unbatched: LibTorch's SqueezeBackward1, gradlab's squeeze(dim) is SqueezeBackward0
      {"conv1d_bad_groups", {wave({1, 4, 6}, 0.5), wave({3, 2, 3}, 1.5)},
       [](V in) { return torch::conv1d(in[0], in[1], Tensor(), 1, 1, 1, 2); }, kSame},
      {"nn_conv1d", {wave({2, 3, 8}, 0.7), wave({4, 3, 3}, 1.7), wave({4}, 2.7)},
       [](V in) {
         torch::nn::Conv1d m(torch::nn::Conv1dOptions(3, 4, 3).stride(2).padding(1));
         m->to(torch::kFloat64);
         {
           torch::NoGradGuard no_grad;
           m->weight.copy_(in[1]);
           m->bias.copy_(in[2]);
         }
         return m(in[0]) + m(in[0].select(0, 1)).unsqueeze(0);  // batched and unbatched
       },
       kSame},
      {"F_conv_transpose2d_options", {wave({1, 2, 3, 3}, 0.3), wave({2, 3, 3, 3}, 1.3), wave({3}, 2.3)},
       [](V in) {
         return F::conv_transpose2d(
             in[0], in[1], F::ConvTranspose2dFuncOptions().bias(in[2]).stride(2).padding(1).output_padding(1));
       },
       kSame},
      {"F_max_pool2d_options", {wave({1, 1, 5, 5}, 0.7)},
       [](V in) { return F::max_pool2d(in[0], F::MaxPool2dFuncOptions(3).stride(2).padding(1)); }},
      {"F_max_pool2d_ceil_mode", {wave({1, 1, 5, 5}, 0.7)},
       [](V in) { return F::max_pool2d(in[0], F::MaxPool2dFuncOptions(2).ceil_mode(true)); }, kThrowsInGradlab},
      {"F_batch_norm_options", {wave({4, 3}, 0.1), kW3, wave({3}, 0.9)},
       [](V in) {
         Tensor rm = torch::zeros({3}, f64()), rv = torch::ones({3}, f64());
         Tensor y = F::batch_norm(in[0], rm, rv,
                                  F::BatchNormFuncOptions().weight(in[1]).bias(in[2]).training(true).momentum(0.2).eps(1e-3));
         return torch::cat({y.flatten(), rm, rv});
       },
       kSame},
      {"F_batch_norm_eval", {wave({4, 3}, 0.2), kW3, wave({3}, 0.8)},
       [](V in) {
         Tensor rm = torch::tensor(std::vector<double>{0.1, -0.2, 0.3}, f64());
         Tensor rv = torch::tensor(std::vector<double>{1.5, 0.5, 2.0}, f64());
         return F::batch_norm(in[0], rm, rv, F::BatchNormFuncOptions().weight(in[1]).bias(in[2]).eps(1e-3));
       },
       kNameDiffers},
      {"F_layer_norm_options", {kX23, kW3, wave({3}, 0.4)},
       [](V in) { return F::layer_norm(in[0], F::LayerNormFuncOptions({3}).weight(in[1]).bias(in[2]).eps(1e-3)); },
       kNameDiffers},
      {"F_unfold_options", {wave({1, 2, 4, 4}, 0.6)},
       [](V in) { return F::unfold(in[0], F::UnfoldFuncOptions({2, 3}).padding(1).stride(2)); }},
      {"F_fold_options", {wave({1, 4, 4}, 0.6)},
       [](V in) { return F::fold(in[0], F::FoldFuncOptions({3, 3}, {2, 2})); }},
      {"F_embedding_padding_idx", {wave({5, 2}, 0.2)},
       [](V in) {
         Tensor idx = torch::tensor(std::vector<int64_t>{0, 2, 0, 4});
         return F::embedding(idx, in[0], F::EmbeddingFuncOptions().padding_idx(0));
       },
       kNameDiffers},
      // ---- losses, F:: with option structs ------------------------------------------------------
      {"F_mse_loss_options", {kX23, kY23},
       [](V in) { return F::mse_loss(in[0], in[1].detach(), F::MSELossFuncOptions(torch::kSum)); }, kNameDiffers},
      {"F_l1_loss_options", {kX23, kY23},
       [](V in) { return F::l1_loss(in[0], in[1].detach(), F::L1LossFuncOptions().reduction(torch::kNone)); },
       kSame},
      {"F_smooth_l1_loss_options", {kX23, kY23},
       [](V in) { return F::smooth_l1_loss(in[0], in[1].detach(), F::SmoothL1LossFuncOptions(torch::kSum), 0.5); },
       kNameDiffers},
      // ---- modules with options, containers ---------------------------------------------------
      {"nn_relu_inplace", {kX23},
       [](V in) {
         torch::nn::ReLU relu(torch::nn::ReLUOptions().inplace(true));
         Tensor y = in[0] * 1;
         relu(y);
         return y;
       }}, // ReluBackward0, as LibTorch's relu_
      {"nn_leaky_relu_inplace", {kX23},
       [](V in) {
         torch::nn::LeakyReLU act(torch::nn::LeakyReLUOptions().negative_slope(0.2).inplace(true));
         return act(in[0] * 1);
       },
       kNameDiffers},
      {"nn_log_softmax_options", {kX23},
       [](V in) { return torch::nn::LogSoftmax(torch::nn::LogSoftmaxOptions(1))(in[0]); }, kNameDiffers},
      {"nn_prelu", {kX23},
       [](V in) {
         torch::nn::PReLU m(torch::nn::PReLUOptions().num_parameters(3));
         m->to(torch::kFloat64);
         return m(in[0]) + m->weight.sum();
       },
       kSame},
      {"nn_activation_modules", {kX23},
       [](V in) {
         namespace nn = torch::nn;
         const Tensor& x = in[0];
         return torch::stack({nn::ELU(nn::ELUOptions().alpha(0.5))(x), nn::SELU()(x), nn::CELU()(x),
                              nn::Hardtanh(nn::HardtanhOptions().min_val(-0.5))(x), nn::ReLU6()(x * 3.5),
                              nn::SiLU()(x), nn::Mish()(x), nn::Softsign()(x), nn::Tanhshrink()(x),
                              nn::LogSigmoid()(x), nn::Threshold(0.6, -2.0)(x), nn::Softmin(1)(x),
                              nn::GELU(nn::GELUOptions().approximate("tanh"))(x)});
       },
       kNameDiffers},
      {"nn_glu_module", {kX23}, [](V in) { return torch::nn::GLU(torch::nn::GLUOptions(0))(in[0]); }, kNameDiffers},
      {"nn_functional_in_sequential", {kX23},
       [](V in) {
         torch::nn::Sequential seq(torch::nn::Functional(torch::relu), torch::nn::Functional(torch::leaky_relu, 0.2),
                                   torch::nn::Functional([](Tensor t) { return t * 2 - 1; }),
                                   torch::nn::Functional(torch::elu, 0.5, 1.0, 1.0));
         return seq->forward(in[0] - 0.5);
       },
       kNameDiffers},
      {"nn_module_list", {kX23},
       [](V in) {
         torch::nn::ModuleList list{torch::nn::Tanh(), torch::nn::ReLU()};
         list->push_back(torch::nn::Functional([](Tensor t) { return t * 3; }));
         Tensor y = in[0];
         for (const auto& m : *list) {
           if (auto* t = m->as<torch::nn::Tanh>()) y = t->forward(y);
           else if (auto* r = m->as<torch::nn::ReLU>()) y = r->forward(y - 0.2);
           else y = m->as<torch::nn::Functional>()->forward(y);
         }
         Tensor z = list->ptr<torch::nn::TanhImpl>(0)->forward(in[0]) + list[1]->as<torch::nn::ReLU>()->forward(in[0]);
         return torch::cat({y.flatten(), z.flatten(), torch::full({1}, static_cast<double>(list->size()), f64())});
       },
       kSame},
      // ---- distances, padding, one-hot, huber, kl_div ------------------------------------------
      {"F_normalize", {kX23}, [](V in) { return F::normalize(in[0], F::NormalizeFuncOptions().p(2).dim(1)); },
       kSame},
      {"F_normalize_p1_dim0", {kX23},
       [](V in) { return F::normalize(in[0], F::NormalizeFuncOptions().p(1).dim(0).eps(1e-6)); }},
      {"F_cosine_similarity", {kX23, kY23},
       [](V in) { return F::cosine_similarity(in[0], in[1], F::CosineSimilarityFuncOptions().dim(1)); }},
      {"F_pairwise_distance", {kX23, kY23},
       [](V in) { return F::pairwise_distance(in[0], in[1], F::PairwiseDistanceFuncOptions().keepdim(true)); },
       kNameDiffers},
      {"F_pairwise_distance_p1", {kX23, kY23},
       [](V in) { return F::pairwise_distance(in[0], in[1], F::PairwiseDistanceFuncOptions().p(1).eps(1e-3)); },
       kNameDiffers},
      {"F_one_hot", {},
       [](V) {
         Tensor idx = torch::tensor(std::vector<int64_t>{2, 0, 3});
         return torch::cat({F::one_hot(idx, 5).flatten(), F::one_hot(idx).flatten()}).to(torch::kFloat64);
       }},
      {"F_one_hot_out_of_range", {},
       [](V) { return F::one_hot(torch::tensor(std::vector<int64_t>{2, 5}), 4).to(torch::kFloat64); }},
      {"F_pad_constant", {wave({1, 2, 2, 3}, 0.2)},
       [](V in) { return F::pad(in[0], F::PadFuncOptions({1, 2, 0, 1}).value(0.5)); }, kNameDiffers},
      {"F_pad_crop", {kX23}, [](V in) { return F::pad(in[0], F::PadFuncOptions({-1, 1})); }, kNameDiffers},
      {"F_pad_reflect", {wave({1, 1, 3, 4}, 0.2)},
       [](V in) { return F::pad(in[0], F::PadFuncOptions({1, 1, 1, 1}).mode(torch::kReflect)); }, kNameDiffers},
      {"huber_loss_top", {kX23, kY23}, [](V in) { return torch::huber_loss(in[0], in[1].detach(), 1, 0.7); },
       kNameDiffers},
      {"F_huber_loss_options", {kX23, kY23},
       [](V in) {
         return F::huber_loss(in[0], in[1].detach(), F::HuberLossFuncOptions().reduction(torch::kNone).delta(0.5));
       },
       kNameDiffers},
      {"kl_div_top", {kX23, kY23},
       [](V in) { return torch::kl_div(torch::log_softmax(in[0], 1), torch::softmax(in[1], 1).detach(), 1, false); },
       kSame},
      {"F_kl_div_batchmean", {kX23, kY23},
       [](V in) {
         return F::kl_div(torch::log_softmax(in[0], 1), torch::softmax(in[1], 1).detach(),
                          F::KLDivFuncOptions(torch::kBatchMean));
       },
       kNameDiffers},
      {"F_kl_div_log_target", {kX23, kY23},
       [](V in) {
         return F::kl_div(torch::log_softmax(in[0], 1), torch::log_softmax(in[1], 1),
                          F::KLDivFuncOptions().reduction(torch::kSum).log_target(true));
       },
       kSame},
      {"nn_loss_modules", {kX23, kY23},
       [](V in) {
         namespace nn = torch::nn;
         Tensor y = in[1].detach();
         return torch::stack({nn::SmoothL1Loss(nn::SmoothL1LossOptions().beta(0.5))(in[0], y),
                              nn::HuberLoss(nn::HuberLossOptions(torch::kSum).delta(0.5))(in[0], y),
                              nn::KLDivLoss(nn::KLDivLossOptions(torch::kBatchMean))(torch::log_softmax(in[0], 1),
                                                                                      torch::softmax(y, 1))});
       },
       kNameDiffers},
      {"nn_unflatten_zeropad", {kX23},
       [](V in) {
         namespace nn = torch::nn;
         Tensor u = nn::Unflatten(nn::UnflattenOptions(1, {3, 1}))(in[0]);
         Tensor z = nn::ZeroPad2d(nn::ZeroPad2dOptions({1, 0, 2, 1}))(in[0].reshape({1, 1, 2, 3}));
         return torch::cat({u.flatten() * 2, z.flatten(), torch::tensor(std::vector<double>{static_cast<double>(u.dim())}, f64())});
       },
       kSame},
      // ---- pooling, padding, shuffling, instance norm, shrinks (pool-pad batch) ------------------
      {"F_max_pool2d_with_indices", {wave({1, 2, 4, 4}, 0.3)},
       [](V in) {
         auto [y, i] = F::max_pool2d_with_indices(in[0], F::MaxPool2dFuncOptions(2).stride(1));
         return torch::cat({y.flatten(), i.flatten().to(torch::kFloat64)});
       }},
      {"nn_max_pool2d_forward_with_indices", {wave({2, 5, 5}, 0.1)},
       [](V in) {
         auto [y, i] = torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(3).stride(2).padding(1))->forward_with_indices(in[0]);
         return torch::cat({y.flatten(), i.flatten().to(torch::kFloat64)});
       }},
      {"max_pool1d_top", {wave({1, 2, 8}, 0.2)}, [](V in) { return torch::max_pool1d(in[0], {3}, {2}, {1}); }, kNameDiffers},
      {"F_max_pool1d_dilation", {wave({2, 9}, 0.4)},
       [](V in) { return F::max_pool1d(in[0], F::MaxPool1dFuncOptions(2).dilation(3)); }, kNameDiffers},
      {"max_pool1d_with_indices_top", {wave({1, 3, 7}, 0.5)},
       [](V in) {
         auto [y, i] = torch::max_pool1d_with_indices(in[0], {2});
         return torch::cat({y.flatten(), i.flatten().to(torch::kFloat64)});
       }},
      {"nn_max_pool1d_with_indices", {wave({1, 2, 6}, 0.6)},
       [](V in) {
         auto [y, i] = torch::nn::MaxPool1d(torch::nn::MaxPool1dOptions(3).stride(1))->forward_with_indices(in[0]);
         return torch::cat({y.flatten(), i.flatten().to(torch::kFloat64)});
       }},
      {"avg_pool1d_top", {wave({1, 2, 7}, 0.7)}, [](V in) { return torch::avg_pool1d(in[0], {3}, {2}, {1}); }, kNameDiffers},
      {"F_avg_pool1d_options", {wave({2, 7}, 0.8)},
       [](V in) {
         return F::avg_pool1d(in[0], F::AvgPool1dFuncOptions(3).stride(2).padding(1).ceil_mode(true).count_include_pad(false));
       }, kNameDiffers},
      {"nn_pool1d_modules", {wave({1, 2, 8}, 0.9)},
       [](V in) {
         namespace nn = torch::nn;
         return torch::cat({nn::MaxPool1d(nn::MaxPool1dOptions(2))(in[0]).flatten(),
                            nn::AvgPool1d(nn::AvgPool1dOptions(4).stride(2))(in[0]).flatten(),
                            nn::AdaptiveAvgPool1d(nn::AdaptiveAvgPool1dOptions(3))(in[0]).flatten()});
       }},
      {"adaptive_max_pool2d_top", {wave({1, 2, 5, 7}, 3.1)},
       [](V in) {
         auto [y, i] = torch::adaptive_max_pool2d(in[0], {3, 2});
         return torch::cat({y.flatten(), i.flatten().to(torch::kFloat64)});
       }},
      {"adaptive_max_pool1d_top", {wave({2, 7}, 3.2)},
       [](V in) {
         auto [y, i] = torch::adaptive_max_pool1d(in[0], {3});
         return torch::cat({y.flatten(), i.flatten().to(torch::kFloat64)});
       }},
      {"F_adaptive_max_pool_options", {wave({2, 3, 4}, 3.3)},
       [](V in) {
         auto [y, i] = F::adaptive_max_pool2d_with_indices(in[0], F::AdaptiveMaxPool2dFuncOptions({2, 3}));
         return torch::cat({F::adaptive_max_pool2d(in[0], F::AdaptiveMaxPool2dFuncOptions({1, 1})).flatten(),
                            i.flatten().to(torch::kFloat64), y.flatten(),
                            F::adaptive_max_pool1d(in[0], F::AdaptiveMaxPool1dFuncOptions(2)).flatten()});
       }},
      {"nn_adaptive_max_pool_modules", {wave({1, 2, 6, 5}, 3.4)},
       [](V in) {
         namespace nn = torch::nn;
         auto [y, i] = nn::AdaptiveMaxPool2d(nn::AdaptiveMaxPool2dOptions({4, 3}))->forward_with_indices(in[0]);
         auto [z, j] = nn::AdaptiveMaxPool1d(nn::AdaptiveMaxPool1dOptions(4))->forward_with_indices(in[0].reshape({2, 30}));
         return torch::cat({y.flatten(), i.flatten().to(torch::kFloat64), z.flatten(), j.flatten().to(torch::kFloat64)});
       }},
      {"pixel_shuffle_top", {wave({1, 8, 2, 3}, 1.0)}, [](V in) { return torch::pixel_shuffle(in[0], 2); }, kNameDiffers},
      {"pixel_unshuffle_top", {wave({2, 1, 4, 6}, 1.1)}, [](V in) { return torch::pixel_unshuffle(in[0], 2); }, kNameDiffers},
      {"F_pixel_shuffle_modules", {wave({9, 2, 2}, 1.2)},
       [](V in) {
         namespace nn = torch::nn;
         Tensor a = F::pixel_shuffle(in[0], F::PixelShuffleFuncOptions(3));
         Tensor b = nn::PixelUnshuffle(nn::PixelUnshuffleOptions(3))(a * 2);
         return torch::cat({a.flatten(), b.flatten(), nn::PixelShuffle(nn::PixelShuffleOptions(1))(in[0]).flatten()});
       }},
      {"pixel_shuffle_bad_channels", {wave({1, 6, 2, 2}, 1.3)}, [](V in) { return torch::pixel_shuffle(in[0], 2); }},
      {"reflection_pad2d_top", {wave({1, 2, 3, 4}, 1.4)},
       [](V in) { return torch::reflection_pad2d(in[0], {2, 1, 0, 2}); }, kNameDiffers},
      {"replication_pad2d_top", {wave({2, 3, 2}, 1.5)},
       [](V in) { return torch::replication_pad2d(in[0], {3, 0, 1, 2}); }, kNameDiffers},
      {"reflection_pad1d_top", {wave({2, 5}, 1.6)}, [](V in) { return torch::reflection_pad1d(in[0], {4, 1}); }, kNameDiffers},
      {"replication_pad1d_top", {wave({1, 2, 3}, 1.7)}, [](V in) { return torch::replication_pad1d(in[0], {2, 4}); }, kNameDiffers},
      {"F_pad_replicate_2d", {wave({1, 1, 3, 3}, 1.8)},
       [](V in) { return F::pad(in[0], F::PadFuncOptions({1, 2, 2, 0}).mode(torch::kReplicate)); }, kNameDiffers},
      {"F_pad_circular_1d", {wave({1, 2, 4}, 1.9)},
       [](V in) { return F::pad(in[0], F::PadFuncOptions({3, 1}).mode(torch::kCircular)); }, kNameDiffers},
      {"F_pad_circular_2d", {wave({1, 1, 3, 4}, 2.0)},
       [](V in) { return F::pad(in[0], F::PadFuncOptions({1, 2, 2, 1}).mode(torch::kCircular)); }, kNameDiffers},
      {"F_pad_reflect_too_big", {wave({1, 1, 3}, 2.1)},
       [](V in) { return F::pad(in[0], F::PadFuncOptions({3, 0}).mode(torch::kReflect)); }},
      {"nn_pad_modules", {wave({1, 1, 2, 3}, 2.2)},
       [](V in) {
         namespace nn = torch::nn;
         Tensor s = in[0].reshape({1, 2, 3});
         return torch::cat({nn::ReflectionPad2d(nn::ReflectionPad2dOptions({1, 1, 1, 0}))(in[0]).flatten(),
                            nn::ReplicationPad2d(1)(in[0]).flatten(),
                            nn::ReflectionPad1d(nn::ReflectionPad1dOptions({2, 1}))(s).flatten(),
                            nn::ReplicationPad1d(2)(s).flatten(),
                            nn::ConstantPad2d(nn::ConstantPad2dOptions({1, 0, 0, 1}, 0.5))(in[0]).flatten(),
                            nn::ConstantPad1d(nn::ConstantPad1dOptions(1, -2.0))(s).flatten()});
       }},
      {"F_instance_norm", {wave({2, 3, 2, 3}, 2.3)}, [](V in) { return F::instance_norm(in[0], F::InstanceNormFuncOptions()); }, kNameDiffers},
      {"F_instance_norm_affine", {wave({2, 3, 5}, 2.4), kW3, {{0.1, -0.2, 0.3}, {3}}},
       [](V in) {
         return F::instance_norm(in[0], F::InstanceNormFuncOptions().weight(in[1]).bias(in[2]).eps(1e-3));
       }, kNameDiffers},
      {"instance_norm_top", {wave({2, 2, 3, 2}, 3.5), {{0.5, -1.5}, {2}}, {{0.25, 0.1}, {2}}},
       [](V in) { return torch::instance_norm(in[0], in[1], in[2], {}, {}, true, 0.1, 1e-4, false); }, kNameDiffers},
      {"instance_norm_running_stats", {wave({2, 2, 3}, 3.6)},
       [](V in) {
         Tensor rm = torch::zeros({2}, f64()), rv = torch::ones({2}, f64());
         return torch::instance_norm(in[0], {}, {}, rm, rv, true, 0.1, 1e-5, false);
       },
       kThrowsInGradlab},
      {"nn_instance_norm_modules", {wave({2, 3, 4}, 2.5), wave({3, 2, 2}, 2.6)},
       [](V in) {
         namespace nn = torch::nn;
         nn::InstanceNorm1d a(nn::InstanceNorm1dOptions(3).affine(true));
         nn::InstanceNorm2d b(nn::InstanceNorm2dOptions(3));
         a->to(torch::kFloat64);  // the float32 weight and bias would not take a float64 input
         return torch::cat({a(in[0]).flatten(), b(in[1]).flatten(),
                            torch::tensor(std::vector<double>{static_cast<double>(a->parameters().size()),
                                                              static_cast<double>(b->parameters().size())}, f64())});
       }},
      {"hardshrink_top", {wave({2, 5}, 2.7)}, [](V in) { return torch::hardshrink(in[0], 0.7); }, kNameDiffers},
      {"softshrink_top", {wave({2, 5}, 2.8)}, [](V in) { return torch::softshrink(in[0]); }, kNameDiffers},
      {"F_shrink_options", {wave({3, 4}, 2.9)},
       [](V in) {
         return F::hardshrink(in[0], F::HardshrinkFuncOptions().lambda(0.4)) +
                F::softshrink(in[0], F::SoftshrinkFuncOptions(0.9));
       }},
      {"nn_shrink_modules", {wave({2, 4}, 3.0)},
       [](V in) {
         namespace nn = torch::nn;
         return torch::cat({nn::Hardshrink()(in[0]).flatten(), nn::Softshrink(nn::SoftshrinkOptions(0.3))(in[0]).flatten()});
       }},
  };
}

inline Result run(const Snippet& s) {
  Result r;
  std::vector<Tensor> in;
  for (const Input& i : s.inputs)
    in.push_back(torch::tensor(i.values, f64()).reshape(i.shape).detach().requires_grad_(true));
  try {
    Tensor out = s.fn(in);
    r.value = flat(out);
    if (out.grad_fn()) r.grad_fn = short_name(out.grad_fn()->name());
    if (out.requires_grad()) {
      Tensor w = torch::arange(out.numel(), f64()).cos().reshape(out.sizes());
      (out * w).sum().backward();
    }
  } catch (const std::exception& e) {
    r.threw = true;
    r.error = e.what();
    r.value.clear();
    r.grad_fn.clear();
    return r;
  }
  for (const Tensor& t : in) r.grads.push_back(t.grad().defined() ? flat(t.grad()) : std::vector<double>{});
  return r;
}

}  // namespace corpus

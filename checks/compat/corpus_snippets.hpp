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

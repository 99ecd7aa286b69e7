#pragma once
// CPU vs CUDA parity of one op-table row on one drawn case (used by parity_prop.cpp).
//
// One case runs three times from the same float values (cast to the dtype under test):
//   CPU   the row's op on CPU leaves;
//   CUDA  the same values as fresh CPU leaves, moved with .cuda() (keeping each input's memory
//         layout: a transposed or a strided view on the CPU is the same view on the device), the
//         row's op on them; its backward flows back through .cuda() (a strided view: through
//         ToCudaStrided, whose backward is .cuda()'s) into the CPU leaves' .grad;
//   size  (CPU, float64) the "sum of magnitudes" of every element that is a sum of terms, where
//         the row has one (see Magnitude), so a sum that cancels to ~0 is not held to ~0 * rtol.
// Forward outputs and leaf gradients must agree elementwise:
//     |cuda_i - cpu_i| <= rtol * max(max_j |cpu_j|, mag_i, floor)
// max_j |cpu_j|: the largest magnitude in that tensor (a norm-wise relative error); mag_i: the
// sum of |terms| of element i (0 where the row does not sum); floor: 1 for float32 (the table's
// values are O(1); float32 composites cancel, e.g. gelu(-3) = 0.5 x (1 + erf(-2.12)) = -0.004,
// where a 2-ulp difference of erff between libdevice and glibc is 2e-5 of the result), 0 for
// float64. int64 outputs (max/min indices) must be equal.

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <typeinfo>
#include <vector>

#include "gradlab/core/cuda.hpp"
#include "gradlab/gradlab.hpp"
#include "gradlab/testing/op_table.hpp"
#include "gradlab/testing/rc_generators.hpp"

namespace parity {

using namespace gradlab;
using namespace gradlab::testing;

// ---- tolerances ---------------------------------------------------------------------------------

inline constexpr double kRtolFloat64 = 1e-12;
inline constexpr double kRtolFloat32 = 1e-5;
/// Rows whose elements are long dot products computed by a GEMM (OpenBLAS on the CPU; cuBLAS or
/// the emulator's host loop on CUDA), blocked and fused (FMA) differently: 10x the base rtol,
/// still relative to the sum of magnitudes sum_k |a_ik b_kj|. The rounding bound of a K-term dot
/// product is K u (u = 1.1e-16 / 6e-8): for K = 300 that is 3e-14 / 1.8e-5 — the float32 bound
/// exceeds 1e-5, hence 1e-4 (a TF32 GEMM, u = 4.9e-4, would still fail it).
inline constexpr double kMatmulFactor = 10.0;
inline bool matmul_like(const std::string& row) {
  // The recurrent cells: two GEMMs (linear) under their gate functions.
  static const std::set<std::string> s = {"matmul",    "mm",       "bmm",           "linear",
                                          "conv2d",    "conv1d",    "lstm_cell", "gru_cell",     "rnn_tanh_cell",
                                          "rnn_relu_cell"};
  return s.count(row) > 0;
}
inline double rtol_for(const std::string& row, ScalarType dt) {
  const double base = dt == kFloat32 ? kRtolFloat32 : kRtolFloat64;
  return matmul_like(row) ? base * kMatmulFactor : base;
}

// ---- where an element is a sum: the magnitude runs ----------------------------------------------

/// How the sum of magnitudes of a row's sums is found (always on the CPU, in float64).
enum class Magnitude {
  None,     ///< no sums that cancel (elementwise maps; sums of non-negative terms: losses, norms,
            ///< logsumexp, var); the norm-wise scale suffices
  AbsAll,   ///< the row is multilinear in its float inputs (sums of products of inputs): the op
            ///< and its backward on |inputs| and |upstream| give sum |terms| exactly
  AbsGrad,  ///< the backward routes or sums the upstream gradient (max, pooling, clamp ...):
            ///< the backward on the same inputs with |upstream| gives sum |terms|
  Expand,   ///< elementwise with broadcasting, not multilinear (pow): inputs pre-expanded to the
            ///< output shape give each term; their |.| summed back (sum_to) is sum |terms|
  Norm,     ///< batch_norm / layer_norm: weight and bias gradients are sum u * xhat and sum u
};

inline Magnitude magnitude_rule(const std::string& row) {
  static const std::map<std::string, Magnitude> m = [] {
    std::map<std::string, Magnitude> r;
    for (const char* n :
         {"add",          "sub",         "mul",         "div",       "rsub",       "neg",
          "where",        "masked_fill", "sum",         "mean",      "matmul",     "mm",
          "bmm",          "reshape",     "view",        "flatten",   "transpose",  "permute",
          "slice",        "narrow",      "select",      "expand",    "squeeze",    "unsqueeze",
          "sum_to",       "cat",         "stack",       "clone",     "contiguous", "to",
          "index_select", "gather",      "scatter_add", "index_add", "embedding",  "nll_loss",
          "add_",         "sub_",        "mul_",        "div_",      "copy_",      "masked_fill_",
          "index_put_",   "linear",      "unfold",      "fold",      "conv2d",    "conv1d",
          // linear maps with weights of one sign (the windows' 1 / divisor, the stencils' λ)
          "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "upsample_nearest1d",
          "upsample_nearest2d", "upsample_linear1d", "upsample_bilinear2d"})
      r[n] = Magnitude::AbsAll;
    for (const char* n :
         {"maximum", "minimum", "amax", "amin", "max", "min", "max_pool2d", "clamp", "clamp_",
          "relu", "leaky_relu", "abs", "threshold_backward", "dropout", "fill_", "zero_",
          // the cells' bias gradients sum the gated upstream over the batch
          "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"})
      r[n] = Magnitude::AbsGrad;
    r["pow"] = Magnitude::Expand;
    r["batch_norm"] = Magnitude::Norm;
    r["layer_norm"] = Magnitude::Norm;
    return r;
  }();
  auto it = m.find(row);
  return it == m.end() ? Magnitude::None : it->second;
}

// ---- shapes: bigger sizes and empty tensors -----------------------------------------------------

/// Sizes around warp (32) and block (256) boundaries, none a multiple of 32.
inline const std::vector<int64_t>& big_sizes() {
  static const std::vector<int64_t> s = {17, 31, 33, 63, 65, 100, 127, 129, 255, 257, 300};
  return s;
}
/// At most this many elements in one drawn shape (the emulator runs every thread on one core).
inline constexpr int64_t kMaxNumel = 4096;

/// The op table's RapidCheck Draw with two modes for a case: `big` (one dim of every drawn shape
/// becomes one of big_sizes(), others drop to 1 while the shape exceeds kMaxNumel) and `empty`
/// (one dim of every drawn shape becomes 0). matmul_pair makes one of m, k, n big (or 0).
/// Sizes a row draws with integer() (mm, bmm, conv2d, pooling, class counts) stay the row's own.
class ParityDraw : public rcgen::RcDraw {
 public:
  ParityDraw(bool big, bool empty) : RcDraw(true, 5), big_(big), empty_(empty) {}
  Shape shape(int64_t min_rank = 0, int64_t max_rank = 4, int64_t max_size = 5) override {
    return adjust(RcDraw::shape(min_rank, max_rank, max_size));
  }
  bool big() const { return big_; }
  bool empty() const { return empty_; }

 protected:
  std::array<int64_t, 3> matmul_sizes(int64_t max_size) override {
    std::array<int64_t, 3> mkn = RcDraw::matmul_sizes(max_size);
    if (big_) mkn[integer(0, 2)] = choose(std::vector<int64_t>{33, 65, 100, 129, 257});
    if (empty_) mkn[integer(0, 2)] = 0;
    return mkn;
  }
  Shape matmul_batch() override { return RcDraw::shape(2, 2, 3); }  // not made big or empty

 private:
  Shape adjust(Shape s) {
    if (s.empty()) return s;
    const auto rank = static_cast<int64_t>(s.size());
    if (big_) {
      const int64_t k = integer(0, rank - 1);
      s[static_cast<size_t>(k)] = choose(big_sizes());
      for (int64_t j = 0; j < rank && numel_of(s) > kMaxNumel; ++j)
        if (j != k) s[static_cast<size_t>(j)] = 1;
    }
    if (empty_) s[static_cast<size_t>(integer(0, rank - 1))] = 0;
    return s;
  }
  bool big_, empty_;
};

// ---- memory layouts -----------------------------------------------------------------------------

/// The three layouts make_layout draws (in its order): contiguous, transposed storage, every other
/// element.
enum class Layout { Contiguous, Transposed, Strided };

inline Layout layout_of(const Tensor& t) {
  if (t.is_contiguous() || t.numel() <= 1) return Layout::Contiguous;
  if (t.dim() >= 2 && t.transpose(-1, -2).is_contiguous()) return Layout::Transposed;
  if (t.dim() >= 1 && t.stride(-1) == 2) return Layout::Strided;
  return Layout::Contiguous;  // anything else: compared as values (to_vector), moved densely
}
inline const char* layout_name(Layout l) {
  return l == Layout::Contiguous   ? "contiguous"
         : l == Layout::Transposed ? "transposed"
                                   : "strided";
}

/// `v` (contiguous) laid out as `l`, on v's device (no graph).
inline Tensor relayout(const Tensor& v, Layout l) { return to_layout(v, static_cast<int64_t>(l)); }

/// x moved to CUDA as a strided view (every other element of a zeroed buffer); backward: dy
/// moved back to x's device, as .cuda()'s own backward does.
struct ToCudaStrided : autograd::Function<ToCudaStrided> {
  static Tensor forward(autograd::AutogradContext*, Tensor x) {
    return relayout(x.cuda(), Layout::Strided);
  }
  static TensorList backward(autograd::AutogradContext*, TensorList dy) { return {dy[0].cpu()}; }
};

/// x moved to CUDA as a differentiable function of x, laid out on the device as `l`:
///   contiguous: x.cuda();
///   transposed: x^T (a contiguous view) moved with .cuda(), then transposed back;
///   strided:    ToCudaStrided (a view of every other element; NOTE: not cat/stack, which are
///               rows under test themselves).
inline Tensor to_cuda_as(const Tensor& x, Layout l) {
  if (l == Layout::Transposed) return x.transpose(-1, -2).cuda().transpose(-1, -2);
  if (l == Layout::Strided)
    return x.requires_grad() ? ToCudaStrided::apply(x) : relayout(x.cuda(), l);
  return x.cuda();
}

/// True when a and b step through memory alike (dims of size 1 do not count).
inline bool same_strides(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes()) return false;
  if (a.numel() <= 1) return true;
  for (int64_t k = 0; k < a.dim(); ++k)
    if (a.size(k) > 1 && a.stride(k) != b.stride(k)) return false;
  return true;
}

// ---- comparing ----------------------------------------------------------------------------------

inline std::string index_str(int64_t flat, const Shape& s) {
  if (s.empty()) return "[]";
  return shape_str(unravel_index(flat, s));
}

/// "" when `got` (any device) matches `ref` (CPU) elementwise within rtol * scale (see the top of
/// this file); else what differs, at the worst element. `used` (when given) is raised to the
/// largest |diff| / (rtol * scale) seen: the fraction of the tolerance the case used.
inline std::string compare(const Tensor& ref, const Tensor& got, const Tensor& mag, double rtol,
                           double floor, const std::string& what, double* used = nullptr) {
  std::ostringstream os;
  if (ref.sizes() != got.sizes() || ref.dtype() != got.dtype()) {
    os << what << ": CUDA gives " << got.describe() << ", CPU " << ref.describe();
    return os.str();
  }
  if (!ref.is_floating_point()) {
    const auto r = ref.to_vector<int64_t>(), g = got.to_vector<int64_t>();
    for (size_t i = 0; i < r.size(); ++i)
      if (r[i] != g[i]) {
        os << what << " " << ref.describe() << ": element "
           << index_str(static_cast<int64_t>(i), ref.sizes()) << " is " << g[i] << " on CUDA, "
           << r[i] << " on the CPU (must be equal)";
        return os.str();
      }
    return {};
  }
  const auto r = ref.to_vector<double>(), g = got.to_vector<double>();
  std::vector<double> m;
  if (mag.defined()) m = mag.to_vector<double>();
  double big = 0;
  for (double v : r)
    if (std::isfinite(v)) big = std::max(big, std::abs(v));
  int64_t bad = 0, worst = -1;
  double worst_ratio = 0, worst_scale = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    const double scale = std::max({big, m.empty() ? 0.0 : std::abs(m[i]), floor});
    double ratio;
    if (!std::isfinite(r[i]))
      ratio = (std::isnan(r[i]) && std::isnan(g[i])) || r[i] == g[i] ? 0.0 : INFINITY;
    else if (!std::isfinite(g[i]))
      ratio = INFINITY;
    else if (g[i] == r[i])
      ratio = 0.0;  // also when the scale is 0 (an all-zero tensor)
    else
      ratio = std::abs(g[i] - r[i]) / (rtol * scale);
    if (used && ratio > *used) *used = ratio;
    if (!(ratio <= 1.0)) {
      ++bad;
      if (worst < 0 || !(ratio <= worst_ratio)) {
        worst = static_cast<int64_t>(i);
        worst_ratio = ratio;
        worst_scale = scale;
      }
    }
  }
  if (bad == 0) return {};
  const auto w = static_cast<size_t>(worst);
  os.precision(17);
  os << what << " " << ref.describe() << ": " << bad << " of " << r.size()
     << " elements differ; worst at " << index_str(worst, ref.sizes()) << ": CUDA " << g[w]
     << ", CPU " << r[w] << ", |diff| " << std::abs(g[w] - r[w]) << " > rtol " << rtol
     << " * scale " << worst_scale << " (max |CPU| " << big
     << (m.empty() ? std::string() : ", sum of magnitudes " + std::to_string(std::abs(m[w])))
     << ")";
  if (r.size() <= 24) os << "\n    CUDA " << got.str() << "\n    CPU  " << ref.str();
  return os.str();
}

// ---- one case -----------------------------------------------------------------------------------

struct Outcome {
  std::string failure;        ///< "" when CPU and CUDA agree
  bool cpu_rejected = false;  ///< the CPU op threw (an empty case it does not take)
  std::string cpu_error;
  bool forward_compared = false;
  bool backward_compared = false;
  int64_t max_numel = 0;     ///< largest input
  int64_t max_dim = 0;       ///< largest size of any input dim
  bool empty_input = false;  ///< some input has no elements
  double used = 0;           ///< largest |diff| / tolerance over every compared element
};

/// Leaves holding c.inputs' values as `dt` (floating inputs), in each input's layout.
inline TensorList make_leaves(const OpCase& c, ScalarType dt, const std::vector<Layout>& layouts) {
  TensorList r;
  for (size_t j = 0; j < c.inputs.size(); ++j) {
    const Tensor& t = c.inputs[j];
    if (!t.defined() || !t.is_floating_point()) {
      r.push_back(t);
      continue;
    }
    Tensor v;
    {
      NoGradGuard ng;
      v = t.detach().to(dt).contiguous().clone();
    }
    r.push_back(relayout(v, layouts[j]).detach().requires_grad_(true));
  }
  return r;
}

struct Magnitudes {
  TensorList forward;  ///< per output (undefined: none)
  TensorList grads;    ///< per input (undefined: none)
};

/// The sums of magnitudes of the row's sums (see Magnitude), on the CPU in float64, from the
/// values under test (`leaves`, already rounded to the dtype) and the upstream gradients.
inline Magnitudes magnitudes(const OpSpec& spec, const OpCase& c, const TensorList& leaves,
                             const TensorList& upstream, const std::vector<size_t>& with_grad) {
  Magnitudes m;
  m.forward.resize(64);
  m.grads.resize(leaves.size());
  const Magnitude rule = magnitude_rule(spec.name);
  if (rule == Magnitude::None) return m;
  auto f64 = [](const Tensor& t) {
    NoGradGuard ng;
    return t.detach().to(kFloat64).contiguous().clone();
  };
  TensorList ups;
  for (const Tensor& u : upstream) ups.push_back(rule == Magnitude::Expand ? f64(u) : abs(f64(u)));
  if (rule == Magnitude::Norm) {
    // xhat = (x - mean) / s over the groups (batch_norm: every dim but 1; layer_norm: the
    // normalized trailing dims), s = sqrt(var + eps), y = xhat * w + b, g = u * w. The sums:
    //   dw = sum u xhat, db = sum u (over the other dims: batch_norm all but 1, layer_norm the
    //   leading ones); eval batch_norm: d running_mean = -(w / s) sum u,
    //   d running_var = -(w / 2 s^2) sum u xhat; batch statistics: dx = (g - mean g - xhat mean
    //   g xhat) / s. Each magnitude is the same expression over |terms|.
    const double eps = 1e-5;  // the rows use the default eps
    if (ups.empty()) return m;
    NoGradGuard ng;
    const Tensor x = f64(leaves[0]), u = ups[0];  // u: |upstream|
    const bool bn = spec.name == "batch_norm";
    const bool eval = bn && !c.params.flag("training");
    const bool affine = bn ? c.params.flag("affine") : leaves.size() >= 3;
    Dims group, others;  // statistics over `group`; dw, db sum over `others`
    Shape wshape;        // w broadcast against x
    if (bn) {
      wshape.assign(static_cast<size_t>(x.dim()), 1);
      wshape[1] = x.size(1);
      for (int64_t k = 0; k < x.dim(); ++k)
        if (k != 1) group.push_back(k), others.push_back(k);
    } else {
      wshape = c.params.shape("normalized_shape");
      const int64_t lead = x.dim() - static_cast<int64_t>(wshape.size());
      for (int64_t k = 0; k < x.dim(); ++k) (k < lead ? others : group).push_back(k);
    }
    const size_t wi = eval ? 3 : 1;
    const Tensor w = affine ? abs(f64(leaves[wi])).reshape(wshape) : ones(wshape, kFloat64);
    Tensor mu, sd;
    if (eval) {
      mu = f64(leaves[1]).reshape(wshape);
      sd = sqrt(f64(leaves[2]).reshape(wshape) + eps);
    } else {
      mu = mean(x, group, true);
      sd = sqrt(var(x, group, 0, true) + eps);
    }
    const Tensor axhat = abs((x - mu) / sd);
    auto over = [](const Tensor& t, const Dims& dims) {
      return dims.empty() ? t : sum(t, dims, true);
    };
    const Tensor su = over(u, others), suxh = over(u * axhat, others);
    auto flat = [&](const Tensor& t) { return bn ? t.reshape({-1}) : t.reshape(wshape); };
    if (affine) {
      m.grads[wi] = flat(suxh);
      m.grads[wi + 1] = flat(su);
    }
    if (eval) {
      m.grads[1] = flat(w / sd * su);
      m.grads[2] = flat(w / (sd * sd * 2.0) * suxh);
    } else {
      const Tensor g = u * w;
      const double n = static_cast<double>(x.numel()) / static_cast<double>(mu.numel());
      m.grads[0] = (g + over(g, group) / n + axhat * over(g * axhat, group) / n) / sd;
    }
    return m;
  }
  // AbsAll / AbsGrad / Expand: rerun the op on the CPU.
  TensorList ins;
  Shape out_shape;
  if (rule == Magnitude::Expand) {
    NoGradGuard ng;
    TensorList probe;
    for (const Tensor& t : leaves) probe.push_back(t.is_floating_point() ? f64(t) : t);
    out_shape = spec.op(probe, c.params)[0].sizes();
  }
  for (const Tensor& t : leaves) {
    if (!t.defined() || !t.is_floating_point()) {
      ins.push_back(t);
      continue;
    }
    Tensor v = f64(t);
    if (rule == Magnitude::AbsAll) v = abs(v);
    if (rule == Magnitude::Expand && v.sizes() != out_shape) v = expand(v, out_shape).contiguous();
    ins.push_back(v.detach().requires_grad_(true));
  }
  const TensorList outs = spec.op(ins, c.params);
  if (rule == Magnitude::AbsAll)
    for (size_t k = 0; k < outs.size() && k < m.forward.size(); ++k)
      if (outs[k].defined() && outs[k].is_floating_point()) m.forward[k] = abs(outs[k].detach());
  TensorList roots;
  for (size_t k : with_grad) roots.push_back(outs[k]);
  if (roots.empty()) return m;
  autograd::backward(roots, ups);
  NoGradGuard ng;
  for (size_t j = 0; j < ins.size(); ++j) {
    if (!ins[j].defined() || !ins[j].is_floating_point() || !ins[j].grad().defined()) continue;
    Tensor g = abs(ins[j].grad());
    if (rule == Magnitude::Expand && g.sizes() != leaves[j].sizes())
      g = sum_to(g, leaves[j].sizes());
    m.grads[j] = g;
  }
  return m;
}

inline std::string error_kind(const std::exception& e) {
  if (dynamic_cast<const DeviceError*>(&e)) return "DeviceError";
  if (dynamic_cast<const ShapeError*>(&e)) return "ShapeError";
  if (dynamic_cast<const DTypeError*>(&e)) return "DTypeError";
  if (dynamic_cast<const ValueError*>(&e)) return "ValueError";
  if (dynamic_cast<const Error*>(&e)) return "gradlab::Error";
  return typeid(e).name();
}

/// Runs one case of `spec` on CPU and CUDA in dtype `dt` and compares outputs and gradients.
/// `d` draws the upstream gradients (after the forward, when the output shapes are known).
inline Outcome check_case(const OpSpec& spec, const OpCase& c, ScalarType dt, Draw& d) {
  Outcome o;
  const double rtol = rtol_for(spec.name, dt), floor = dt == kFloat32 ? 1.0 : 0.0;
  std::vector<Layout> layouts;
  for (const Tensor& t : c.inputs) {
    layouts.push_back(t.defined() ? layout_of(t) : Layout::Contiguous);
    if (!t.defined()) continue;
    o.max_numel = std::max(o.max_numel, t.numel());
    o.empty_input = o.empty_input || t.numel() == 0;
    for (int64_t k = 0; k < t.dim(); ++k) o.max_dim = std::max(o.max_dim, t.size(k));
  }
  const std::string dts = dt == kFloat32 ? "float32" : "float64";
  auto layouts_text = [&] {
    std::string s;
    for (size_t j = 0; j < layouts.size(); ++j)
      s += (j ? ", " : "") + std::string(layout_name(layouts[j]));
    return s;
  };
  auto fail = [&](const std::string& check, const std::string& what) {
    o.failure = "[cuda-parity:" + check + "] " + spec.name + " " + dts + ": " + c.describe +
                "\n  input layouts: " + layouts_text() + " (on both devices)\n  " + what;
    return o;
  };

  // CPU
  const TensorList la = make_leaves(c, dt, layouts);
  TensorList outs_a;
  try {
    outs_a = spec.op(la, c.params);
  } catch (const std::exception& e) {
    o.cpu_rejected = true;
    o.cpu_error = error_kind(e) + ": " + e.what();
  }

  // CUDA: the same values as new CPU leaves, moved (layouts kept)
  const TensorList lb = make_leaves(c, dt, layouts);
  TensorList ins_b, outs_b;
  std::string cuda_error;
  try {
    for (size_t j = 0; j < lb.size(); ++j) {
      ins_b.push_back(lb[j].defined() ? to_cuda_as(lb[j], layouts[j]) : lb[j]);
      if (lb[j].defined() && !same_strides(ins_b.back(), lb[j]))
        return fail("harness", "input " + std::to_string(j) + " did not keep its layout on CUDA");
    }
    outs_b = spec.op(ins_b, c.params);
    // A CUDA index check is raised at the next synchronization (or at the op under
    // GRADLAB_CUDA_SYNC=1): the rejection counts either way.
    cuda::synchronize();
  } catch (const std::exception& e) {
    cuda_error = error_kind(e) + ": " + e.what();
  }
  if (o.cpu_rejected) {
    if (cuda_error.empty())
      return fail("forward", "the CPU rejects this case (" + o.cpu_error + ") but CUDA runs it");
    if (cuda_error.substr(0, cuda_error.find(':')) != o.cpu_error.substr(0, o.cpu_error.find(':')))
      return fail("forward", "the CPU rejects this case with " + o.cpu_error +
                                 "\n  but CUDA with " + cuda_error);
    return o;
  }
  if (!cuda_error.empty()) return fail("forward", "CUDA threw " + cuda_error);

  // forward
  if (outs_a.size() != outs_b.size())
    return fail("forward", std::to_string(outs_b.size()) + " outputs on CUDA, " +
                               std::to_string(outs_a.size()) + " on the CPU");
  std::vector<size_t> with_grad;
  for (size_t k = 0; k < outs_a.size(); ++k) {
    const Tensor &a = outs_a[k], &b = outs_b[k];
    if (a.defined() != b.defined())
      return fail("forward", "output " + std::to_string(k) + " defined on one device only");
    if (!a.defined()) continue;
    if (!b.is_cuda())
      return fail("forward",
                  "output " + std::to_string(k) + " is on " + b.device().str() + ", not on CUDA");
    if (a.requires_grad() != b.requires_grad())
      return fail("forward", "output " + std::to_string(k) + " requires_grad differs (CPU " +
                                 std::to_string(a.requires_grad()) + ", CUDA " +
                                 std::to_string(b.requires_grad()) + ")");
    if (a.is_floating_point() && a.requires_grad()) with_grad.push_back(k);
  }
  // upstream gradients: drawn once, the same values on both devices
  TensorList ua, ub;
  for (size_t k : with_grad) {
    const Tensor u64 = d.values(outs_a[k].sizes(), Domain::any(), true);
    const Layout ul = layout_of(u64);
    Tensor u;
    {
      NoGradGuard ng;
      u = relayout(u64.to(dt).contiguous().clone(), ul);
    }
    ua.push_back(u);
    NoGradGuard ng;
    ub.push_back(to_cuda_as(u, ul));
  }
  Magnitudes mag;
  try {
    mag = magnitudes(spec, c, la, ua, with_grad);
  } catch (const std::exception& e) {
    return fail("harness", std::string("the magnitude run on the CPU threw: ") + e.what());
  }
  for (size_t k = 0; k < outs_a.size(); ++k) {
    if (!outs_a[k].defined()) continue;
    const std::string f = compare(outs_a[k].detach(), outs_b[k].detach(),
                                  k < mag.forward.size() ? mag.forward[k] : Tensor(), rtol, floor,
                                  "output " + std::to_string(k), &o.used);
    if (!f.empty()) return fail("forward", f);
  }
  o.forward_compared = true;

  // backward: from every floating output that requires grad, into the CPU leaves
  if (with_grad.empty()) return o;
  TensorList ra, rb;
  for (size_t k : with_grad) ra.push_back(outs_a[k]), rb.push_back(outs_b[k]);
  autograd::backward(ra, ua);
  try {
    autograd::backward(rb, ub);
  } catch (const std::exception& e) {
    return fail("backward", "CUDA backward threw " + error_kind(e) + ": " + e.what());
  }
  for (size_t j = 0; j < la.size(); ++j) {
    if (!la[j].defined() || !la[j].is_floating_point()) continue;
    const Tensor &ga = la[j].grad(), &gb = lb[j].grad();
    const std::string what = "gradient of input " + std::to_string(j);
    if (ga.defined() != gb.defined())
      return fail("backward",
                  what + ": defined " +
                      (gb.defined() ? "after the CUDA run only" : "after the CPU run only"));
    if (!ga.defined()) continue;
    if (gb.is_cuda()) return fail("backward", what + ": the CPU leaf's .grad is a CUDA tensor");
    const std::string f = compare(ga, gb, mag.grads[j], rtol, floor, what, &o.used);
    if (!f.empty()) return fail("backward", f);
  }
  o.backward_compared = true;
  return o;
}

}  // namespace parity

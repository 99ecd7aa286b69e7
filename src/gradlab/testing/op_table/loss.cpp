// Op-table rows of ops/loss.cpp: softmax, log_softmax, and the losses, by their LibTorch top-level
// names (nn::functional forwards to these) — cross_entropy_loss (also its fused node and its
// composite reference), nll_loss, mse_loss, l1_loss, smooth_l1_loss, binary_cross_entropy,
// binary_cross_entropy_with_logits, huber_loss, kl_div.

#include "gradlab/testing/op_table/support.hpp"

namespace gradlab::testing::table {

namespace {

using nn::functional::Reduction;

// Applies f to every lane of x along `dim` (a vector -> vector of the same length).
template <class Fn>
Tensor lanes_ref(const Tensor& x, int64_t dim, Fn f) {
  const Shape& s = x.sizes();
  const int64_t d = dim < 0 ? dim + x.dim() : dim;
  Vec v = V(x), r(v.size());
  Shape kept = s;
  kept[d] = 1;
  for (int64_t l = 0; l < numel_of(kept); ++l) {
    Shape c = unravel_index(l, kept);
    Vec lane;
    std::vector<int64_t> at;
    for (int64_t k = 0; k < s[d]; ++k) {
      c[d] = k;
      at.push_back(flat_of(c, s));
      lane.push_back(v[at.back()]);
    }
    Vec out = f(lane);
    for (size_t k = 0; k < at.size(); ++k) r[at[k]] = out[k];
  }
  return T(r, s);
}

Vec softmax_of(const Vec& g) {
  const double m = max_of(g);
  Vec r(g.size());
  double s = 0;
  for (size_t i = 0; i < g.size(); ++i) s += (r[i] = std::exp(g[i] - m));
  for (double& e : r) e /= s;
  return r;
}

Vec log_softmax_of(const Vec& g) {
  const double l = lse_of(g);
  Vec r(g.size());
  for (size_t k = 0; k < g.size(); ++k) r[k] = g[k] - l;
  return r;
}

Tensor reduce_loss(const Vec& l, const Shape& s, Reduction red) {
  if (red == Reduction::None) return T(l, s);
  const double total = sum_of(l);
  return T({red == Reduction::Sum ? total : total / static_cast<double>(l.size())}, {});
}

const std::vector<std::string>& reduction_names() {
  static const std::vector<std::string> names = {"mean", "sum", "none"};
  return names;
}
Reduction reduction_of(const OpParams& p) {
  const std::string& r = p.text("reduction");
  return r == "mean" ? Reduction::Mean : r == "sum" ? Reduction::Sum : Reduction::None;
}

// The reduction as LibTorch's int64 at::Reduction, the argument the top-level losses take.
int64_t reduction_arg(const OpParams& p) { return static_cast<int64_t>(reduction_of(p)); }

OpSpec softmax_like(std::string name, bool log_form) {
  const std::string nm = name;
  return row(
      name, 1, "any", "rank 1-4; a dim",
      [nm](Draw& d) {
        Tensor x = d.values(d.shape(1, 4), Domain::any());
        const int64_t dim = draw_dim(d, x.dim());
        return make({x}, OpParams().set("dim", dim),
                    nm + "(x " + sh(x) + ", " + std::to_string(dim) + ")");
      },
      [log_form](const TensorList& in, const OpParams& p) {
        const int64_t dim = p.integer("dim");
        return TensorList{log_form ? log_softmax(in[0], dim) : softmax(in[0], dim)};
      },
      [log_form](const TensorList& in, const OpParams& p) {
        return TensorList{
            lanes_ref(in[0], p.integer("dim"), log_form ? log_softmax_of : softmax_of)};
      });
}

// Logits [N, C] (or, when `allow_1d`, now and then [C] and a 0-d target) and class targets;
// reduction, label_smoothing, ignore_index; with `weighted`, now and then class weights [C]
// (a parameter, "weight_seed": constants, not differentiated, as in PyTorch).
OpCase class_case(Draw& d, bool allow_1d, const std::string& nm, bool weighted = false) {
  const bool one_d = allow_1d && d.integer(0, 4) == 0;
  const int64_t n = d.integer(1, 5), c = d.integer(2, 5);
  Tensor x = d.values(one_d ? Shape{c} : Shape{n, c}, Domain::any());
  Tensor target = d.indices(one_d ? Shape{} : Shape{n}, c);
  int64_t ignore = -100;
  if (!one_d && d.integer(0, 2) == 0) {
    // Ignore one class, unless every target is that class (the mean would be 0/0).
    auto tv = target.to_vector<int64_t>();
    const int64_t cand = d.integer(0, c - 1);
    if (std::any_of(tv.begin(), tv.end(), [&](int64_t v) { return v != cand; })) ignore = cand;
  }
  const std::string reduction = d.choose(reduction_names());
  const double smoothing = d.boolean() ? 0.1 : 0.0;
  TensorList in{x, target};
  const int64_t weight_seed = weighted && d.boolean() ? d.integer(1, 1 << 30) : 0;
  return make(in,
              OpParams()
                  .set("reduction", reduction)
                  .set("ignore_index", ignore)
                  .set("label_smoothing", smoothing)
                  .set("weight_seed", weight_seed),
              nm + "(input " + sh(x) + ", target " + sh(target) + ", reduction " + reduction +
                  ", ignore_index " + std::to_string(ignore) + ", label_smoothing " +
                  std::to_string(smoothing) +
                  (weight_seed ? ", class weights of seed " + std::to_string(weight_seed) : "") + ")");
}

// The class weights of a case: C values in [0.2, 3] from its "weight_seed", in the dtype and on
// the device of `logits` [*, C]; undefined when the case has none.
Tensor weight_of(const OpParams& p, const Tensor& logits) {
  const int64_t seed = p.has("weight_seed") ? p.integer("weight_seed") : 0;
  if (seed == 0) return {};
  Generator g(static_cast<uint64_t>(seed));
  Tensor w = rand({logits.size(-1)}, TensorOptions().dtype(kFloat64), &g) * 2.8 + 0.2;
  return w.to(logits.dtype()).to(logits.device());
}

// loss_i = -(1-ε) w[t_i] logp[i, t_i] - ε / C Σ_c w_c logp[i, c], 0 where t_i is ignored (w = 1
// without weights); the mean divides by Σ w[t_i] over kept rows (PyTorch's nll_loss and
// cross_entropy with label smoothing).
Tensor nll_reference(const Tensor& logp2, const Tensor& target, const OpParams& p, double eps,
                     bool one_d, const Tensor& weight = {}) {
  const int64_t n = logp2.size(0), c = logp2.size(1), ignore = p.integer("ignore_index");
  Vec lp = V(logp2), loss;
  const Vec w = weight.defined() ? V(weight) : Vec(static_cast<size_t>(c), 1.0);
  auto tv = target.to_vector<int64_t>();
  double kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (tv[i] == ignore) {
      loss.push_back(0.0);
      continue;
    }
    kept += w[tv[i]];
    double smooth = 0;
    for (int64_t k = 0; k < c; ++k) smooth += w[k] * lp[i * c + k] / static_cast<double>(c);
    loss.push_back(-(1 - eps) * w[tv[i]] * lp[i * c + tv[i]] - eps * smooth);
  }
  const Reduction red = reduction_of(p);
  if (red == Reduction::Mean) return T({sum_of(loss) / kept}, {});
  return reduce_loss(loss, one_d ? Shape{} : Shape{n}, red);
}

// cross_entropy's reference on [N, C] logits (a [C] input is one row).
TensorList cross_entropy_ref(const TensorList& in, const OpParams& p) {
  Tensor x2 = in[0].dim() == 1 ? T(V(in[0]), {1, in[0].size(0)}) : in[0];
  Tensor t2 = in[1].dim() == 0 ? in[1].reshape({1}) : in[1];
  Tensor lp = lanes_ref(x2, 1, log_softmax_of);
  return {nll_reference(lp, t2, p, p.real("label_smoothing"), in[0].dim() == 1, weight_of(p, x2))};
}

using PairLoss = Tensor (*)(const Tensor&, const Tensor&, Reduction);

OpSpec pair_loss(std::string name, Domain dx, PairLoss fn, double (*elem)(double, double),
                 bool target_offset) {
  const std::string nm = name;
  return row(
      name, 2,
      "input: " + dx.label +
          (target_offset ? "; target = input + an offset away from 0" : "; target: any"),
      "two tensors of one shape; reduction",
      [=](Draw& d) {
        Tensor x = d.values(d.shape(), dx);
        Tensor y;
        if (target_offset) {
          Tensor off = d.values(x.sizes(), Domain::nonzero(0.1, 1.0));
          NoGradGuard ng;
          y = (x + off).detach();
        } else {
          y = d.values(x.sizes(), nm == "binary_cross_entropy_with_logits" ? Domain::probability()
                                                                           : Domain::any());
        }
        const std::string reduction = d.choose(reduction_names());
        return make({x, y}, OpParams().set("reduction", reduction),
                    nm + "(input " + sh(x) + ", target " + sh(y) + ", " + reduction + ")");
      },
      [fn](const TensorList& in, const OpParams& p) {
        return TensorList{fn(in[0], in[1], reduction_of(p))};
      },
      [elem](const TensorList& in, const OpParams& p) {
        Vec a = V(in[0]), b = V(in[1]), l;
        for (size_t i = 0; i < a.size(); ++i) l.push_back(elem(a[i], b[i]));
        return TensorList{reduce_loss(l, in[0].sizes(), reduction_of(p))};
      });
}

int64_t as_int(Reduction r) { return static_cast<int64_t>(r); }
Tensor mse(const Tensor& x, const Tensor& y, Reduction r) { return mse_loss(x, y, as_int(r)); }
Tensor l1(const Tensor& x, const Tensor& y, Reduction r) { return l1_loss(x, y, as_int(r)); }
Tensor smooth_l1(const Tensor& x, const Tensor& y, Reduction r) {
  return smooth_l1_loss(x, y, as_int(r));
}
Tensor huber(const Tensor& x, const Tensor& y, Reduction r) { return huber_loss(x, y, as_int(r), 0.7); }

}  // namespace

void add_loss_rows(std::vector<OpSpec>& t) {
  t.push_back(softmax_like("softmax", false));
  t.push_back(softmax_like("log_softmax", true));
  t.push_back(row(
      "cross_entropy_loss", 1, "logits: any; target: class indices; weight: in [0.2, 3]",
      "[N, C] and [N] (or [C] and []); reduction; smoothing; ignore_index; class weight [C] or "
      "none",
      [](Draw& d) { return class_case(d, true, "cross_entropy_loss", true); },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{cross_entropy_loss(in[0], in[1], weight_of(p, in[0]), reduction_arg(p), p.integer("ignore_index"),
                                             p.real("label_smoothing"))};
      },
      cross_entropy_ref));
  // The fused node cross_entropy_loss runs for [N, C] logits, checked against the composite (its
  // oracle).
  t.push_back(row(
      "cross_entropy_loss_fused", 1, "logits: any; target: class indices",
      "[N, C] and [N]; reduction; smoothing; ignore_index",
      [](Draw& d) { return class_case(d, false, "cross_entropy_loss_fused"); },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{cross_entropy_loss_fused(in[0], in[1], reduction_arg(p), p.integer("ignore_index"), p.real("label_smoothing"))};
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{
            cross_entropy_loss_reference(in[0].detach(), in[1], reduction_arg(p),
                                         p.integer("ignore_index"), p.real("label_smoothing")).detach()};
      }));
  t.back().notes = "reference: the composite cross_entropy_loss_reference";
  t.push_back(row(
      "cross_entropy_loss_reference", 1, "logits: any; target: class indices",
      "[N, C] and [N]; reduction; smoothing; ignore_index",
      [](Draw& d) { return class_case(d, false, "cross_entropy_loss_reference"); },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{cross_entropy_loss_reference(in[0], in[1], reduction_arg(p), p.integer("ignore_index"), p.real("label_smoothing"))};
      },
      cross_entropy_ref));
  t.push_back(row(
      "nll_loss", 1, "log-probabilities: any; target: class indices; weight: in [0.2, 3]",
      "[N, C] and [N]; reduction; ignore_index; class weight [C] or none",
      [](Draw& d) { return class_case(d, false, "nll_loss", true); },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{nll_loss(in[0], in[1], weight_of(p, in[0]), reduction_arg(p),
                                   p.integer("ignore_index"))};
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{nll_reference(in[0], in[1], p, 0.0, false, weight_of(p, in[0]))};
      }));
  t.push_back(pair_loss(
      "mse_loss", Domain::any(), mse, [](double a, double b) { return (a - b) * (a - b); }, false));
  t.push_back(pair_loss(
      "l1_loss", Domain::any(), l1, [](double a, double b) { return std::abs(a - b); }, true));
  t.push_back(pair_loss(
      "smooth_l1_loss", Domain::any(), smooth_l1,
      [](double a, double b) {  // beta = 1
        const double d = std::abs(a - b);
        return d < 1 ? 0.5 * d * d : d - 0.5;
      },
      false));
  t.push_back(pair_loss(
      "huber_loss", Domain::any(), huber,
      [](double a, double b) {  // delta = 0.7
        const double d = std::abs(a - b);
        return d < 0.7 ? 0.5 * d * d : 0.7 * (d - 0.35);
      },
      false));
  // kl_div(input, target, reduction, log_target): input any (log q); target a probability, or any
  // (log p) with log_target.
  t.push_back(row(
      "kl_div", 2, "input: any; target: probability (log_target: any)", "two tensors of one shape; reduction; log_target",
      [](Draw& d) {
        const bool log_target = d.boolean();
        Tensor x = d.values(d.shape(), Domain::any());
        Tensor y = d.values(x.sizes(), log_target ? Domain::any() : Domain::probability());
        const std::string reduction = d.choose(reduction_names());
        OpParams p = OpParams().set("reduction", reduction).set("log_target", log_target);
        return make({x, y}, p, "kl_div(input " + sh(x) + ", target " + sh(y) + ", " + p.str() + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{kl_div(in[0], in[1], as_int(reduction_of(p)), p.flag("log_target"))};
      },
      [](const TensorList& in, const OpParams& p) {
        Vec a = V(in[0]), b = V(in[1]), l;
        const bool lt = p.flag("log_target");
        for (size_t i = 0; i < a.size(); ++i)
          l.push_back(lt ? std::exp(b[i]) * (b[i] - a[i]) : b[i] * (std::log(b[i]) - a[i]));
        return TensorList{reduce_loss(l, in[0].sizes(), reduction_of(p))};
      }));
  // binary_cross_entropy(self, target, weight, reduction): self and target probabilities (away
  // from 0 and 1, where the clamp at -100 is a kink); weight of self's shape, or of its last dim
  // (broadcast), or none.
  t.push_back(row(
      "binary_cross_entropy", 3, "self, target: probability; weight: positive",
      "self and target of one shape; weight of that shape, of its trailing dim, or none; reduction",
      [](Draw& d) {
        Tensor x = d.values(d.shape(), Domain::probability());
        Tensor y = d.values(x.sizes(), Domain::probability());
        const std::string reduction = d.choose(reduction_names());
        const int64_t form = d.integer(0, 2);  // 0 none, 1 full, 2 trailing dim
        const OpParams p = OpParams().set("reduction", reduction);
        const std::string head = "binary_cross_entropy(self " + sh(x) + ", target";
        if (form == 0) return make({x, y}, p, head + ", " + reduction + ")");
        Shape ws = x.sizes();
        if (form == 2 && !ws.empty()) ws = {ws.back()};
        Tensor w = d.values(ws, Domain::positive());
        return make({x, y, w}, p, head + ", weight " + sh(w) + ", " + reduction + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{binary_cross_entropy(in[0], in[1], in.size() > 2 ? in[2] : Tensor(),
                                               reduction_arg(p))};
      },
      [](const TensorList& in, const OpParams& p) {
        Vec a = V(in[0]), b = V(in[1]), l;
        Vec w = in.size() > 2 ? V(in[2]) : Vec();
        for (size_t i = 0; i < a.size(); ++i) {
          const double wi = w.empty() ? 1.0 : w[i % w.size()];  // full, or the trailing dim
          l.push_back(-wi * (b[i] * std::log(a[i]) + (1 - b[i]) * std::log(1 - a[i])));
        }
        return TensorList{reduce_loss(l, in[0].sizes(), reduction_of(p))};
      }));
  // binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction): weight and
  // pos_weight each of the input's shape, of its trailing dim (broadcast), or none.
  t.push_back(row(
      "binary_cross_entropy_with_logits", 4, "input: [-4, 4]; target: probability; weights: positive",
      "input and target of one shape; weight, pos_weight: that shape, its trailing dim, or none; "
      "reduction",
      [](Draw& d) {
        Tensor x = d.values(d.shape(), Domain::any(-4, 4));
        Tensor y = d.values(x.sizes(), Domain::probability());
        const std::string reduction = d.choose(reduction_names());
        std::string text = "binary_cross_entropy_with_logits(input " + sh(x) + ", target";
        TensorList in{x, y};
        OpParams p = OpParams().set("reduction", reduction);
        for (const char* name : {"weight", "pos_weight"}) {
          const int64_t form = d.integer(0, 2);  // 0 none, 1 full, 2 trailing dim
          p.set(std::string("has_") + name, form != 0);
          if (form == 0) continue;
          Shape ws = x.sizes();
          if (form == 2 && !ws.empty()) ws = {ws.back()};
          in.push_back(d.values(ws, Domain::positive(0.2, 3.0)));
          text += std::string(", ") + name + " " + sh(in.back());
        }
        return make(in, p, text + ", " + reduction + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        size_t k = 2;
        Tensor w = p.flag("has_weight") ? in[k++] : Tensor();
        Tensor pw = p.flag("has_pos_weight") ? in[k++] : Tensor();
        return TensorList{binary_cross_entropy_with_logits(in[0], in[1], w, pw, reduction_arg(p))};
      },
      [](const TensorList& in, const OpParams& p) {
        size_t k = 2;
        const Vec a = V(in[0]), b = V(in[1]);
        const Vec w = p.flag("has_weight") ? V(in[k++]) : Vec{1.0};
        const Vec pw = p.flag("has_pos_weight") ? V(in[k++]) : Vec{1.0};
        Vec l;
        for (size_t i = 0; i < a.size(); ++i) {  // -w (p y log σ(x) + (1 - y) log(1 - σ(x)))
          const double s = 1 / (1 + std::exp(-a[i]));
          l.push_back(-w[i % w.size()] *
                      (pw[i % pw.size()] * b[i] * std::log(s) + (1 - b[i]) * std::log(1 - s)));
        }
        return TensorList{reduce_loss(l, in[0].sizes(), reduction_of(p))};
      }));
}

}  // namespace gradlab::testing::table

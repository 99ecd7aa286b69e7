// Op-table rows of ops/reduce.cpp: sum, mean, amax, amin, logsumexp (over dims, or all), max and
// min (all, or one dim with indices), var and std, norm, cumsum.

#include "gradlab/testing/op_table/support.hpp"

namespace gradlab::testing::table {

namespace {

double min_of(const Vec& g) { return *std::min_element(g.begin(), g.end()); }

Dims wrap_all(const Dims& dims, int64_t rank) {
  Dims d;
  if (dims.empty() || rank == 0) {
    for (int64_t k = 0; k < rank; ++k) d.push_back(k);
    return d;
  }
  for (auto k : dims) d.push_back(k < 0 ? k + rank : k);
  std::sort(d.begin(), d.end());
  return d;
}

// Groups x's elements by their coordinates outside `dims`, applies f to each group.
template <class F>
Tensor reduce_ref(const Tensor& x, const Dims& dims_in, bool keepdim, F f) {
  const Shape& s = x.sizes();
  const Dims dims = wrap_all(dims_in, x.dim());
  Shape kept = s;
  for (auto d : dims) kept[d] = 1;
  std::vector<Vec> groups(static_cast<size_t>(numel_of(kept)));
  Vec v = V(x);
  for (size_t i = 0; i < v.size(); ++i) {
    Shape c = unravel_index(static_cast<int64_t>(i), s);
    for (auto d : dims) c[d] = 0;
    groups[flat_of(c, kept)].push_back(v[i]);
  }
  Vec r;
  for (auto& g : groups) r.push_back(f(g));
  if (keepdim) return T(r, kept);
  Shape out;
  for (int64_t k = 0; k < x.dim(); ++k)
    if (!std::binary_search(dims.begin(), dims.end(), k)) out.push_back(s[k]);
  return T(r, out);
}

// A random subset of [0, rank) as dims (maybe negative), possibly empty.
Dims draw_dims(Draw& d, int64_t rank) {
  Dims dims;
  for (int64_t k = 0; k < rank; ++k)
    if (d.boolean()) dims.push_back(d.boolean() ? k : k - rank);
  return dims;
}

// A reduction over "dims" (a subset; empty = all) with "keepdim", or over everything when the
// case has no "dims". fn(x, p) calls the op; ref reduces one group of values.
template <class Fn, class Ref>
OpSpec reduction(std::string name, Domain dom, Fn fn, Ref ref) {
  const std::string nm = name;
  return row(
      name, 1, "x: " + dom.label, "any shape; dims (a subset, empty = all) and keepdim, or no dims",
      [=](Draw& d) {
        Tensor x = d.values(d.shape(), dom);
        const bool over_dims = d.integer(0, 3) != 0;
        const Dims dims = draw_dims(d, x.dim());
        const bool keepdim = d.boolean();
        OpParams p;
        if (over_dims) p.set("dims", dims).set("keepdim", keepdim);
        return make({x}, p,
                    nm + "(x " + sh(x) + (over_dims ? ", dims " + shape_str(dims) : std::string()) +
                        (over_dims && keepdim ? ", keepdim)" : ")"));
      },
      [fn](const TensorList& in, const OpParams& p) { return TensorList{fn(in[0], p)}; },
      [ref](const TensorList& in, const OpParams& p) {
        if (!p.has("dims")) return TensorList{reduce_ref(in[0], {}, false, ref)};
        return TensorList{reduce_ref(in[0], p.dims("dims"), p.flag("keepdim"), ref)};
      });
}

// max / min over everything, or along "dim" with "keepdim" (values and indices).
OpSpec max_min(std::string name, bool is_max) {
  const std::string nm = name;
  return row(
      name, 1, "x: any, distinct", "any shape; all, or one dim and keepdim",
      [nm](Draw& d) {
        Tensor x = d.values(d.shape(), Domain::any().distinct_values());
        const bool along = d.integer(0, 2) != 0;
        const int64_t dim = draw_dim(d, x.dim());
        const bool keepdim = d.boolean();
        OpParams p;
        if (along) p.set("dim", dim).set("keepdim", keepdim);
        return make(
            {x}, p,
            nm + "(x " + sh(x) + (along ? ", dim " + std::to_string(dim) : std::string()) + ")");
      },
      [is_max](const TensorList& in, const OpParams& p) {
        if (!p.has("dim")) return TensorList{is_max ? max(in[0]) : min(in[0])};
        const int64_t dim = p.integer("dim");
        const bool keepdim = p.flag("keepdim");
        auto [v, i] = is_max ? max(in[0], dim, keepdim) : min(in[0], dim, keepdim);
        return TensorList{v, i};
      },
      [is_max](const TensorList& in, const OpParams& p) {
        auto f = is_max ? max_of : min_of;
        if (!p.has("dim")) return TensorList{reduce_ref(in[0], {}, false, f)};
        return TensorList{
            reduce_ref(in[0], {wrap(p.integer("dim"), in[0].dim())}, p.flag("keepdim"), f)};
      });
}

OpSpec var_std(std::string name, bool is_std) {
  const std::string nm = name;
  return row(
      name, 1, "x: any, distinct (variance away from 0)",
      "any shape (2+ reduced elements); dims; correction 0/1",
      [nm](Draw& d) {
        Shape s = d.shape(1, 4);
        const Dims dims = draw_dims(d, static_cast<int64_t>(s.size()));
        const Dims w = wrap_all(dims, static_cast<int64_t>(s.size()));
        int64_t n = 1;
        for (auto k : w) n *= s[k];
        if (n < 2) s[w[0]] = 2;
        const int64_t correction = d.integer(0, 1);
        const bool keepdim = d.boolean();
        Tensor x = d.values(s, Domain::any().distinct_values(0.05));
        return make(
            {x}, OpParams().set("dims", dims).set("correction", correction).set("keepdim", keepdim),
            nm + "(x " + sh(x) + ", dims " + shape_str(dims) + ", correction " +
                std::to_string(correction) + ")");
      },
      [is_std](const TensorList& in, const OpParams& p) {
        const Dims& dims = p.dims("dims");
        const int64_t c = p.integer("correction");
        const bool keepdim = p.flag("keepdim");
        return TensorList{is_std ? gradlab::std(in[0], dims, c, keepdim)
                                 : var(in[0], dims, c, keepdim)};
      },
      [is_std](const TensorList& in, const OpParams& p) {
        const int64_t c = p.integer("correction");
        return TensorList{reduce_ref(in[0], p.dims("dims"), p.flag("keepdim"), [=](const Vec& g) {
          const double m = sum_of(g) / static_cast<double>(g.size());
          double s = 0;
          for (double e : g) s += (e - m) * (e - m);
          const double v = s / static_cast<double>(static_cast<int64_t>(g.size()) - c);
          return is_std ? std::sqrt(v) : v;
        })};
      });
}

}  // namespace

void add_reduce_rows(std::vector<OpSpec>& t) {
  const Domain any = Domain::any();
  t.push_back(reduction(
      "sum", any,
      [](const Tensor& x, const OpParams& p) {
        return p.has("dims") ? sum(x, p.dims("dims"), p.flag("keepdim")) : sum(x);
      },
      sum_of));
  t.push_back(reduction(
      "mean", any,
      [](const Tensor& x, const OpParams& p) {
        return p.has("dims") ? mean(x, p.dims("dims"), p.flag("keepdim")) : mean(x);
      },
      [](const Vec& g) { return sum_of(g) / static_cast<double>(g.size()); }));
  t.push_back(reduction(
      "amax", any.distinct_values(),
      [](const Tensor& x, const OpParams& p) {
        return p.has("dims") ? amax(x, p.dims("dims"), p.flag("keepdim")) : amax(x);
      },
      max_of));
  t.push_back(reduction(
      "amin", any.distinct_values(),
      [](const Tensor& x, const OpParams& p) {
        return p.has("dims") ? amin(x, p.dims("dims"), p.flag("keepdim")) : amin(x);
      },
      min_of));
  t.push_back(reduction(
      "logsumexp", any,
      [](const Tensor& x, const OpParams& p) {
        const bool over_dims = p.has("dims");
        return logsumexp(x, over_dims ? p.dims("dims") : Dims{}, over_dims && p.flag("keepdim"));
      },
      lse_of));
  t.push_back(max_min("max", true));
  t.push_back(max_min("min", false));
  t.push_back(var_std("var", false));
  t.push_back(var_std("std", true));
  t.push_back(row(
      "norm", 1, "x: away from 0 (p = inf: positive, distinct)", "any shape; p in {2, 1, 3, inf}",
      [](Draw& d) {
        const double q = d.choose(std::vector<double>{2.0, 1.0, 3.0, INFINITY});
        Domain dom =
            std::isinf(q) ? Domain::positive().distinct_values() : Domain::away_from({0.0});
        Tensor x = d.values(d.shape(), dom);
        return make({x}, OpParams().set("p", q),
                    "norm(x " + sh(x) + ", p=" + std::to_string(q) + ")");
      },
      [](const TensorList& in, const OpParams& p) { return TensorList{norm(in[0], p.real("p"))}; },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{reduce_ref(in[0], {}, false, [q = p.real("p")](const Vec& g) {
          if (std::isinf(q)) {
            double m = 0;
            for (double e : g) m = std::max(m, std::abs(e));
            return m;
          }
          double s = 0;
          for (double e : g) s += std::pow(std::abs(e), q);
          return std::pow(s, 1 / q);
        })};
      }));
  t.push_back(row(
      "cumsum", 1, "any", "rank 0-4 (sizes up to 9 along dim); one dim",
      [any](Draw& d) {
        Shape s = d.shape(0, 4);
        const int64_t dim = draw_dim(d, static_cast<int64_t>(s.size()));
        if (!s.empty()) s[static_cast<size_t>(wrap(dim, static_cast<int64_t>(s.size())))] = d.integer(1, 9);
        Tensor x = d.values(s, any);
        return make({x}, OpParams().set("dim", dim), "cumsum(x " + sh(x) + ", dim " + std::to_string(dim) + ")");
      },
      [](const TensorList& in, const OpParams& p) { return TensorList{cumsum(in[0], p.integer("dim"))}; },
      [](const TensorList& in, const OpParams& p) {
        // y[c] = Σ_{k <= c[dim]} x[c with dim = k]
        const Tensor& x = in[0];
        if (x.dim() == 0) return TensorList{x.detach()};
        const int64_t d = wrap(p.integer("dim"), x.dim());
        Vec v = V(x), r(v.size());
        for (size_t i = 0; i < v.size(); ++i) {
          Shape c = unravel_index(static_cast<int64_t>(i), x.sizes());
          const int64_t upto = c[static_cast<size_t>(d)];
          double acc = 0;
          for (int64_t k = 0; k <= upto; ++k) {
            c[static_cast<size_t>(d)] = k;
            acc += v[static_cast<size_t>(flat_of(c, x.sizes()))];
          }
          r[i] = acc;
        }
        return TensorList{T(r, x.sizes())};
      }));
}

}  // namespace gradlab::testing::table

// Op-table rows of ops/inplace.cpp: add_, sub_, mul_, div_ (a tensor or a number), fill_, zero_,
// copy_, clamp_, masked_fill_, index_put_, unsqueeze_. Each writes a non-leaf copy of its input (x * 1.0), so
// the graph is rebased.

#include "gradlab/testing/op_table/support.hpp"

namespace gradlab::testing::table {

namespace {

// self.op_(other) with other broadcastable to self, or a number ("scalar").
template <class Fn>
OpSpec inplace_binary(std::string name, Domain db, Fn fn, double (*g)(double, double)) {
  const std::string nm = name;
  return row(
      name, 2, "self: any; other: " + db.label,
      "self any shape; other broadcastable to it, or a number",
      [=](Draw& d) {
        Tensor x = d.values(d.shape(), Domain::any());
        if (d.integer(0, 3) == 0)
          return make({x}, OpParams().set("scalar", db.project(1.5)),
                      nm + "(self " + sh(x) + ", 1.5)");
        Tensor o = d.values(d.broadcastable_to(x.sizes()), db);
        return make({x, o}, {}, nm + "(self " + sh(x) + ", other " + sh(o) + ")");
      },
      [fn](const TensorList& in, const OpParams& p) {
        Tensor y = in[0] * 1.0;  // a non-leaf copy that may be written
        if (p.has("scalar"))
          fn(y,
             scalar_tensor(p.real("scalar"), TensorOptions().dtype(kFloat64).device(y.device())));
        else
          fn(y, in[1]);
        return TensorList{y};
      },
      binary_ref(g));
}

OpSpec fill_like(std::string name, bool zero) {
  const std::string nm = name;
  return row(
      name, 1, "any", "any shape; the result is constant (its gradient is zero)",
      [nm](Draw& d) {
        Tensor x = d.values(d.shape(), Domain::any());
        return make({x}, {}, nm + "(self " + sh(x) + ")");
      },
      [zero](const TensorList& in, const OpParams&) {
        Tensor y = in[0] * 1.0;
        if (zero)
          y.zero_();
        else
          y.fill_(0.25);
        return TensorList{y, in[0] * 2.0};  // the second output keeps a path to x
      },
      [zero](const TensorList& in, const OpParams&) {
        return TensorList{full(in[0].sizes(), zero ? 0.0 : 0.25, f64()),
                          map1(in[0], [](double x) { return 2 * x; })};
      });
}

}  // namespace

void add_inplace_rows(std::vector<OpSpec>& t) {
  t.push_back(inplace_binary(
      "add_", Domain::any(), [](Tensor& y, const Tensor& o) { y.add_(o); },
      [](double a, double b) { return a + b; }));
  t.push_back(inplace_binary(
      "sub_", Domain::any(), [](Tensor& y, const Tensor& o) { y.sub_(o); },
      [](double a, double b) { return a - b; }));
  t.push_back(inplace_binary(
      "mul_", Domain::any(), [](Tensor& y, const Tensor& o) { y.mul_(o); },
      [](double a, double b) { return a * b; }));
  t.push_back(inplace_binary(
      "div_", Domain::nonzero(), [](Tensor& y, const Tensor& o) { y.div_(o); },
      [](double a, double b) { return a / b; }));
  t.push_back(fill_like("fill_", false));
  t.push_back(fill_like("zero_", true));
  t.push_back(row(
      "copy_", 2, "any", "self any shape; src broadcastable to it",
      [](Draw& d) {
        Tensor x = d.values(d.shape(), Domain::any());
        Tensor s = d.values(d.broadcastable_to(x.sizes()), Domain::any());
        return make({x, s}, {}, "copy_(self " + sh(x) + ", src " + sh(s) + ")");
      },
      [](const TensorList& in, const OpParams&) {
        Tensor y = in[0] * 1.0;
        y.copy_(in[1]);
        return TensorList{y};
      },
      [](const TensorList& in, const OpParams&) {
        return TensorList{expand_ref(in[1], in[0].sizes())};
      }));
  t.push_back(row(
      "clamp_", 1, "x: away from the bounds -0.5 and 0.7", "any shape",
      [](Draw& d) {
        Tensor x = d.values(d.shape(), Domain::away_from({-0.5, 0.7}));
        return make({x}, OpParams().set("min", -0.5).set("max", 0.7),
                    "clamp_(self " + sh(x) + ", -0.5, 0.7)");
      },
      [](const TensorList& in, const OpParams& p) {
        Tensor y = in[0] * 1.0;
        y.clamp_(p.real("min"), p.real("max"));
        return TensorList{y};
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{clamp_ref(in[0], p.real("min"), p.real("max"))};
      }));
  t.push_back(row(
      "masked_fill_", 1, "x: any; mask: bool", "any shape; a mask broadcastable to it",
      [](Draw& d) {
        Tensor x = d.values(d.shape(), Domain::any());
        Tensor m = d.mask(d.broadcastable_to(x.sizes()));
        return make({x, m}, OpParams().set("value", -1.5),
                    "masked_fill_(self " + sh(x) + ", mask " + sh(m) + ", -1.5)");
      },
      [](const TensorList& in, const OpParams& p) {
        Tensor y = in[0] * 1.0;
        y.masked_fill_(in[1], p.real("value"));
        return TensorList{y};
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{masked_fill_ref(in[0], in[1], p.real("value"))};
      }));
  // index_put_ with a bool mask of self's shape, or with distinct int64 rows of dim 0.
  t.push_back(row(
      "index_put_", 2, "self, values: any",
      "a bool mask of self's shape, or distinct int64 rows; values broadcast",
      [](Draw& d) {
        const bool by_rows = d.integer(0, 1) == 1;
        Tensor x = d.values(d.shape(1, 4), Domain::any());
        if (!by_rows) {
          Tensor m = d.mask(x.sizes());
          Tensor v = d.values(d.broadcastable_to(x.sizes()), Domain::any());
          return make({x, m, v}, {},
                      "index_put_(self " + sh(x) + ", mask " + sh(m) + ", values " + sh(v) + ")");
        }
        Dims perm = d.permutation(x.size(0));
        const int64_t k = d.integer(1, x.size(0));
        Tensor rows = from_vector(std::vector<int64_t>(perm.begin(), perm.begin() + k), {k});
        Shape vs = x.sizes();
        vs[0] = k;
        Tensor v = d.values(d.broadcastable_to(vs), Domain::any());
        return make({x, rows, v}, {},
                    "index_put_(self " + sh(x) + ", rows " + sh(rows) + ", values " + sh(v) + ")");
      },
      [](const TensorList& in, const OpParams&) {
        Tensor y = in[0] * 1.0;
        y.index_put_(in[1], in[2]);
        return TensorList{y};
      },
      [](const TensorList& in, const OpParams&) {
        Vec v = V(in[0]);
        if (in[1].dtype() == kBool) {
          Vec m = V(in[1].to(kFloat64)), vals = V(expand_ref(in[2], in[0].sizes()));
          for (size_t i = 0; i < v.size(); ++i)
            if (m[i] != 0) v[i] = vals[i];
          return TensorList{T(v, in[0].sizes())};
        }
        auto rows = in[1].to_vector<int64_t>();
        Shape vs = in[0].sizes();
        vs[0] = static_cast<int64_t>(rows.size());
        Vec vals = V(expand_ref(in[2], vs));
        for (size_t i = 0; i < vals.size(); ++i) {
          Shape c = unravel_index(static_cast<int64_t>(i), vs);
          c[0] = rows[c[0]];
          v[flat_of(c, in[0].sizes())] = vals[i];
        }
        return TensorList{T(v, in[0].sizes())};
      }));
  // unsqueeze_: a metadata write; the node it records is unsqueeze's (its history is rebased).
  t.push_back(row(
      "unsqueeze_", 1, "any", "rank 0-3; a dim in [-(rank+1), rank]",
      [](Draw& d) {
        Tensor x = d.values(d.shape(0, 3), Domain::any());
        const int64_t dim = d.integer(-x.dim() - 1, x.dim());
        return make({x}, OpParams().set("dim", dim), "unsqueeze_(self " + sh(x) + ", " + std::to_string(dim) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        Tensor y = in[0] * 1.0;
        y.unsqueeze_(p.integer("dim"));
        return TensorList{y};
      },
      [](const TensorList& in, const OpParams& p) {
        Shape s = in[0].sizes();
        const int64_t dim = p.integer("dim"), at = dim < 0 ? dim + in[0].dim() + 1 : dim;
        s.insert(s.begin() + at, 1);
        return TensorList{T(V(in[0]), s)};
      }));
}

}  // namespace gradlab::testing::table

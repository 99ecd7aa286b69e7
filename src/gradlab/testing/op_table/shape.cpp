// Op-table rows of ops/shape.cpp: reshape, view, flatten, transpose, permute, slice, narrow,
// select, expand, squeeze, unsqueeze, sum_to, cat, stack, repeat, chunk, split, clone, contiguous,
// and to (a dtype cast).

#include "gradlab/testing/op_table/support.hpp"

namespace gradlab::testing::table {

namespace {

// y = x[.., start:end:step, ..] along dim (start/end already in range).
Tensor slice_ref(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  Shape out = x.sizes();
  out[dim] = end > start ? (end - start + step - 1) / step : 0;
  Vec v = V(x), r(static_cast<size_t>(numel_of(out)));
  for (size_t i = 0; i < r.size(); ++i) {
    Shape c = unravel_index(static_cast<int64_t>(i), out);
    c[dim] = start + c[dim] * step;
    r[i] = v[flat_of(c, x.sizes())];
  }
  return T(r, out);
}

Tensor cat_ref(const TensorList& xs, int64_t dim) {
  const int64_t d = dim < 0 ? dim + xs[0].dim() : dim;
  Shape out = xs[0].sizes();
  out[d] = 0;
  for (auto& t : xs) out[d] += t.size(d);
  Vec r(static_cast<size_t>(numel_of(out)));
  int64_t at = 0;
  for (auto& t : xs) {
    Vec v = V(t);
    for (size_t i = 0; i < v.size(); ++i) {
      Shape c = unravel_index(static_cast<int64_t>(i), t.sizes());
      c[d] += at;
      r[flat_of(c, out)] = v[i];
    }
    at += t.size(d);
  }
  return T(r, out);
}

// A random shape with the same number of elements (a valid reshape target; one size may be -1).
Shape draw_reshape(Draw& d, const Shape& s) {
  const int64_t n = numel_of(s), rank = d.integer(0, 4);
  Shape out = d.factors(n, rank);
  if (rank == 0 && n != 1) out = {n};
  if (!out.empty() && d.integer(0, 3) == 0)
    out[d.integer(0, static_cast<int64_t>(out.size()) - 1)] = -1;
  return out;
}

OpSpec reshape_like(std::string name, bool views_ok) {
  const std::string nm = name;
  return row(
      name, 1, "any", "any shape; a target with as many elements",
      [nm, views_ok](Draw& d) {
        Tensor x = d.values(d.shape(), Domain::any(), views_ok);
        const Shape target = draw_reshape(d, x.sizes());
        return make({x}, OpParams().set("shape", target),
                    nm + "(x " + sh(x) + ", " + shape_str(target) + ")");
      },
      [nm](const TensorList& in, const OpParams& p) {
        return TensorList{nm == "view" ? view(in[0], p.shape("shape"))
                                       : reshape(in[0], p.shape("shape"))};
      },
      [](const TensorList& in, const OpParams& p) {
        Shape s = p.shape("shape");
        int64_t known = 1;
        for (auto v : s)
          if (v != -1) known *= v;
        for (auto& v : s)
          if (v == -1) v = in[0].numel() / known;
        return TensorList{T(V(in[0]), s)};
      });
}

// A dim of x and a position along it: the shared draw of slice, narrow and select.
struct Along {
  int64_t dim, n;
};
Along draw_along(Draw& d, const Tensor& x) {
  const int64_t dim = draw_dim(d, x.dim());
  return {dim, x.size(dim)};
}

// y[c] = x[c mod s] per dim, x's shape right-aligned with the repeat counts.
Tensor repeat_ref(const Tensor& x, const Shape& reps) {
  const size_t lead = reps.size() - static_cast<size_t>(x.dim());
  Shape out(reps.size());
  for (size_t i = 0; i < reps.size(); ++i) out[i] = reps[i] * (i < lead ? 1 : x.sizes()[i - lead]);
  Vec v = V(x), r(static_cast<size_t>(numel_of(out)));
  for (size_t i = 0; i < r.size(); ++i) {
    const Shape c = unravel_index(static_cast<int64_t>(i), out);
    Shape src(c.begin() + static_cast<int64_t>(lead), c.end());
    for (size_t k = 0; k < src.size(); ++k) src[k] %= x.sizes()[k];
    r[i] = v[flat_of(src, x.sizes())];
  }
  return T(r, out);
}

// The pieces of x along dim of `size` each (the last shorter), by slice_ref.
TensorList pieces_ref(const Tensor& x, int64_t dim, int64_t size) {
  const int64_t d = wrap(dim, x.dim()), n = x.size(d);
  TensorList r;
  for (int64_t start = 0; start < n; start += size) r.push_back(slice_ref(x, d, start, std::min(n, start + size), 1));
  return r;
}

}  // namespace

void add_shape_rows(std::vector<OpSpec>& t) {
  const Domain any = Domain::any();
  t.push_back(reshape_like("reshape", true));
  t.push_back(reshape_like("view", false));
  t.back().notes = "contiguous inputs only (a view cannot always be made of a strided tensor)";
  t.push_back(row(
      "flatten", 1, "any", "any shape; start_dim <= end_dim",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(), any);
        const int64_t r = std::max<int64_t>(x.dim(), 1);
        int64_t a = d.integer(0, r - 1), b = d.integer(0, r - 1);
        if (a > b) std::swap(a, b);
        const int64_t end = d.boolean() ? b : b - r;
        return make(
            {x}, OpParams().set("start_dim", a).set("end_dim", end),
            "flatten(x " + sh(x) + ", " + std::to_string(a) + ", " + std::to_string(end) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{flatten(in[0], p.integer("start_dim"), p.integer("end_dim"))};
      },
      [](const TensorList& in, const OpParams& p) {
        const Shape& s = in[0].sizes();
        if (s.empty()) return TensorList{T(V(in[0]), {1})};
        const int64_t a = wrap(p.integer("start_dim"), in[0].dim()),
                      b = wrap(p.integer("end_dim"), in[0].dim());
        Shape out(s.begin(), s.begin() + a);
        int64_t n = 1;
        for (int64_t k = a; k <= b; ++k) n *= s[k];
        out.push_back(n);
        out.insert(out.end(), s.begin() + b + 1, s.end());
        return TensorList{T(V(in[0]), out)};
      }));
  t.push_back(row(
      "transpose", 1, "any", "rank 1-4; two dims",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(1, 4), any);
        const int64_t d0 = draw_dim(d, x.dim()), d1 = draw_dim(d, x.dim());
        return make(
            {x}, OpParams().set("dim0", d0).set("dim1", d1),
            "transpose(x " + sh(x) + ", " + std::to_string(d0) + ", " + std::to_string(d1) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{transpose(in[0], p.integer("dim0"), p.integer("dim1"))};
      },
      [](const TensorList& in, const OpParams& p) {
        Dims perm(in[0].dim());
        std::iota(perm.begin(), perm.end(), 0);
        std::swap(perm[wrap(p.integer("dim0"), in[0].dim())],
                  perm[wrap(p.integer("dim1"), in[0].dim())]);
        return TensorList{permute_ref(in[0], perm)};
      }));
  t.push_back(row(
      "permute", 1, "any", "any shape; a permutation",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(), any);
        const Dims perm = d.permutation(x.dim());
        return make({x}, OpParams().set("dims", perm),
                    "permute(x " + sh(x) + ", " + shape_str(perm) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{permute(in[0], p.dims("dims"))};
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{permute_ref(in[0], p.dims("dims"))};
      }));
  t.push_back(row(
      "slice", 1, "any", "rank 1-4; dim, start < end (maybe negative), step 1-3",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(1, 4), any);
        const auto [dim, n] = draw_along(d, x);
        const int64_t start = d.integer(0, n - 1), end = d.integer(start + 1, n);
        const int64_t from = d.boolean() ? start - n : start, step = d.integer(1, 3);
        return make(
            {x}, OpParams().set("dim", dim).set("start", from).set("end", end).set("step", step),
            "slice(x " + sh(x) + ", dim " + std::to_string(dim) + ", " + std::to_string(from) +
                ":" + std::to_string(end) + ":" + std::to_string(step) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{slice(in[0], p.integer("dim"), p.integer("start"), p.integer("end"),
                                p.integer("step"))};
      },
      [](const TensorList& in, const OpParams& p) {
        const int64_t d = wrap(p.integer("dim"), in[0].dim()), n = in[0].size(d);
        const int64_t start = p.integer("start") < 0 ? p.integer("start") + n : p.integer("start");
        return TensorList{slice_ref(in[0], d, start, p.integer("end"), p.integer("step"))};
      }));
  t.push_back(row(
      "narrow", 1, "any", "rank 1-4; dim, start, length >= 1",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(1, 4), any);
        const auto [dim, n] = draw_along(d, x);
        const int64_t start = d.integer(0, n - 1), length = d.integer(1, n - start);
        return make({x}, OpParams().set("dim", dim).set("start", start).set("length", length),
                    "narrow(x " + sh(x) + ", " + std::to_string(dim) + ", " +
                        std::to_string(start) + ", " + std::to_string(length) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{narrow(in[0], p.integer("dim"), p.integer("start"), p.integer("length"))};
      },
      [](const TensorList& in, const OpParams& p) {
        const int64_t d = wrap(p.integer("dim"), in[0].dim()), start = p.integer("start");
        return TensorList{slice_ref(in[0], d, start, start + p.integer("length"), 1)};
      }));
  t.push_back(row(
      "select", 1, "any", "rank 1-4; dim and an index (maybe negative)",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(1, 4), any);
        const auto [dim, n] = draw_along(d, x);
        const int64_t index = d.integer(-n, n - 1);
        return make(
            {x}, OpParams().set("dim", dim).set("index", index),
            "select(x " + sh(x) + ", " + std::to_string(dim) + ", " + std::to_string(index) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{select(in[0], p.integer("dim"), p.integer("index"))};
      },
      [](const TensorList& in, const OpParams& p) {
        const int64_t d = wrap(p.integer("dim"), in[0].dim()), n = in[0].size(d);
        const int64_t i = p.integer("index") < 0 ? p.integer("index") + n : p.integer("index");
        Tensor s = slice_ref(in[0], d, i, i + 1, 1);
        Shape out = in[0].sizes();
        out.erase(out.begin() + d);
        return TensorList{T(V(s), out)};
      }));
  t.push_back(row(
      "expand", 1, "any",
      "x with some size-1 dims; a target that grows them and adds leading dims (-1 keeps a size)",
      [any](Draw& d) {
        const Shape big = d.shape();
        Shape s = d.broadcastable_to(big);
        Tensor x = d.values(s, any);
        Shape size = big;
        const size_t lead = big.size() - s.size();
        for (size_t k = 0; k < s.size(); ++k)
          if (s[k] == big[k + lead] && d.integer(0, 2) == 0) size[k + lead] = -1;
        return make({x}, OpParams().set("size", size),
                    "expand(x " + sh(x) + ", " + shape_str(size) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{expand(in[0], p.shape("size"))};
      },
      [](const TensorList& in, const OpParams& p) {
        Shape out = p.shape("size");
        const size_t lead = out.size() - in[0].sizes().size();
        for (size_t k = 0; k < out.size(); ++k)
          if (out[k] == -1) out[k] = in[0].sizes()[k - lead];
        return TensorList{expand_ref(in[0], out)};
      }));
  t.push_back(row(
      "squeeze", 1, "any", "shape with some size-1 dims; all or one dim",
      [any](Draw& d) {
        Shape s = d.shape();
        for (auto& v : s)
          if (d.boolean()) v = 1;
        Tensor x = d.values(s, any);
        const bool one = d.integer(0, 1) == 1;
        const int64_t dim = draw_dim(d, x.dim());
        OpParams p;
        if (one) p.set("dim", dim);
        return make(
            {x}, p,
            "squeeze(x " + sh(x) + (one ? ", " + std::to_string(dim) : std::string()) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{p.has("dim") ? squeeze(in[0], p.integer("dim")) : squeeze(in[0])};
      },
      [](const TensorList& in, const OpParams& p) {
        Shape out;
        const Shape& s = in[0].sizes();
        for (int64_t k = 0; k < in[0].dim(); ++k) {
          const bool drop =
              s[k] == 1 && (!p.has("dim") || k == wrap(p.integer("dim"), in[0].dim()));
          if (!drop) out.push_back(s[k]);
        }
        return TensorList{T(V(in[0]), out)};
      }));
  t.push_back(row(
      "unsqueeze", 1, "any", "rank 0-3; a dim in [-(rank+1), rank]",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(0, 3), any);
        const int64_t dim = d.integer(-(x.dim() + 1), x.dim());
        return make({x}, OpParams().set("dim", dim),
                    "unsqueeze(x " + sh(x) + ", " + std::to_string(dim) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{unsqueeze(in[0], p.integer("dim"))};
      },
      [](const TensorList& in, const OpParams& p) {
        Shape out = in[0].sizes();
        const int64_t dim = p.integer("dim"), dd = dim < 0 ? dim + in[0].dim() + 1 : dim;
        out.insert(out.begin() + dd, 1);
        return TensorList{T(V(in[0]), out)};
      }));
  t.push_back(row(
      "sum_to", 1, "any", "x of a broadcast shape; a shape it was broadcast from",
      [any](Draw& d) {
        auto [sa, sb] = d.broadcast_pair();
        Tensor x = d.values(broadcast_shapes(sa, sb, "sum_to"), any);
        return make({x}, OpParams().set("shape", sa),
                    "sum_to(x " + sh(x) + ", " + shape_str(sa) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{sum_to(in[0], p.shape("shape"))};
      },
      [](const TensorList& in, const OpParams& p) {
        const Shape& to = p.shape("shape");
        Vec r(static_cast<size_t>(numel_of(to)), 0.0), v = V(in[0]);
        for (size_t i = 0; i < v.size(); ++i)
          r[bcast_flat(unravel_index(static_cast<int64_t>(i), in[0].sizes()), to, in[0].sizes())] +=
              v[i];
        return TensorList{T(r, to)};
      }));
  t.push_back(row(
      "cat", 3, "any", "1-3 tensors, rank 1-4, equal except along dim",
      [any](Draw& d) {
        Shape s = d.shape(1, 4);
        const int64_t dim = draw_dim(d, static_cast<int64_t>(s.size()));
        const int64_t along = wrap(dim, static_cast<int64_t>(s.size()));
        TensorList xs;
        const int64_t k = d.integer(1, 3);
        for (int64_t i = 0; i < k; ++i) {
          s[along] = d.integer(1, 4);
          xs.push_back(d.values(s, any));
        }
        return make(xs, OpParams().set("dim", dim),
                    "cat(" + args(xs) + "; dim " + std::to_string(dim) + ")");
      },
      [](const TensorList& in, const OpParams& p) { return TensorList{cat(in, p.integer("dim"))}; },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{cat_ref(in, p.integer("dim"))};
      }));
  t.push_back(row(
      "stack", 3, "any", "1-3 tensors of one shape; a dim in [-(rank+1), rank]",
      [any](Draw& d) {
        Shape s = d.shape(0, 3);
        const int64_t dim =
            d.integer(-static_cast<int64_t>(s.size()) - 1, static_cast<int64_t>(s.size()));
        TensorList xs;
        const int64_t k = d.integer(1, 3);
        for (int64_t i = 0; i < k; ++i) xs.push_back(d.values(s, any));
        return make(xs, OpParams().set("dim", dim),
                    "stack(" + args(xs) + "; dim " + std::to_string(dim) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{stack(in, p.integer("dim"))};
      },
      [](const TensorList& in, const OpParams& p) {
        const int64_t dim = p.integer("dim"), dd = dim < 0 ? dim + in[0].dim() + 1 : dim;
        TensorList u;
        for (auto& x : in) {
          Shape s = x.sizes();
          s.insert(s.begin() + dd, 1);
          u.push_back(T(V(x), s));
        }
        return TensorList{cat_ref(u, dd)};
      }));
  t.push_back(row(
      "repeat", 1, "any", "rank 0-3; counts 0-3 per dim, up to 2 extra leading dims",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(0, 3, 3), any);
        Shape reps(static_cast<size_t>(x.dim() + d.integer(0, 2)));
        for (auto& r : reps) r = d.integer(d.integer(0, 7) == 0 ? 0 : 1, 3);
        return make({x}, OpParams().set("repeats", reps), "repeat(x " + sh(x) + ", " + shape_str(reps) + ")");
      },
      [](const TensorList& in, const OpParams& p) { return TensorList{in[0].repeat(p.shape("repeats"))}; },
      [](const TensorList& in, const OpParams& p) { return TensorList{repeat_ref(in[0], p.shape("repeats"))}; }));
  t.push_back(row(
      "chunk", 1, "any", "rank 1-4; 1-4 chunks along a dim",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(1, 4), any);
        const int64_t dim = draw_dim(d, x.dim()), chunks = d.integer(1, 4);
        return make({x}, OpParams().set("dim", dim).set("chunks", chunks),
                    "chunk(x " + sh(x) + ", " + std::to_string(chunks) + ", dim " + std::to_string(dim) + ")");
      },
      [](const TensorList& in, const OpParams& p) { return chunk(in[0], p.integer("chunks"), p.integer("dim")); },
      [](const TensorList& in, const OpParams& p) {
        const int64_t n = in[0].size(p.integer("dim")), c = p.integer("chunks");
        return pieces_ref(in[0], p.integer("dim"), std::max<int64_t>((n + c - 1) / c, 1));
      }));
  t.push_back(row(
      "split", 1, "any", "rank 1-4; pieces of 1-4 along a dim",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(1, 4), any);
        const int64_t dim = draw_dim(d, x.dim()), size = d.integer(1, 4);
        return make({x}, OpParams().set("dim", dim).set("size", size),
                    "split(x " + sh(x) + ", " + std::to_string(size) + ", dim " + std::to_string(dim) + ")");
      },
      [](const TensorList& in, const OpParams& p) { return split(in[0], p.integer("size"), p.integer("dim")); },
      [](const TensorList& in, const OpParams& p) { return pieces_ref(in[0], p.integer("dim"), p.integer("size")); }));
  t.push_back(unary(
      "clone", clone, [](double x) { return x; }, any, true));
  t.push_back(unary(
      "contiguous", contiguous, [](double x) { return x; }, any));
  t.back().notes = "inputs are often non-contiguous views: then it copies";
  t.push_back(with_tol(
      row(
          "to", 1, "any", "any shape; float64 -> float32",
          [any](Draw& d) {
            Tensor x = d.values(d.shape(), any);
            return make({x}, {}, "to(x " + sh(x) + ", float32)");
          },
          [](const TensorList& in, const OpParams&) { return TensorList{in[0].to(kFloat32)}; },
          [](const TensorList& in, const OpParams&) {
            return TensorList{in[0].detach().to(kFloat32)};
          }),
      1e-3, 1e-4, 1e-3));
  t.back().notes = "a float32 output: differences need eps=1e-3 (its rounding is ~6e-8)";
}

}  // namespace gradlab::testing::table

// Op-table rows of ops/index.cpp: index_select, gather, scatter_add, index_add, embedding; and
// of ops/indexing.cpp: Tensor::index with a torch::indexing list.

#include <climits>

#include "gradlab/core/indexing.hpp"
#include "gradlab/testing/op_table/support.hpp"

namespace gradlab::testing::table {

namespace {

std::vector<int64_t> I(const Tensor& t) { return t.to_vector<int64_t>(); }

// An index list coded as ints, four per entry: kind (0 None, 1 Ellipsis, 2 integer a, 3 Slice
// a:b:c with kOpen for an omitted end, 4 the int64 list in "picks"), a, b, c.
constexpr int64_t kOpen = INT64_MIN;

std::vector<indexing::TensorIndex> decode_index(const OpParams& p) {
  const Dims& code = p.dims("index");
  std::vector<indexing::TensorIndex> r;
  auto end = [](int64_t v) { return v == kOpen ? std::optional<int64_t>() : std::optional<int64_t>(v); };
  for (size_t i = 0; i + 3 < code.size(); i += 4) {
    switch (code[i]) {
      case 0: r.emplace_back(indexing::None); break;
      case 1: r.emplace_back(indexing::Ellipsis); break;
      case 2: r.emplace_back(code[i + 1]); break;
      case 3: r.emplace_back(indexing::Slice(end(code[i + 1]), end(code[i + 2]), code[i + 3])); break;
      default: {
        const Shape& picks = p.shape("picks");
        r.emplace_back(from_vector(std::vector<int64_t>(picks.begin(), picks.end()),
                                   {static_cast<int64_t>(picks.size())}));
      }
    }
  }
  return r;
}

// Python's range(start, stop, step) of a slice over n elements.
std::vector<int64_t> slice_positions(int64_t n, int64_t a, int64_t b, int64_t step) {
  auto fix = [n](int64_t v, int64_t open) { return v == kOpen ? open : std::clamp<int64_t>(v < 0 ? v + n : v, 0, n); };
  std::vector<int64_t> r;
  for (int64_t i = fix(a, 0); i < fix(b, n); i += step) r.push_back(i);
  return r;
}

// x.index(list) by loops: each output dim reads a list of positions of one input dim (or is a
// new dim of 1); an integer entry fixes its input dim.
Tensor index_ref(const Tensor& x, const OpParams& p) {
  const Dims& code = p.dims("index");
  int64_t consumed = 0;
  for (size_t i = 0; i < code.size(); i += 4) consumed += code[i] >= 2;
  struct OutDim {
    int64_t in_dim;  // -1: a new dim of size 1
    std::vector<int64_t> pos;
  };
  std::vector<OutDim> out;
  std::vector<int64_t> fixed(static_cast<size_t>(x.dim()), -1);
  int64_t d = 0;
  auto all = [&](int64_t k) {
    std::vector<int64_t> r(static_cast<size_t>(x.size(k)));
    std::iota(r.begin(), r.end(), 0);
    return r;
  };
  for (size_t i = 0; i < code.size(); i += 4) {
    const int64_t n = d < x.dim() ? x.size(d) : 0;
    switch (code[i]) {
      case 0: out.push_back({-1, {0}}); break;
      case 1:
        for (int64_t k = 0; k < x.dim() - consumed; ++k, ++d) out.push_back({d, all(d)});
        break;
      case 2: fixed[static_cast<size_t>(d++)] = code[i + 1] < 0 ? code[i + 1] + n : code[i + 1]; break;
      case 3: out.push_back({d, slice_positions(n, code[i + 1], code[i + 2], code[i + 3])}); ++d; break;
      default: {
        const Shape& picks = p.shape("picks");
        out.push_back({d++, std::vector<int64_t>(picks.begin(), picks.end())});
      }
    }
  }
  for (; d < x.dim(); ++d) out.push_back({d, all(d)});
  Shape shape;
  for (auto& o : out) shape.push_back(static_cast<int64_t>(o.pos.size()));
  Vec v = V(x), r(static_cast<size_t>(numel_of(shape)));
  for (size_t i = 0; i < r.size(); ++i) {
    const Shape c = unravel_index(static_cast<int64_t>(i), shape);
    Shape src(static_cast<size_t>(x.dim()));
    for (size_t k = 0; k < src.size(); ++k) src[k] = fixed[k];
    for (size_t k = 0; k < out.size(); ++k)
      if (out[k].in_dim >= 0) src[static_cast<size_t>(out[k].in_dim)] = out[k].pos[static_cast<size_t>(c[k])];
    r[i] = v[static_cast<size_t>(flat_of(src, x.sizes()))];
  }
  return T(r, shape);
}

Tensor gather_ref(const Tensor& x, int64_t dim, const Tensor& index) {
  Vec v = V(x), r;
  auto idx = I(index);
  for (size_t i = 0; i < idx.size(); ++i) {
    Shape c = unravel_index(static_cast<int64_t>(i), index.sizes());
    if (x.dim() > 0) c[dim] = idx[i];
    r.push_back(v[x.dim() > 0 ? flat_of(c, x.sizes()) : 0]);
  }
  return T(r, index.sizes());
}

Tensor scatter_add_ref(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  Vec r = V(self), s = V(src);
  auto idx = I(index);
  for (size_t i = 0; i < idx.size(); ++i) {
    Shape c = unravel_index(static_cast<int64_t>(i), index.sizes());
    const double val = s[flat_of(c, src.sizes())];
    if (self.dim() > 0) c[dim] = idx[i];
    r[self.dim() > 0 ? flat_of(c, self.sizes()) : 0] += val;
  }
  return T(r, self.sizes());
}

Tensor index_select_ref(const Tensor& x, int64_t dim, const Tensor& index) {
  auto idx = I(index);
  Shape out = x.sizes();
  out[dim] = static_cast<int64_t>(idx.size());
  Vec v = V(x), r(static_cast<size_t>(numel_of(out)));
  for (size_t i = 0; i < r.size(); ++i) {
    Shape c = unravel_index(static_cast<int64_t>(i), out);
    c[dim] = idx[c[dim]];
    r[i] = v[flat_of(c, x.sizes())];
  }
  return T(r, out);
}

Tensor index_add_ref(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  auto idx = I(index);
  Vec r = V(self), s = V(src);
  for (size_t i = 0; i < s.size(); ++i) {
    Shape c = unravel_index(static_cast<int64_t>(i), src.sizes());
    c[dim] = idx[c[dim]];
    r[flat_of(c, self.sizes())] += s[i];
  }
  return T(r, self.sizes());
}

// An index for gather / scatter_add along `dim`: x's rank, no larger than x off dim.
Tensor gather_index(Draw& d, const Tensor& x, int64_t dim) {
  Shape is = x.sizes();
  for (int64_t k = 0; k < x.dim(); ++k)
    is[k] = k == dim ? d.integer(1, 5) : d.integer(1, x.size(k));
  return d.indices(is, x.size(dim));
}

// The row's "dim", wrapped for the tensor `x` (the references index with it).
int64_t dim_of(const OpParams& p, const Tensor& x) { return wrap(p.integer("dim"), x.dim()); }

}  // namespace

void add_index_rows(std::vector<OpSpec>& t) {
  const Domain any = Domain::any();
  t.push_back(row(
      "index_select", 1, "x: any; index: int64 in range",
      "rank 1-4; dim; a 1-D index (repeats allowed)",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(1, 4), any);
        const int64_t dim = draw_dim(d, x.dim());
        Tensor idx = d.indices({d.integer(1, 5)}, x.size(dim));
        return make(
            {x, idx}, OpParams().set("dim", dim),
            "index_select(x " + sh(x) + ", " + std::to_string(dim) + ", index " + sh(idx) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{index_select(in[0], p.integer("dim"), in[1])};
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{index_select_ref(in[0], dim_of(p, in[0]), in[1])};
      }));
  t.push_back(row(
      "gather", 1, "x: any; index: int64 in range",
      "rank 1-4; dim; index of the same rank, no larger off dim",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(1, 4), any);
        const int64_t dim = draw_dim(d, x.dim());
        Tensor idx = gather_index(d, x, wrap(dim, x.dim()));
        return make({x, idx}, OpParams().set("dim", dim),
                    "gather(x " + sh(x) + ", " + std::to_string(dim) + ", index " + sh(idx) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{gather(in[0], p.integer("dim"), in[1])};
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{gather_ref(in[0], dim_of(p, in[0]), in[1])};
      }));
  t.push_back(row(
      "scatter_add", 2, "self, src: any; index: int64 in range",
      "rank 1-4; dim; index like gather's; src of index's shape",
      [any](Draw& d) {
        Tensor self = d.values(d.shape(1, 4), any);
        const int64_t dim = draw_dim(d, self.dim());
        Tensor idx = gather_index(d, self, wrap(dim, self.dim()));
        Tensor src = d.values(idx.sizes(), any);
        return make({self, idx, src}, OpParams().set("dim", dim),
                    "scatter_add(self " + sh(self) + ", " + std::to_string(dim) + ", index " +
                        sh(idx) + ", src " + sh(src) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{scatter_add(in[0], p.integer("dim"), in[1], in[2])};
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{scatter_add_ref(in[0], dim_of(p, in[0]), in[1], in[2])};
      }));
  t.push_back(row(
      "index_add", 2, "self, src: any; index: int64 in range",
      "rank 1-4; dim; 1-D index; src sized by the index",
      [any](Draw& d) {
        Tensor self = d.values(d.shape(1, 4), any);
        const int64_t dim = draw_dim(d, self.dim()), along = wrap(dim, self.dim());
        Tensor idx = d.indices({d.integer(1, 5)}, self.size(along));
        Shape ss = self.sizes();
        ss[along] = idx.numel();
        Tensor src = d.values(ss, any);
        return make({self, idx, src}, OpParams().set("dim", dim),
                    "index_add(self " + sh(self) + ", " + std::to_string(dim) + ", index " +
                        sh(idx) + ", src " + sh(src) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{index_add(in[0], p.integer("dim"), in[1], in[2])};
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{index_add_ref(in[0], dim_of(p, in[0]), in[1], in[2])};
      }));
  t.push_back(row(
      "embedding", 1, "weight: any; indices: int64 in [0, V)", "weight [V, D]; indices of rank 0-2",
      [any](Draw& d) {
        Tensor w = d.values({d.integer(1, 5), d.integer(1, 4)}, any);
        Tensor idx = d.indices(d.shape(0, 2, 4), w.size(0));
        return make({w, idx}, {}, "embedding(weight " + sh(w) + ", indices " + sh(idx) + ")");
      },
      [](const TensorList& in, const OpParams&) { return TensorList{embedding(in[0], in[1])}; },
      [](const TensorList& in, const OpParams&) {
        Tensor r = index_select_ref(in[0], 0, in[1].reshape({-1}));
        Shape out = in[1].sizes();
        out.push_back(in[0].size(1));
        return TensorList{T(V(r), out)};
      }));
  t.push_back(row(
      "index", 1, "any", "rank 1-3; integers, Slices (steps 1-3, open or negative ends), None, one Ellipsis, one int64 list",
      [](Draw& d) {
        Tensor x = d.values(d.shape(1, 3), Domain::any());
        std::vector<int64_t> code, picks;
        std::string text;
        const bool ellipsis = d.integer(0, 2) == 0, tensor = d.integer(0, 2) == 0;
        const int64_t named = d.integer(ellipsis ? 0 : 1, x.dim()), at_ellipsis = d.integer(0, named);
        int64_t dim = 0;
        auto put = [&](int64_t k, int64_t a, int64_t b, int64_t c, const std::string& t) {
          code.insert(code.end(), {k, a, b, c});
          text += (text.empty() ? "" : ", ") + t;
        };
        auto opt = [&](int64_t v) { return v == kOpen ? std::string("None") : std::to_string(v); };
        bool used_tensor = false;
        for (int64_t e = 0; e <= named; ++e) {
          if (ellipsis && e == at_ellipsis) {
            put(1, 0, 0, 0, "...");
            dim += x.dim() - named;
          }
          if (e == named) break;
          if (d.integer(0, 4) == 0) put(0, 0, 0, 0, "None");
          const int64_t n = x.size(dim++), kind = d.integer(0, 2);
          if (kind == 0) {
            const int64_t i = d.integer(-n, n - 1);
            put(2, i, 0, 0, std::to_string(i));
          } else if (kind == 1 && tensor && !used_tensor) {
            used_tensor = true;
            for (int64_t k = d.integer(1, 4); k > 0; --k) picks.push_back(d.integer(0, n - 1));
            put(4, 0, 0, 0, "tensor " + shape_str(picks));
          } else {
            const int64_t a = d.integer(0, 3) == 0 ? kOpen : d.integer(-n - 1, n), b = d.integer(0, 3) == 0 ? kOpen : d.integer(-n - 1, n + 1),
                          step = d.integer(1, 3);
            put(3, a, b, step, "Slice(" + opt(a) + ", " + opt(b) + ", " + std::to_string(step) + ")");
          }
        }
        return make({x}, OpParams().set("index", code).set("picks", picks), "x " + sh(x) + ".index({" + text + "})");
      },
      [](const TensorList& in, const OpParams& p) { return TensorList{in[0].index(decode_index(p))}; },
      [](const TensorList& in, const OpParams& p) { return TensorList{index_ref(in[0], p)}; }));
}

}  // namespace gradlab::testing::table

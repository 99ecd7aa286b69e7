// Op-table rows of ops/index.cpp: index_select, gather, scatter_add, index_add, embedding.

#include "gradlab/testing/op_table/support.hpp"

namespace gradlab::testing::table {

namespace {

std::vector<int64_t> I(const Tensor& t) { return t.to_vector<int64_t>(); }

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
}

}  // namespace gradlab::testing::table

// Indexing ops. Each pair is the other's backward: gather <-> scatter_add, index_select <-> index_add.

#include "gradlab/ops/internal/index.hpp"

namespace gradlab {
using namespace ops_detail;

namespace {

// index: int64, on x's device (a kernel reads it where x lives); a 0-d x takes one index only.
void check_index_tensor(const char* op, const Tensor& index, const Tensor& x) {
  check_defined(op, index, "index");
  GRADLAB_CHECK(index.dtype() == kInt64, DTypeError, op, "index must be an int64 tensor", "int64",
                to_string(index.dtype()), "convert with .to(kInt64)");
  check_same_device(op, x, index);
}
void check_scalar_index(const char* op, const Tensor& x, const Tensor& index) {
  GRADLAB_CHECK(x.dim() > 0 || index.numel() <= 1, ShapeError, op, "index to a 0-d tensor can have only one value",
                "at most 1 index", std::to_string(index.numel()) + " indices");
}

// gather/scatter: index has x's rank and fits inside x (src) in every dim but `dim`.
void check_gather_shapes(const char* op, const Tensor& x, int64_t d, const Tensor& index) {
  GRADLAB_CHECK(index.dim() == x.dim(), ShapeError, op, "index tensor must have the same number of dimensions as input",
                std::to_string(x.dim()) + " dims", std::to_string(index.dim()) + " dims (" + shape_str(index.sizes()) + ")");
  for (int64_t k = 0; k < x.dim(); ++k)
    if (k != d)
      GRADLAB_CHECK(index.size(k) <= x.size(k), ShapeError, op,
                    "size of index does not fit the input at dimension " + std::to_string(k),
                    "index.size(" + std::to_string(k) + ") <= " + std::to_string(x.size(k)),
                    shape_str(index.sizes()) + " for input " + shape_str(x.sizes()));
  kern::check_indices(index, x.dim() == 0 ? 1 : x.size(d), op);
}

}  // namespace

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index, Site site) {
  check_defined("index_select", x);
  check_index_tensor("index_select", index, x);
  check_scalar_index("index_select", x, index);
  GRADLAB_CHECK(index.dim() <= 1, ShapeError, "index_select", "index must be 0-D or 1-D", "a 1-D index",
                shape_str(index.sizes()));
  const int64_t d = x.dim() == 0 ? 0 : wrap_dim(dim, x.dim(), "index_select");
  kern::check_indices(index, x.dim() == 0 ? 1 : x.size(d), "index_select");
  return record<IndexSelect>(site, x, d, index.reshape({-1}));
}
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, Site site) {
  check_defined("index_add", self);
  check_defined("index_add", src, "source");
  check_index_tensor("index_add", index, self);
  check_scalar_index("index_add", self, index);
  const int64_t d = wrap_dim(dim, self.dim(), "index_add");
  Shape want = self.sizes();
  if (!want.empty()) want[d] = index.numel();
  GRADLAB_CHECK(src.sizes() == want, ShapeError, "index_add", "source has the wrong shape", shape_str(want),
                shape_str(src.sizes()));
  kern::check_indices(index, self.dim() == 0 ? 1 : self.size(d), "index_add");
  check_same_device("index_add", self, src);
  return record<IndexAdd>(site, self, d, index.reshape({-1}), cast_to(src, self.dtype(), site));
}
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index, Site site) {
  check_defined("gather", x);
  check_index_tensor("gather", index, x);
  const int64_t d = x.dim() == 0 ? 0 : wrap_dim(dim, x.dim(), "gather");
  check_gather_shapes("gather", x, d, index);
  return record<Gather>(site, x, d, index);
}
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, Site site) {
  check_defined("scatter_add", self);
  check_defined("scatter_add", src, "src");
  check_index_tensor("scatter_add", index, self);
  check_same_device("scatter_add", self, src);
  const int64_t d = self.dim() == 0 ? 0 : wrap_dim(dim, self.dim(), "scatter_add");
  check_gather_shapes("scatter_add", self, d, index);
  GRADLAB_CHECK(src.dim() == index.dim(), ShapeError, "scatter_add", "src must have the index's rank",
                std::to_string(index.dim()) + " dims", std::to_string(src.dim()) + " dims");
  for (int64_t k = 0; k < index.dim(); ++k)
    GRADLAB_CHECK(index.size(k) <= src.size(k), ShapeError, "scatter_add", "index is larger than src",
                  "index.size(" + std::to_string(k) + ") <= " + std::to_string(src.size(k)), shape_str(index.sizes()));
  // Only the part of src that index covers takes part.
  Tensor s = src;
  for (int64_t k = 0; k < index.dim(); ++k)
    if (s.size(k) != index.size(k)) s = s.narrow(k, 0, index.size(k));
  return record<ScatterAdd>(site, self, d, index, cast_to(s, self.dtype(), site));
}
Tensor embedding(const Tensor& weight, const Tensor& indices, Site site) {
  check_defined("embedding", weight, "weight");
  check_index_tensor("embedding", indices, weight);
  GRADLAB_CHECK(weight.dim() == 2, ShapeError, "embedding", "weight must be 2-D", "[num_embeddings, dim]",
                shape_str(weight.sizes()));
  Shape out = indices.sizes();
  out.push_back(weight.size(1));
  return index_select(weight, 0, indices.reshape({-1}), site).reshape(out, site);
}

}  // namespace gradlab

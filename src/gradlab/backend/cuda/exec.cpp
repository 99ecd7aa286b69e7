#include "gradlab/backend/cuda/exec.hpp"

#include "gradlab/core/shape.hpp"

namespace gradlab::gpu {

Indexer make_indexer(const Shape& shape, const Strides& strides, const char* op) {
  // Merge: dims d-1 and d step like one when stride[d-1] == stride[d] * size[d]; drop size-1 dims.
  Shape sz;
  Strides st;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!sz.empty() && st.back() == strides[d] * shape[d]) {
      sz.back() *= shape[d];
      st.back() = strides[d];
    } else {
      sz.push_back(shape[d]);
      st.push_back(strides[d]);
    }
  }
  if (sz.empty() && numel_of(shape) == 0) {  // an empty tensor: no element is ever indexed
    sz.push_back(0);
    st.push_back(0);
  }
  GRADLAB_CHECK(sz.size() <= static_cast<size_t>(kMaxDims), ShapeError, op,
                "too many dimensions for a CUDA kernel", "at most " + std::to_string(kMaxDims) + " dims",
                std::to_string(shape.size()) + " dims " + shape_str(shape),
                "reshape (merge dims) before moving this tensor to the GPU");
  Indexer ix;
  ix.rank = static_cast<int>(sz.size());
  for (size_t d = 0; d < sz.size(); ++d) {
    ix.size[d] = sz[d];
    ix.stride[d] = st[d];
  }
  return ix;
}

}  // namespace gradlab::gpu

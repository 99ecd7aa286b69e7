#include "gradlab/backend/cuda/exec.hpp"

#include "gradlab/core/shape.hpp"

namespace gradlab::gpu {

Indexer make_indexer(const Shape& shape, const Strides& strides, const char* op) {
  GRADLAB_CHECK(shape.size() <= static_cast<size_t>(kMaxDims), ShapeError, op,
                "too many dimensions for a CUDA kernel", "at most " + std::to_string(kMaxDims) + " dims",
                std::to_string(shape.size()) + " dims " + shape_str(shape),
                "reshape (merge dims) before moving this tensor to the GPU");
  Indexer ix;
  ix.rank = static_cast<int>(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    ix.size[d] = shape[d];
    ix.stride[d] = strides[d];
  }
  return ix;
}

}  // namespace gradlab::gpu

#pragma once
// nn::Embedding: a lookup table of vectors indexed by int64 ids.

#include <optional>

#include "gradlab/nn/arg.hpp"
#include "gradlab/nn/module.hpp"

namespace gradlab::nn {

/// Options of nn::Embedding.
struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  GRADLAB_ARG(int64_t, num_embeddings);
  GRADLAB_ARG(int64_t, embedding_dim);
  /// This row starts at zero and never receives a gradient.
  GRADLAB_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

/// ids (int64, any shape) -> ids.shape + [embedding_dim]; weight ~ N(0, 1).
class EmbeddingImpl : public Module {
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingImpl(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingImpl(const EmbeddingOptions& options);
  void reset_parameters();
  Tensor forward(const Tensor& indices);
  void pretty_print(std::ostream& os) const override;

  EmbeddingOptions options;
  Tensor weight;
};
GRADLAB_MODULE(Embedding);

}  // namespace gradlab::nn

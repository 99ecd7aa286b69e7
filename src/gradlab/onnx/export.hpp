#pragma once
// onnx::export_model: writes a model (an nn module tree, or a traced jit::Graph) as an ONNX file
// (opset 17, ONNX's protobuf schema from libonnx-dev), checked by onnx::checker::check_model
// before it is written, and written atomically (io/atomic_file.hpp: a crash mid-write keeps the
// previous file).
//
// Modules: Sequential, Linear, Conv2d, MaxPool2d, BatchNorm1d and Dropout (eval mode), ReLU,
// LeakyReLU, Sigmoid, Tanh, Softplus, GELU, Softmax, LogSoftmax, Flatten, LayerNorm, Embedding,
// Identity. Graphs: each traced op as its struct's kOnnx trait says (ops/op_traits.hpp): the
// elementwise ops, linear (Gemm), mm / bmm (MatMul), reshapes, permute, expand, sum, casts,
// index_select, clone, where. Anything else is an error naming it and the trait's reason. Shapes are those of the example
// input (a static batch size, as torch.onnx.export without dynamic_axes).
//
// Built only when CMake finds libonnx-dev (GRADLAB_HAVE_ONNX); otherwise export_model throws.

#include <string>

#include "gradlab/core/tensor.hpp"
#include "gradlab/jit/trace.hpp"
#include "gradlab/nn/module.hpp"

namespace gradlab::onnx {

/// Options of export_model.
struct ExportOptions {
  int opset = 17;
  std::string input_name = "input";
  std::string output_name = "output";
  std::string graph_name = "gradlab";
};

/// Exports `model` (in eval mode: a module in training mode is an error) for inputs shaped like
/// `example_input`, to `path`.
void export_model(const nn::Module& model, const Tensor& example_input, const std::string& path,
                  const ExportOptions& options = {});
template <class M>
void export_model(const nn::ModuleHolder<M>& model, const Tensor& example_input,
                  const std::string& path, const ExportOptions& options = {}) {
  export_model(*model.ptr(), example_input, path, options);
}
/// Exports a traced graph (one input, one output); example_input only names the input's shape.
void export_model(const jit::Graph& graph, const Tensor& example_input, const std::string& path,
                  const ExportOptions& options = {});

/// True when this build can export (libonnx-dev was found).
bool available();

}  // namespace gradlab::onnx

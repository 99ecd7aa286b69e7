#pragma once
// The neural-network op structs (internal): unfold, fold, max_pool2d (own backward + CPU kernels in
// backend/cpu/conv.cpp), the fused linear node, threshold_backward and the fused cross-entropy.
//
// Internal, but named (not in an anonymous namespace): the checks reach a struct's saved members
// to override its backward (testing/mutants.hpp), and the benches time the real nodes.

#include "gradlab/ops/common.hpp"
#include "gradlab/ops/nn_ops.hpp"

namespace gradlab::ops_detail {

// Shared by the windowed ops (nn_ops.cpp, resample.cpp): positive kernel, stride and dilation,
// non-negative padding; the kernel window; an output of at least 1x1.
void check_window(const char* op, IntPair kernel, IntPair dilation, IntPair padding,
                  IntPair stride);
kern::Window2d window(IntPair kernel, IntPair dilation, IntPair padding, IntPair stride);
void check_output_size(const char* op, const Tensor& x, const kern::Window2d& w);

// cols = unfold(x)          dx = fold(dcols)         (unfold and fold are each other's adjoint)
struct Unfold : BuiltinOp<Unfold> {
  static constexpr const char* kName = "Im2ColBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::none("im2col has no ONNX op: export the Conv2d module (onnx::export_model(model, ...))");
  static constexpr Fusion kFusion = Fusion::None;
  kern::Window2d win;
  int64_t C = 0, H = 0, W = 0;
  Tensor forward(const Tensor& x, const kern::Window2d& w) {
    win = w;
    C = x.size(1), H = x.size(2), W = x.size(3);
    return kern::im2col(x, w);
  }
  GradList backward(const GradList& g);
};

// x = fold(cols)            dcols = unfold(dx)
struct Fold : BuiltinOp<Fold> {
  static constexpr const char* kName = "Col2ImBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::none("col2im is not in ONNX opset 17");
  static constexpr Fusion kFusion = Fusion::None;
  kern::Window2d win;
  Tensor forward(const Tensor& cols, int64_t C, int64_t H, int64_t W, const kern::Window2d& w) {
    win = w;
    return kern::col2im(cols, C, H, W, w);
  }
  GradList backward(const GradList& g) { return {record<Unfold>(Site::unknown(), g[0], win)}; }
};

inline GradList Unfold::backward(const GradList& g) {
  return {record<Fold>(Site::unknown(), g[0], C, H, W, win)};
}

// y = max over each window, i = its argmax     dx = dy scattered to the argmax positions
struct MaxPool2d : BuiltinOp<MaxPool2d> {
  static constexpr const char* kName = "MaxPool2DWithIndicesBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::none("no ONNX mapping written yet for the traced op: export the MaxPool2d module");
  static constexpr Fusion kFusion = Fusion::None;
  Shape in_shape;
  SavedTensor idx_;
  std::vector<Tensor> forward(const Tensor& x, const kern::Window2d& w) {
    in_shape = x.sizes();
    auto [y, i] = kern::max_pool2d(x, w);
    save(idx_, i, Output{1});  // the indices are output 1
    return {y, i};
  }
  GradList backward(const GradList& g) {
    const int64_t N = in_shape[0], C = in_shape[1], HW = in_shape[2] * in_shape[3];
    Tensor idx = idx_.unpack();
    // Without create_graph, on the CPU: one pass (zero dx, add dy at each argmax; the same sums
    // in the same order as the scatter_add below). scatter_add stays the differentiable path and
    // the reference (set_conv_reference(true)).
    if (!GradMode::is_enabled() && !g[0].is_cuda() && !conv_reference())
      return {kern::max_pool2d_backward(g[0], idx, in_shape[2], in_shape[3])};
    const int64_t L = idx.size(2) * idx.size(3);
    Tensor dx = scatter_add(zeros({N, C, HW}, g[0].options()), 2, idx.reshape({N, C, L}),
                            g[0].reshape({N, C, L}));
    return {dx.reshape(in_shape)};
  }
};

// The fast convolution: three nodes, each the adjoint pair of the others, so every derivative
// (create_graph included) is again one of them. A(x, W) is conv2d (cross-correlation):
//   A(x, W)[n, o, y, x0] = Σ_{c∈group(o), i, j} x[n, c, y*s - p + i*d, x0*s - p + j*d] W[o, c, i, j]
// It is linear in x and in W, so with <·,·> the sum of products:
//   <dy, A(x, W)> = <A*(dy, W), x> = <B(x, dy), W>
// where A* (backward input, = conv_transpose2d) and B (backward weight) are the kernels of
// backend/cpu/conv_gemm.cpp (float32 through conv_onednn.cpp where it applies). The readable
// reference (unfold + matmul + fold) is their oracle.

// y = A(x, W) + b      dx = A*(dy, W)   dW = B(x, dy)   db = Σ_{n,y,x} dy
struct ConvForward : BuiltinOp<ConvForward> {
  static constexpr const char* kName = "ConvolutionBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;  // conv2d lowered its arguments already
  static constexpr Onnx kOnnx =
      Onnx::none("export the Conv2d module (onnx::export_model(model, ...))");
  static constexpr Fusion kFusion = Fusion::None;
  kern::Conv2dGeom geom;
  SavedTensor x_, w_;
  Tensor forward(const Tensor& x, const Tensor& w, const Tensor& b, const kern::Conv2dGeom& g) {
    geom = g;
    if (w.requires_grad()) save(x_, x);
    if (x.requires_grad()) save(w_, w);
    return kern::conv2d_forward(x, w, b, g);
  }
  GradList backward(const GradList& g);
};

// dx = A*(dy, W) + b (conv_transpose2d)     d(dy) = A(g, W)   dW = B(g, dy)   db = Σ g
struct ConvBackwardInput : BuiltinOp<ConvBackwardInput> {
  static constexpr const char* kName = "ConvolutionBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx =
      Onnx::none("export the ConvTranspose2d module (onnx::export_model(model, ...))");
  static constexpr Fusion kFusion = Fusion::None;
  kern::Conv2dGeom geom;
  SavedTensor dy_, w_;
  Tensor forward(const Tensor& dy, const Tensor& w, const Tensor& b, const kern::Conv2dGeom& g) {
    geom = g;
    if (w.requires_grad()) save(dy_, dy);
    if (dy.requires_grad()) save(w_, w);
    return kern::conv2d_backward_input(dy, w, b, g);
  }
  GradList backward(const GradList& g);
};

// dW = B(x, dy)      dx = A*(dy, g)   d(dy) = A(x, g)
struct ConvBackwardWeight : BuiltinOp<ConvBackwardWeight> {
  static constexpr const char* kName = "ConvolutionBackwardBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::none("a backward-only op (a convolution's weight gradient)");
  static constexpr Fusion kFusion = Fusion::None;
  kern::Conv2dGeom geom;
  SavedTensor x_, dy_;
  Tensor forward(const Tensor& x, const Tensor& dy, const kern::Conv2dGeom& g) {
    geom = g;
    if (dy.requires_grad()) save(x_, x);
    if (x.requires_grad()) save(dy_, dy);
    return kern::conv2d_backward_weight(x, dy, g);
  }
  GradList backward(const GradList& g);
};

// db = Σ_{n,y,x} dy: one pass over dy's rows (CPU float32 / float64 / half, no create_graph)
// instead of sum(dy, {0, 2, 3}), which first copies dy into [O, N, oh, ow] order (the reference
// otherwise; for a half dy, widened whole first: 4% of a fallback bfloat16 CNN step).
inline Tensor conv_bias_grad(const Tensor& dy) {
  if (GradMode::is_enabled() || dy.is_cuda() || conv_reference() || dy.dim() != 4 ||
      (dy.dtype() != kFloat32 && dy.dtype() != kFloat64 && dy.dtype() != kBFloat16 && dy.dtype() != kFloat16))
    return sum(dy, {0, 2, 3});
  return kern::conv2d_backward_bias(dy);
}

inline GradList ConvForward::backward(const GradList& g) {
  const Tensor& dy = g[0];
  // A half dy without create_graph: the three gradients in one call, so the float32 fallback
  // widens dy once for them (kern::conv2d_backward; the same bits as the three calls below).
  if (!GradMode::is_enabled() && !dy.is_cuda() && !conv_reference() && dy.dim() == 4 &&
      (dy.dtype() == kBFloat16 || dy.dtype() == kFloat16)) {
    kern::Conv2dGrads r = kern::conv2d_backward(needs_input_grad(1) ? x_.unpack() : Tensor(),
                                                needs_input_grad(0) ? w_.unpack() : Tensor(), dy,
                                                geom, needs_input_grad(2));
    return {r.dx, r.dw, r.db};
  }
  return {needs_input_grad(0)
              ? record<ConvBackwardInput>(Site::unknown(), dy, w_.unpack(), Tensor(), geom)
              : Tensor(),
          needs_input_grad(1) ? record<ConvBackwardWeight>(Site::unknown(), x_.unpack(), dy, geom)
                              : Tensor(),
          needs_input_grad(2) ? conv_bias_grad(dy) : Tensor()};
}
inline GradList ConvBackwardInput::backward(const GradList& g) {
  const Tensor& gx = g[0];
  return {needs_input_grad(0)
              ? record<ConvForward>(Site::unknown(), gx, w_.unpack(), Tensor(), geom)
              : Tensor(),
          needs_input_grad(1) ? record<ConvBackwardWeight>(Site::unknown(), gx, dy_.unpack(), geom)
                              : Tensor(),
          needs_input_grad(2) ? sum(gx, {0, 2, 3}) : Tensor()};
}
inline GradList ConvBackwardWeight::backward(const GradList& g) {
  const Tensor& gw = g[0];
  return {needs_input_grad(0)
              ? record<ConvBackwardInput>(Site::unknown(), dy_.unpack(), gw, Tensor(), geom)
              : Tensor(),
          needs_input_grad(1)
              ? record<ConvForward>(Site::unknown(), x_.unpack(), gw, Tensor(), geom)
              : Tensor()};
}

// y = x Wᵀ + b         dx = dy W,  dW = dyᵀ x,  db = Σ_rows dy        (x [M, K], W [N, K], b [N])
// One node and one GEMM instead of transpose + reshape + bmm + broadcast add. Without
// create_graph the backward calls the kernels directly; with it, it is recorded with mm and sum.
template <class Tag>
struct LinearOp : BuiltinOp<LinearOp<Tag>> {
  static constexpr const char* kName = Tag::kName;
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::Lower;
  static constexpr Onnx kOnnx = Onnx::custom();
  static constexpr Fusion kFusion = Fusion::None;
  // x [M, K], W [N, K] (, b [N]): Gemm with B transposed.
  static std::string to_onnx(OnnxGraph& g, const OnnxCall& c) { return g.op("Gemm", c.in, {{"transB", int64_t{1}}}); }
  SavedTensor x_, w_;
  Tensor forward(const Tensor& x, const Tensor& w, const Tensor& b) {
    if (w.requires_grad()) this->save(x_, x);
    if (x.requires_grad()) this->save(w_, w);
    Tensor wt =
        make_view(w, {w.size(1), w.size(0)}, {w.stride(1), w.stride(0)}, w.storage_offset());
    Tensor y = kern::mm(x, wt);
    if (b.defined()) kern::add_bias_rows_(y, b);
    return y;
  }
  GradList backward(const GradList& g) {
    const Tensor& dy = g[0];
    const bool dx = this->needs_input_grad(0), dw = this->needs_input_grad(1),
               db = this->needs_input_grad(2);
    if (GradMode::is_enabled()) {  // create_graph
      return {dx ? mm(dy, w_.unpack()) : Tensor(), dw ? mm(dy.t(), x_.unpack()) : Tensor(),
              db ? sum(dy, {0}) : Tensor()};
    }
    Tensor dyt;
    if (dw)
      dyt = make_view(dy, {dy.size(1), dy.size(0)}, {dy.stride(1), dy.stride(0)},
                      dy.storage_offset());
    return {dx ? kern::mm(dy, w_.unpack()) : Tensor(), dw ? kern::mm(dyt, x_.unpack()) : Tensor(),
            db ? kern::sum_rows(dy) : Tensor()};
  }
};
struct AddmmTag {
  static constexpr const char* kName = "AddmmBackward0";
};
struct MmTag {
  static constexpr const char* kName = "MmBackward0";
};

// dx = y > t ? g : 0        dg = y > t ? dd : 0   (y only selects: no gradient flows to it)
struct ThresholdBackward : BuiltinOp<ThresholdBackward> {
  static constexpr const char* kName = "ThresholdBackwardBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::none("a backward-only op (relu's gradient)");
  static constexpr Fusion kFusion = Fusion::None;
  SavedTensor y_;
  double threshold = 0;
  Tensor forward(const Tensor& g, const Tensor& y, double t) {
    threshold = t;
    save(y_, y);
    return kern::threshold_backward(g, y, t);
  }
  GradList backward(const GradList& g) {
    return {record<ThresholdBackward>(Site::unknown(), g[0], y_.unpack().detach(), threshold),
            Tensor()};
  }
};

// loss = reduce_i w_i [(1 - ε)(lse_i - x[i, t_i]) + ε (lse_i - mean_c x[i, c])]
// dx_i = (softmax(x_i) - (1 - ε) onehot(t_i) - ε / C) * w_i * s_i
//   w_i = [t_i != ignore_index],  s = dy / n_valid (mean) | dy (sum) | dy_i (none)
// One node instead of log_softmax + gather + masks; the composite (cross_entropy_reference) is
// its oracle in the checks. With create_graph the backward is recorded (softmax recomputed).
struct CrossEntropyOp : BuiltinOp<CrossEntropyOp> {
  static constexpr const char* kName = "CrossEntropyLossBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::Float32;
  static constexpr Onnx kOnnx = Onnx::none("no ONNX mapping written yet (SoftmaxCrossEntropyLoss)");
  static constexpr Fusion kFusion = Fusion::None;
  SavedTensor x_, lse_, t_;
  Tensor inv_valid_;  // CUDA: 1 / valid on the device (valid is then unknown on the host)
  int64_t ignore = -100, valid = 0;
  double smoothing = 0;
  nn::functional::Reduction reduction = nn::functional::kMean;
  Tensor forward(const Tensor& x, const Tensor& t, int64_t ignore_index, double eps,
                 nn::functional::Reduction r) {
    ignore = ignore_index, smoothing = eps, reduction = r;
    kern::CrossEntropyForward f = kern::cross_entropy_forward(x, t, ignore_index, eps);
    valid = f.valid;
    inv_valid_ = f.inv_valid;
    save(x_, x);
    save(lse_, f.lse);
    save(t_, t);
    if (r == nn::functional::kNone) return f.loss;
    Tensor total = kern::reduce(kern::Reduce::Sum, f.loss, {0}, false);
    if (r == nn::functional::kSum) return total;
    kern::binary_(kern::Binary::Div, total,
                  f.valid_count.defined()
                      ? f.valid_count
                      : scalar_tensor(static_cast<double>(f.valid), dtype(total.dtype()).device(total.device())));
    return total;
  }
  // dy / valid for the mean (the device's 1 / valid when there is one), dy otherwise.
  Tensor mean_scaled(const Tensor& dy) const {
    if (reduction != nn::functional::kMean) return dy;
    if (inv_valid_.defined()) return dy * inv_valid_;
    const double factor = 1.0 / static_cast<double>(valid);
    return factor == 1.0 ? dy : dy * factor;
  }
  GradList backward(const GradList& g) {
    const Tensor& dy = g[0];
    if (!GradMode::is_enabled())
      return {kern::cross_entropy_backward(x_.unpack(), lse_.unpack(), t_.unpack(), ignore,
                                          smoothing, mean_scaled(dy)),
              Tensor()};
    Tensor x = x_.unpack(), t = t_.unpack();
    const int64_t C = x.size(1);
    Tensor keep = ne(t, ignore);
    Tensor onehot = eq(arange(C, TensorOptions().device(x.device())).unsqueeze(0), where(keep, t, 0).unsqueeze(1)).to(x.dtype());
    Tensor dist = onehot * (1.0 - smoothing) + smoothing / static_cast<double>(C);
    Tensor scale = reduction == nn::functional::kNone ? dy.unsqueeze(1) : mean_scaled(dy);
    return {(softmax(x, 1) - dist) * keep.to(x.dtype()).unsqueeze(1) * scale, Tensor()};
  }
};

/// Circular padding of the last `spatial` dims (F::pad's kCircular; ops/pool_pad.cpp):
/// y[i] = x[(i - left) mod n]; each amount at most n, padding = {left, right, ...} from the last dim.
Tensor circular_pad(const Tensor& x, const std::vector<int64_t>& padding, int64_t spatial, const Site& site);

}  // namespace gradlab::ops_detail

// Neural-network ops. Primitives with their own node (ops/internal/nn_ops.hpp): unfold, fold,
// max_pool2d (kernels in backend/cpu/conv.cpp), linear (one fused LinearOp: a GEMM plus the bias),
// threshold_backward and the fused cross-entropy. Composed from other ops (their backward comes
// from the pieces): conv2d, conv_transpose2d, dropout, feature_dropout, batch_norm, layer_norm.

#include "gradlab/ops/nn_ops.hpp"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "gradlab/ops/internal/nn_ops.hpp"

namespace gradlab {
using namespace ops_detail;

IntPair::IntPair(std::initializer_list<int64_t> l) : h(0), w(0) {
  GRADLAB_CHECK(l.size() == 1 || l.size() == 2, ShapeError, "IntPair",
                "expected one or two numbers", "{n} or {h, w}",
                std::to_string(l.size()) + " numbers");
  h = *l.begin();
  w = l.size() == 2 ? *(l.begin() + 1) : h;
}

std::string IntPair::str() const { return shape_str({h, w}); }

namespace ops_detail {

void check_window(const char* op, IntPair kernel, IntPair dilation, IntPair padding,
                  IntPair stride) {
  GRADLAB_CHECK(kernel.h > 0 && kernel.w > 0, ValueError, op, "kernel size must be positive",
                "sizes > 0", kernel.str());
  GRADLAB_CHECK(stride.h > 0 && stride.w > 0, ValueError, op, "stride must be positive",
                "strides > 0", stride.str());
  GRADLAB_CHECK(padding.h >= 0 && padding.w >= 0, ValueError, op, "padding must be non-negative",
                "padding >= 0", padding.str());
  GRADLAB_CHECK(dilation.h > 0 && dilation.w > 0, ValueError, op, "dilation must be positive",
                "dilation > 0", dilation.str());
}

kern::Window2d window(IntPair kernel, IntPair dilation, IntPair padding, IntPair stride) {
  return {kernel.h, kernel.w, stride.h, stride.w, padding.h, padding.w, dilation.h, dilation.w};
}

void check_output_size(const char* op, const Tensor& x, const kern::Window2d& w) {
  const int64_t oh = w.out_h(x.size(2)), ow = w.out_w(x.size(3));
  GRADLAB_CHECK(
      oh > 0 && ow > 0, ShapeError, op,
      "calculated output size (" + std::to_string(oh) + "x" + std::to_string(ow) + ") is too small",
      "an input at least as large as the (dilated) kernel after padding",
      "input " + shape_str(x.sizes()) + " with kernel [" + std::to_string(w.kh) + ", " +
          std::to_string(w.kw) + "], padding [" + std::to_string(w.ph) + ", " +
          std::to_string(w.pw) + "]",
      "use a smaller kernel, more padding, or a larger input");
}

}  // namespace ops_detail

namespace {

// x as [N, C, H, W] (an unbatched [C, H, W] gets a batch dim of 1).
Tensor batched_4d(const char* op, const Tensor& x, const Site& site) {
  check_defined(op, x);
  GRADLAB_CHECK(x.dim() == 3 || x.dim() == 4, ShapeError, op,
                "expected a 3-D (unbatched) or 4-D (batched) input", "[C, H, W] or [N, C, H, W]",
                shape_str(x.sizes()),
                "image batches are [N, C, H, W]; reshape flat rows with .view({-1, C, H, W})");
  GRADLAB_CHECK(x.is_floating_point(), DTypeError, op, "expected a floating point input",
                "float32 or float64", to_string(x.dtype()), "convert with .to(kFloat32)");
  return x.dim() == 4 ? x : x.unsqueeze(0, site);
}

Tensor unfold_4d(const Tensor& x, const kern::Window2d& w, const Site& site) {
  check_output_size("unfold", x, w);
  return record<Unfold>(site, x, w);
}

}  // namespace

Tensor linear(const Tensor& input_in, const Tensor& weight_in, const Tensor& bias_in, Site site) {
  check_defined("linear", input_in);
  check_defined("linear", weight_in, "weight");
  const Tensor input = autocast_lower(input_in, site), weight = autocast_lower(weight_in, site),
               bias = autocast_lower(bias_in, site);
  GRADLAB_CHECK(weight.dim() == 2, ShapeError, "linear", "weight must be 2-D",
                "[out_features, in_features]", shape_str(weight.sizes()));
  const int64_t N = weight.size(0), K = weight.size(1);
  GRADLAB_CHECK(input.dim() >= 1 && input.size(-1) == K, ShapeError, "linear",
                "input features do not match the weight",
                "input with last dimension " + std::to_string(K), shape_str(input.sizes()));
  if (bias.defined())
    GRADLAB_CHECK(bias.dim() == 1 && bias.size(0) == N, ShapeError, "linear",
                  "bias must have one value per output", "[" + std::to_string(N) + "]",
                  shape_str(bias.sizes()));
  check_same_device("linear", input, weight);
  ScalarType dt = promote_types(input.dtype(), weight.dtype());
  if (bias.defined()) dt = promote_types(dt, bias.dtype());
  GRADLAB_CHECK(is_floating_point(dt), DTypeError, "linear",
                "expected floating point input and weight", "a floating point dtype",
                to_string(input.dtype()) + " and " + to_string(weight.dtype()),
                "convert the input with .to(kFloat32)");
  const Tensor x = cast_to(input, dt, site), w = cast_to(weight, dt, site);
  const Tensor b = bias.defined() ? cast_to(bias, dt, site) : Tensor();
  auto run = [&](const Tensor& x2) {
    return b.defined() ? record<LinearOp<AddmmTag>>(site, x2, w, b)
                       : record<LinearOp<MmTag>>(site, x2, w, b);
  };
  if (x.dim() == 2) return run(x);
  if (x.dim() == 1) return run(x.unsqueeze(0, site)).squeeze(0, site);
  Shape out(x.sizes().begin(), x.sizes().end() - 1);
  out.push_back(N);
  return run(x.reshape({-1, K}, site)).reshape(out, site);
}

Tensor threshold_backward(const Tensor& grad, const Tensor& y, double threshold, Site site) {
  check_defined("threshold_backward", grad, "grad");
  check_defined("threshold_backward", y, "self");
  GRADLAB_CHECK(grad.sizes() == y.sizes(), ShapeError, "threshold_backward",
                "grad and self must have the same shape", shape_str(y.sizes()),
                shape_str(grad.sizes()));
  GRADLAB_CHECK(grad.is_floating_point(), DTypeError, "threshold_backward",
                "expected a floating point gradient", "float32 or float64",
                to_string(grad.dtype()));
  return record<ThresholdBackward>(site, grad, y.detach(), threshold);
}

Tensor unfold(const Tensor& input, IntPair kernel, IntPair dilation, IntPair padding,
              IntPair stride, Site site) {
  check_window("unfold", kernel, dilation, padding, stride);
  Tensor x = batched_4d("unfold", input, site);
  Tensor cols = unfold_4d(x, window(kernel, dilation, padding, stride), site);
  return input.dim() == 4 ? cols : cols.squeeze(0, site);
}

Tensor fold(const Tensor& input, IntPair output_size, IntPair kernel, IntPair dilation,
            IntPair padding, IntPair stride, Site site) {
  check_defined("fold", input);
  check_window("fold", kernel, dilation, padding, stride);
  GRADLAB_CHECK(input.dim() == 2 || input.dim() == 3, ShapeError, "fold",
                "expected a 2-D or 3-D input", "[C*kh*kw, L] or [N, C*kh*kw, L]",
                shape_str(input.sizes()));
  Tensor cols = input.dim() == 3 ? input : input.unsqueeze(0, site);
  const kern::Window2d w = window(kernel, dilation, padding, stride);
  const int64_t kk = kernel.h * kernel.w;
  const int64_t L = w.out_h(output_size.h) * w.out_w(output_size.w);
  GRADLAB_CHECK(
      cols.size(1) % kk == 0, ShapeError, "fold",
      "expected size of input's dimension 1 to be divisible by the product of kernel_size",
      "a multiple of " + std::to_string(kk), shape_str(input.sizes()));
  GRADLAB_CHECK(cols.size(2) == L, ShapeError, "fold",
                "the number of blocks does not match output_size, kernel_size, padding and stride",
                std::to_string(L) + " blocks in the last dim", shape_str(input.sizes()));
  GRADLAB_CHECK(cols.is_floating_point(), DTypeError, "fold", "expected a floating point input",
                "float32 or float64", to_string(cols.dtype()));
  Tensor x = record<Fold>(site, cols, cols.size(1) / kk, output_size.h, output_size.w, w);
  return input.dim() == 3 ? x : x.squeeze(0, site);
}

namespace {

std::atomic<bool>& conv_reference_flag() {
  static std::atomic<bool> on{[] {
    const char* v = std::getenv("GRADLAB_CONV_REFERENCE");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }()};
  return on;
}

// The fast path takes CPU float32 / float64 / bfloat16 / float16 tensors of one dtype (bias
// undefined or the same): bfloat16 on the CPU's bf16 instructions where it has them, the half
// types else through the float32 kernels (backend/kernels.cpp). CUDA and mixed dtypes (which
// matmul promotes) take the reference.
bool use_fast_conv(const Tensor& x, const Tensor& w, const Tensor& b) {
  if (conv_reference() || x.is_cuda() || w.is_cuda() || (b.defined() && b.is_cuda())) return false;
  if (x.dtype() != kFloat32 && x.dtype() != kFloat64 && x.dtype() != kBFloat16 && x.dtype() != kFloat16) return false;
  return w.dtype() == x.dtype() && (!b.defined() || b.dtype() == x.dtype());
}

}  // namespace

void set_conv_reference(bool on) { conv_reference_flag().store(on); }
bool conv_reference() { return conv_reference_flag().load(); }

// out[n, o, i, j] = b[o] + Σ_{c < Cg, a, b} x[n, g Cg + c, i s - p + a d, j s - p + b d] w[o, c, a, b]
// with g = o / Og (Cg = C / groups, Og = O / groups): per group, W_g [Og, Cg*kh*kw] @ cols_g.
Tensor conv2d(const Tensor& input_in, const Tensor& weight_in, const Tensor& bias_in, IntPair stride,
              IntPair padding, IntPair dilation, int64_t groups, Site site) {
  check_defined("conv2d", weight_in, "weight");
  // autocast: all three in the low type, so the bias add below does not promote back to float32
  const Tensor input = autocast_lower(input_in, site), weight = autocast_lower(weight_in, site),
               bias = autocast_lower(bias_in, site);
  Tensor x = batched_4d("conv2d", input, site);
  GRADLAB_CHECK(weight.dim() == 4, ShapeError, "conv2d", "weight must be 4-D",
                "[out_channels, in_channels / groups, kh, kw]", shape_str(weight.sizes()));
  GRADLAB_CHECK(groups > 0, ValueError, "conv2d", "groups must be positive", "groups > 0",
                std::to_string(groups));
  const int64_t O = weight.size(0), Cg = weight.size(1), C = Cg * groups;
  GRADLAB_CHECK(O % groups == 0, ShapeError, "conv2d",
                "out_channels (dim 0 of the weight) must be divisible by groups",
                "a multiple of " + std::to_string(groups),
                "weight " + shape_str(weight.sizes()) + " with groups " + std::to_string(groups),
                "each group has out_channels / groups filters");
  if (x.size(1) != C) {
    throw ShapeError(error_message(
        "conv2d",
        "input channels do not match the weight of size " + shape_str(weight.sizes()) +
            (groups > 1 ? " with groups " + std::to_string(groups) : std::string()),
        "input with " + std::to_string(C) + " channels (dim 1 of [N, C, H, W]" +
            (groups > 1 ? std::string(": weight.size(1) * groups)") : std::string(")")),
        shape_str(input.sizes()),
        groups > 1 ? "a grouped weight is [out_channels, in_channels / groups, kh, kw]"
                   : "check in_channels, and that images are [N, C, H, W], not [N, H, W, C]"));
  }
  if (bias.defined())
    GRADLAB_CHECK(bias.dim() == 1 && bias.size(0) == O, ShapeError, "conv2d",
                  "bias must have one value per output channel", "[" + std::to_string(O) + "]",
                  shape_str(bias.sizes()));
  const IntPair kernel(weight.size(2), weight.size(3));
  check_window("conv2d", kernel, dilation, padding, stride);
  const kern::Window2d w = window(kernel, dilation, padding, stride);
  check_output_size("conv2d", x, w);
  const int64_t N = x.size(0), oh = w.out_h(x.size(2)), ow = w.out_w(x.size(3));
  if (use_fast_conv(x, weight, bias)) {
    check_same_device("conv2d", x, weight);
    const kern::Conv2dGeom g{N, C, x.size(2), x.size(3), O, oh, ow, groups, w};
    Tensor out = record<ConvForward>(site, x, weight, bias, g);
    return input.dim() == 4 ? out : out.squeeze(0, site);
  }
  // The reference. out[n] = W [O, C*kh*kw] @ cols[n] [C*kh*kw, L]; with groups, cols' rows are
  // channel-major, so group g's rows are one block: [g, Og, K] @ [N, g, K, L] -> [N, g, Og, L].
  const int64_t K = Cg * kernel.h * kernel.w, L = oh * ow;
  Tensor cols = unfold_4d(x, w, site), out;
  if (groups == 1)
    out = matmul(weight.reshape({O, K}, site), cols, site);
  else
    out = matmul(weight.reshape({groups, O / groups, K}, site),
                 cols.reshape({N, groups, K, L}, site), site)
              .reshape({N, O, L}, site);
  if (bias.defined()) out = add(out, bias.reshape({O, 1}, site), site);
  out = out.reshape({N, O, oh, ow}, site);
  return input.dim() == 4 ? out : out.squeeze(0, site);
}

// conv2d over [N, C, 1, L] with the kernel [O, C / groups, 1, k].
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride,
              int64_t padding, int64_t dilation, int64_t groups, Site site) {
  check_defined("conv1d", input);
  check_defined("conv1d", weight, "weight");
  GRADLAB_CHECK(input.dim() == 2 || input.dim() == 3, ShapeError, "conv1d",
                "expected a 2-D (unbatched) or 3-D (batched) input", "[C, L] or [N, C, L]",
                shape_str(input.sizes()), "sequences are [N, C, L] (channels before length)");
  GRADLAB_CHECK(weight.dim() == 3, ShapeError, "conv1d", "weight must be 3-D",
                "[out_channels, in_channels / groups, k]", shape_str(weight.sizes()));
  // Checked here so that the messages name conv1d and the caller's shapes, not the 4-D ones.
  GRADLAB_CHECK(groups > 0, ValueError, "conv1d", "groups must be positive", "groups > 0",
                std::to_string(groups));
  GRADLAB_CHECK(weight.size(0) % groups == 0, ShapeError, "conv1d",
                "out_channels (dim 0 of the weight) must be divisible by groups",
                "a multiple of " + std::to_string(groups),
                "weight " + shape_str(weight.sizes()) + " with groups " + std::to_string(groups));
  const int64_t cdim = input.dim() - 2, C = weight.size(1) * groups;
  GRADLAB_CHECK(input.size(cdim) == C, ShapeError, "conv1d",
                "input channels do not match the weight of size " + shape_str(weight.sizes()) +
                    " with groups " + std::to_string(groups),
                "input with " + std::to_string(C) + " channels (dim " + std::to_string(cdim) +
                    " of " + (cdim == 1 ? "[N, C, L]" : "[C, L]") + ")",
                shape_str(input.sizes()),
                "the weight is [out_channels, in_channels / groups, k]; sequences are [N, C, L]");
  check_window("conv1d", IntPair(1, weight.size(2)), IntPair(1, dilation), IntPair(0, padding),
               IntPair(1, stride));
  const int64_t room = input.size(-1) + 2 * padding - dilation * (weight.size(2) - 1) - 1;
  GRADLAB_CHECK(room >= 0, ShapeError, "conv1d",
                "the input is shorter than the (dilated) kernel after padding",
                "length + 2 padding >= dilation (k - 1) + 1",
                "input " + shape_str(input.sizes()) + " with kernel " +
                    std::to_string(weight.size(2)) + ", padding " + std::to_string(padding) +
                    ", dilation " + std::to_string(dilation),
                "use a smaller kernel, more padding, or a longer input");
  Tensor y = conv2d(input.unsqueeze(cdim + 1, site), weight.unsqueeze(2, site), bias,
                    IntPair(1, stride), IntPair(0, padding), IntPair(1, dilation), groups, site);
  return y.squeeze(cdim + 1, site);
}

namespace {

// t cut along `dim` to [start, start + len), reading zeros past its end.
Tensor cut(const Tensor& t, int64_t dim, int64_t start, int64_t len, const Site& site) {
  Tensor r = t;
  if (start + len > t.size(dim)) {
    Shape zs = t.sizes();
    zs[dim] = start + len - t.size(dim);
    r = cat({t, zeros(zs, t.options())}, dim, site);
  }
  return r.narrow(dim, start, len, site);
}

}  // namespace

// out[n, g*Og + o, i*s - p + a*d, j*s - p + b*d] += x[n, g*Cg + c, i, j] * w[g*Cg + c, o, a, b]
// (every i, j, a, b whose target lies in the output): conv2d's adjoint. As matrices, per group,
// cols[n] = W_gᵀ [Og*kh*kw, Cg] @ x_g[n] [Cg, H*W], and out = fold(cols) — so d/dinput is
// conv2d(dout, weight) and d/dweight is x @ unfold(dout)ᵀ, both through matmul and fold's own
// backward.
Tensor conv_transpose2d(const Tensor& input_in, const Tensor& weight_in, const Tensor& bias_in,
                        IntPair stride, IntPair padding, IntPair output_padding, int64_t groups,
                        IntPair dilation, Site site) {
  const char* op = "conv_transpose2d";
  check_defined(op, weight_in, "weight");
  const Tensor input = autocast_lower(input_in, site), weight = autocast_lower(weight_in, site),
               bias = autocast_lower(bias_in, site);
  Tensor x = batched_4d(op, input, site);
  GRADLAB_CHECK(weight.dim() == 4, ShapeError, op, "weight must be 4-D",
                "[in_channels, out_channels / groups, kh, kw]", shape_str(weight.sizes()));
  GRADLAB_CHECK(groups > 0, ValueError, op, "groups must be positive", "groups > 0",
                std::to_string(groups));
  const int64_t C = weight.size(0), Og = weight.size(1), O = Og * groups;
  GRADLAB_CHECK(C % groups == 0, ShapeError, op,
                "in_channels (dim 0 of the weight) must be divisible by groups",
                "a multiple of " + std::to_string(groups),
                "weight " + shape_str(weight.sizes()) + " with groups " + std::to_string(groups));
  if (x.size(1) != C) {
    throw ShapeError(error_message(
        op, "input channels do not match the weight of size " + shape_str(weight.sizes()),
        "input with " + std::to_string(C) + " channels (dim 1 of [N, C, H, W])",
        shape_str(input.sizes()),
        "a transposed convolution's weight is [in_channels, out_channels / groups, kh, kw]: its "
        "dim 0 is the input's channels"));
  }
  if (bias.defined())
    GRADLAB_CHECK(bias.dim() == 1 && bias.size(0) == O, ShapeError, op,
                  "bias must have one value per output channel (weight.size(1) * groups)",
                  "[" + std::to_string(O) + "]", shape_str(bias.sizes()));
  const IntPair kernel(weight.size(2), weight.size(3));
  check_window(op, kernel, dilation, padding, stride);
  const IntPair& opad = output_padding;
  GRADLAB_CHECK(opad.h >= 0 && opad.w >= 0, ValueError, op, "output_padding must be non-negative",
                "output_padding >= 0", opad.str());
  GRADLAB_CHECK((opad.h < stride.h || opad.h < dilation.h) &&
                    (opad.w < stride.w || opad.w < dilation.w),
                ValueError, op, "output padding must be smaller than either stride or dilation",
                "output_padding < stride or < dilation, in each dim",
                "output_padding " + opad.str() + ", stride " + stride.str() + ", dilation " +
                    dilation.str(),
                "to pick one of several valid output sizes, use output_padding < stride");
  const int64_t N = x.size(0), H = x.size(2), W = x.size(3);
  // The whole canvas every block reaches, before padding is cut away.
  const int64_t ch = (H - 1) * stride.h + dilation.h * (kernel.h - 1) + 1,
                cw = (W - 1) * stride.w + dilation.w * (kernel.w - 1) + 1;
  const int64_t oh = ch - 2 * padding.h + opad.h, ow = cw - 2 * padding.w + opad.w;
  GRADLAB_CHECK(oh > 0 && ow > 0, ShapeError, op,
                "calculated output size (" + std::to_string(oh) + "x" + std::to_string(ow) +
                    ") is too small",
                "(H - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1 > 0",
                "input " + shape_str(x.sizes()) + " with kernel " + kernel.str() + ", stride " +
                    stride.str() + ", padding " + padding.str(),
                "use less padding or a larger input");
  if (use_fast_conv(x, weight, bias)) {
    check_same_device(op, x, weight);
    // conv_transpose2d is conv2d's backward input: that conv maps the output [N, O, oh, ow] to
    // this input [N, C, H, W] (its window count H, W is given: output_padding may exceed it).
    const kern::Conv2dGeom g{N, O, oh, ow, C, H, W, groups, window(kernel, dilation, padding, stride)};
    Tensor out = record<ConvBackwardInput>(site, x, weight, bias, g);
    return input.dim() == 4 ? out : out.squeeze(0, site);
  }
  // The reference.
  const int64_t kk = kernel.h * kernel.w, Cg = C / groups, L = H * W;
  Tensor x3 = x.reshape({N, C, L}, site), cols;
  if (groups == 1) {
    cols = matmul(weight.reshape({C, O * kk}, site).transpose(0, 1, site), x3, site);
  } else {
    // [g, Og*kk, Cg] @ [N, g, Cg, L] -> [N, g, Og*kk, L]: output channel g*Og + o, as PyTorch.
    Tensor wg = weight.reshape({groups, Cg, Og * kk}, site).transpose(1, 2, site);
    cols = matmul(wg, x3.reshape({N, groups, Cg, L}, site), site).reshape({N, O * kk, L}, site);
  }
  Tensor out;
  if (opad.h < stride.h && opad.w < stride.w) {
    // fold onto the padded output directly: exactly H x W blocks fit it.
    out = record<Fold>(site, cols, O, oh, ow, window(kernel, dilation, padding, stride));
  } else {
    // output_padding >= stride (allowed below the dilation): fold onto the whole canvas, then cut
    // [padding, padding + oh) from it, reading zeros past its end.
    Tensor canvas = record<Fold>(site, cols, O, ch, cw, window(kernel, dilation, 0, stride));
    out = cut(cut(canvas, 2, padding.h, oh, site), 3, padding.w, ow, site);
  }
  if (bias.defined()) out = add(out, bias.reshape({1, O, 1, 1}, site), site);
  return input.dim() == 4 ? out : out.squeeze(0, site);
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntPair kernel,
                                                   OptionalIntPair stride, IntPair padding,
                                                   IntPair dilation, Site site) {
  const IntPair st = stride.value.value_or(kernel);
  check_window("max_pool2d", kernel, dilation, padding, st);
  GRADLAB_CHECK(padding.h * 2 <= kernel.h && padding.w * 2 <= kernel.w, ValueError, "max_pool2d",
                "pad should be at most half of the kernel size", "padding <= kernel_size / 2",
                "padding " + padding.str() + " with kernel " + kernel.str());
  Tensor x = batched_4d("max_pool2d", input, site);
  const kern::Window2d w = window(kernel, dilation, padding, st);
  check_output_size("max_pool2d", x, w);
  auto r = record<MaxPool2d>(site, x, w);
  if (input.dim() == 3) return {r[0].squeeze(0, site), r[1].squeeze(0)};
  return {r[0], r[1]};
}

Tensor max_pool2d(const Tensor& input, IntPair kernel, OptionalIntPair stride,
                  IntPair padding, IntPair dilation, Site site) {
  return std::get<0>(max_pool2d_with_indices(input, kernel, stride, padding, dilation, site));
}

Tensor dropout(const Tensor& input, double p, bool train, Generator* generator, Site site) {
  check_defined("dropout", input);
  GRADLAB_CHECK(p >= 0 && p <= 1, ValueError, "dropout",
                "dropout probability has to be between 0 and 1", "0 <= p <= 1", std::to_string(p));
  if (!train || p == 0) return input;
  GRADLAB_CHECK(input.is_floating_point(), DTypeError, "dropout", "expected a floating point input",
                "float32 or float64", to_string(input.dtype()));
  if (p == 1) return mul(input, zeros_like(input), site);
  // y = x * mask / (1 - p), mask ~ Bernoulli(1 - p); the mask is a constant for autograd.
  // NOTE: half inputs draw their uniforms in float32: rounded to float16 a draw just below p
  // could round up to p, and the mask would differ from the float32 run's for the same seed.
  const bool half = input.dtype() == kFloat16 || input.dtype() == kBFloat16;
  Tensor keep = ge(rand(input.sizes(), half ? input.options().dtype(kFloat32) : input.options(), generator), p);
  Tensor scale = mul(keep.to(input.dtype()), 1.0 / (1.0 - p));
  return mul(input, scale, site);
}

Tensor feature_dropout(const Tensor& input, double p, bool train, Generator* generator,
                       Site site) {
  const char* op = "feature_dropout";
  check_defined(op, input);
  GRADLAB_CHECK(p >= 0 && p <= 1, ValueError, op, "dropout probability has to be between 0 and 1",
                "0 <= p <= 1", std::to_string(p));
  GRADLAB_CHECK(input.dim() >= 2, ShapeError, op,
                "feature dropout requires at least 2 dimensions in the input",
                "[N, C, *] (a batch and a channel dim)", shape_str(input.sizes()),
                "for elementwise dropout use dropout");
  if (!train || p == 0) return input;
  GRADLAB_CHECK(input.is_floating_point(), DTypeError, op, "expected a floating point input",
                "float32 or float64", to_string(input.dtype()));
  if (p == 1) return mul(input, zeros_like(input), site);
  // y = x * mask[n, c] / (1 - p), one draw per (sample, channel), the same over the channel's
  // elements; the mask is a constant for autograd. Half inputs draw in float32, as dropout.
  Shape ms(static_cast<size_t>(input.dim()), 1);
  ms[0] = input.size(0);
  ms[1] = input.size(1);
  const bool half = input.dtype() == kFloat16 || input.dtype() == kBFloat16;
  Tensor keep = ge(rand(ms, half ? input.options().dtype(kFloat32) : input.options(), generator), p);
  Tensor scale = mul(keep.to(input.dtype()), 1.0 / (1.0 - p));
  return mul(input, scale, site);
}

Tensor batch_norm(const Tensor& input_in, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps, Site site) {
  check_defined("batch_norm", input_in);
  // autocast: statistics and normalization in float32, the result in the input's dtype (as
  // PyTorch's batch_norm, which is on neither autocast list and keeps float32 statistics).
  const Tensor input = autocast_float32(input_in, site);
  if (input.dtype() != input_in.dtype())
    return cast_to(batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps, site),
                   input_in.dtype(), site);
  GRADLAB_CHECK(input.dim() >= 2, ShapeError, "batch_norm",
                "expected an input with a batch and a channel dim",
                "[N, C], [N, C, L] or [N, C, H, W]", shape_str(input.sizes()));
  GRADLAB_CHECK(input.is_floating_point(), DTypeError, "batch_norm",
                "expected a floating point input", "float32 or float64", to_string(input.dtype()));
  GRADLAB_CHECK(eps > 0, ValueError, "batch_norm", "eps must be positive", "eps > 0",
                std::to_string(eps));
  const int64_t C = input.size(1);
  auto check_c = [&](const Tensor& t, const char* name) {
    if (!t.defined()) return;
    GRADLAB_CHECK(t.dim() == 1 && t.size(0) == C, ShapeError, "batch_norm",
                  std::string(name) + " must have one value per channel (dim 1 of the input " +
                      shape_str(input.sizes()) + ")",
                  "[" + std::to_string(C) + "]", shape_str(t.sizes()));
  };
  check_c(running_mean, "running_mean");
  check_c(running_var, "running_var");
  check_c(weight, "weight");
  check_c(bias, "bias");
  Dims red{0};
  Shape bshape(input.dim(), 1);
  bshape[1] = C;
  for (int64_t d = 2; d < input.dim(); ++d) red.push_back(d);
  Tensor y;
  if (training) {
    const int64_t n = input.numel() / std::max<int64_t>(C, 1);
    GRADLAB_CHECK(
        n > 1, ValueError, "batch_norm", "expected more than 1 value per channel when training",
        "a batch with at least 2 values per channel", "input size " + shape_str(input.sizes()),
        "use a batch of 2 or more, or call model.eval() for single-sample inference");
    // x̂ = (x - μ) / √(σ² + ε), μ and σ² (biased) over the batch (and spatial) dims.
    Tensor mu = mean(input, red, /*keepdim=*/true, site);
    Tensor xc = sub(input, mu, site);
    Tensor var = mean(mul(xc, xc, site), red, /*keepdim=*/true, site);
    y = div(xc, sqrt(add(var, eps, site), site), site);
    if (running_mean.defined() || running_var.defined()) {
      NoGradGuard no_grad;
      // running = (1 - m) running + m stat; the variance saved is the unbiased one (n / (n - 1)).
      if (running_mean.defined()) {
        Tensor rm = running_mean;
        rm.mul_(1.0 - momentum).add_(mu.detach().reshape({C}).to(rm.dtype()), momentum);
      }
      if (running_var.defined()) {
        Tensor rv = running_var;
        Tensor unbiased =
            var.detach().reshape({C}) * (static_cast<double>(n) / static_cast<double>(n - 1));
        rv.mul_(1.0 - momentum).add_(unbiased.to(rv.dtype()), momentum);
      }
    }
  } else {
    GRADLAB_CHECK(running_mean.defined() && running_var.defined(), ValueError, "batch_norm",
                  "running_mean and running_var are needed when not training", "both defined",
                  "undefined", "pass training=true to normalize with batch statistics");
    Tensor rm = running_mean.reshape(bshape, site), rv = running_var.reshape(bshape, site);
    y = div(sub(input, rm, site), sqrt(add(rv, eps, site), site), site);
  }
  if (weight.defined()) y = mul(y, weight.reshape(bshape, site), site);
  if (bias.defined()) y = add(y, bias.reshape(bshape, site), site);
  return y;
}

Tensor layer_norm(const Tensor& input_in, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps, Site site) {
  check_defined("layer_norm", input_in);
  const Tensor input = autocast_float32(input_in, site);  // autocast: float32 list
  GRADLAB_CHECK(input.is_floating_point(), DTypeError, "layer_norm",
                "expected a floating point input", "float32 or float64", to_string(input.dtype()));
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  bool ok = k >= 1 && input.dim() >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = input.size(input.dim() - k + i) == normalized_shape[i];
  if (!ok) {
    std::string want = "[*";
    for (auto s : normalized_shape) want += ", " + std::to_string(s);
    throw ShapeError(error_message(
        "layer_norm",
        "the last dims of the input must equal normalized_shape=" + shape_str(normalized_shape),
        "input with shape " + want + "]", shape_str(input.sizes())));
  }
  for (const Tensor* t : {&weight, &bias})
    if (t->defined())
      GRADLAB_CHECK(t->sizes() == normalized_shape, ShapeError, "layer_norm",
                    "weight and bias must have normalized_shape", shape_str(normalized_shape),
                    shape_str(t->sizes()));
  Dims dims;
  for (int64_t i = input.dim() - k; i < input.dim(); ++i) dims.push_back(i);
  // y = (x - μ) / √(σ² + ε) * weight + bias, μ and σ² (biased) over the last k dims.
  Tensor xc = sub(input, mean(input, dims, /*keepdim=*/true, site), site);
  Tensor var = mean(mul(xc, xc, site), dims, /*keepdim=*/true, site);
  Tensor y = div(xc, sqrt(add(var, eps, site), site), site);
  if (weight.defined()) y = mul(y, weight, site);
  if (bias.defined()) y = add(y, bias, site);
  return y;
}

Tensor group_norm(const Tensor& input_in, int64_t num_groups, const Tensor& weight,
                  const Tensor& bias, double eps, Site site) {
  const char* op = "group_norm";
  check_defined(op, input_in);
  const Tensor input = autocast_float32(input_in, site);  // autocast: float32 list
  GRADLAB_CHECK(input.is_floating_point(), DTypeError, op, "expected a floating point input",
                "float32 or float64", to_string(input.dtype()));
  GRADLAB_CHECK(input.dim() >= 2, ShapeError, op,
                "expected an input with a batch and a channel dim", "[N, C, *]",
                shape_str(input.sizes()), "an unbatched sample needs .unsqueeze(0)");
  const int64_t N = input.size(0), C = input.size(1);
  GRADLAB_CHECK(num_groups > 0 && C % num_groups == 0, ValueError, op,
                "expected the number of channels to be divisible by num_groups",
                "num_groups > 0 dividing C = " + std::to_string(C), std::to_string(num_groups),
                "pick num_groups among the divisors of the channel count");
  for (const Tensor* t : {&weight, &bias})
    if (t->defined())
      GRADLAB_CHECK(t->dim() == 1 && t->size(0) == C, ShapeError, op,
                    "weight and bias must have one value per channel",
                    "[" + std::to_string(C) + "]", shape_str(t->sizes()));
  // x [N, C, *] viewed as [N, G, C/G * prod(*)]; each group normalized over its last dim
  // (biased variance), then y = x̂ * weight[c] + bias[c] per channel.
  Tensor g = input.reshape({N, num_groups, -1}, site);
  Tensor xc = sub(g, mean(g, {2}, /*keepdim=*/true, site), site);
  Tensor var = mean(mul(xc, xc, site), {2}, /*keepdim=*/true, site);
  Tensor y = div(xc, sqrt(add(var, eps, site), site), site).reshape(input.sizes(), site);
  Shape cshape(static_cast<size_t>(input.dim()), 1);
  cshape[1] = C;
  if (weight.defined()) y = mul(y, weight.reshape(cshape, site), site);
  if (bias.defined()) y = add(y, bias.reshape(cshape, site), site);
  return y;
}

Tensor cross_entropy_loss_fused(const Tensor& input, const Tensor& target, int64_t reduction,
                                int64_t ignore_index, double label_smoothing, Site site) {
  const char* op = "cross_entropy";
  const nn::functional::Reduction r = to_reduction(op, reduction);
  check_defined(op, input);
  check_defined(op, target, "target");
  GRADLAB_CHECK(
      target.dtype() == kInt64, DTypeError, op, "target must hold class indices (int64)", "int64",
      to_string(target.dtype()),
      "class indices come from labels .to(kInt64); for one-hot or probability targets use "
      "-(target * log_softmax(input, 1)).sum(1).mean()");
  GRADLAB_CHECK(input.dim() == 2, ShapeError, op, "input must be logits [N, C]", "a 2-D input",
                shape_str(input.sizes()), "flatten extra dims first, e.g. logits.reshape({-1, C})");
  GRADLAB_CHECK(target.dim() == 1, ShapeError, op, "target must be 1-D [N]",
                "[" + std::to_string(input.size(0)) + "]", shape_str(target.sizes()),
                "labels of shape [N, 1] need .squeeze(1); one-hot labels need argmax(1)");
  GRADLAB_CHECK(target.size(0) == input.size(0), ShapeError, op,
                "expected input batch_size (" + std::to_string(input.size(0)) +
                    ") to match target batch_size (" + std::to_string(target.size(0)) + ")",
                std::to_string(input.size(0)) + " targets", std::to_string(target.size(0)));
  GRADLAB_CHECK(label_smoothing >= 0 && label_smoothing <= 1, ValueError, op,
                "label_smoothing must be in [0, 1]", "0 <= label_smoothing <= 1",
                std::to_string(label_smoothing));
  check_same_device(op, input, target);
  return record<CrossEntropyOp>(site, cast_to(input, float_dtype(input), site), target,
                                ignore_index, label_smoothing, r);
}

}  // namespace gradlab

// The layers of gradlab::nn: Sequential, Linear, Flatten, activations, Dropout, Dropout2d,
// Dropout3d, BatchNorm1d/2d/3d, LayerNorm, Embedding, Conv1d, Conv2d, ConvTranspose2d, MaxPool2d, and
// pooling.hpp's AvgPool2d ... GroupNorm. Forward passes forward to ops (ops.hpp, nn_ops.hpp).

#include <cmath>
#include <numbers>
#include <ostream>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/nn/activation.hpp"
#include "gradlab/nn/conv.hpp"
#include "gradlab/nn/dropout.hpp"
#include "gradlab/nn/embedding.hpp"
#include "gradlab/nn/functional.hpp"
#include "gradlab/nn/init.hpp"
#include "gradlab/nn/linear.hpp"
#include "gradlab/nn/normalization.hpp"
#include "gradlab/nn/pooling.hpp"
#include "gradlab/nn/sequential.hpp"
#include "gradlab/ops/nn_ops.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::nn {

namespace {

const char* tf(bool b) { return b ? "true" : "false"; }

void check_input(const char* layer, const Tensor& x) {
  GRADLAB_CHECK(x.defined(), ValueError, layer, "the input is undefined", "a defined tensor",
                "Tensor()");
}

void check_positive(const char* layer, const char* what, int64_t v) {
  GRADLAB_CHECK(v > 0, ValueError, layer, std::string(what) + " must be positive",
                std::string(what) + " > 0", std::to_string(v));
}

// PyTorch's default for Linear / Conv: W ~ kaiming_uniform(a=√5) = U(-1/√fan_in, 1/√fan_in),
// b ~ U(-1/√fan_in, 1/√fan_in).
void default_init(Tensor& weight, Tensor& bias) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

}  // namespace

// ---- Sequential ------------------------------------------------------------------------------

SequentialImpl::SequentialImpl(std::initializer_list<NamedModule> named) {
  for (const NamedModule& m : named) add(m);
}

void SequentialImpl::add(NamedModule m) {
  register_module(m.name, m.module);
  items_.emplace_back(m.module, std::move(m.forward));
}

Tensor SequentialImpl::forward(const Tensor& input) {
  Tensor x = input;
  for (const AnyModule& m : items_) x = m.forward(x);
  return x;
}

std::shared_ptr<Module> SequentialImpl::ptr(size_t index) const {
  GRADLAB_CHECK(index < size(), ShapeError, "Sequential",
                "index " + std::to_string(index) + " is out of range",
                "an index < " + std::to_string(size()), std::to_string(index));
  return named_children()[index].second;
}

// ---- Linear, Flatten -------------------------------------------------------------------------

LinearImpl::LinearImpl(const LinearOptions& o) : options(o) {
  check_positive("Linear", "in_features", o.in_features());
  check_positive("Linear", "out_features", o.out_features());
  weight = register_parameter("weight", empty({o.out_features(), o.in_features()}));
  if (o.bias()) bias = register_parameter("bias", empty({o.out_features()}));
  reset_parameters();
}

void LinearImpl::reset_parameters() { default_init(weight, bias); }

Tensor LinearImpl::forward(const Tensor& input) {
  check_input("Linear", input);
  if (input.dim() == 0 || input.size(-1) != options.in_features()) {
    throw ShapeError(
        error_message("Linear", "the input's last dimension must equal in_features",
                      "input with last dimension " + std::to_string(options.in_features()),
                      shape_str(input.sizes()),
                      input.dim() >= 2 && input.numel() % options.in_features() == 0
                          ? "flatten the features first, e.g. x.flatten(1) or nn::Flatten()"
                          : "check in_features against the previous layer's output size"));
  }
  return linear(input, weight, bias);
}

void LinearImpl::pretty_print(std::ostream& os) const {
  os << "Linear(in_features=" << options.in_features()
     << ", out_features=" << options.out_features() << ", bias=" << tf(options.bias()) << ")";
}

Tensor FlattenImpl::forward(const Tensor& input) {
  check_input("Flatten", input);
  return input.flatten(options.start_dim(), options.end_dim());
}

void FlattenImpl::pretty_print(std::ostream& os) const {
  os << "Flatten(start_dim=" << options.start_dim() << ", end_dim=" << options.end_dim() << ")";
}

// ---- activations (ReLU here; the others in nn/activation.cpp) ---------------------------------

Tensor ReLUImpl::forward(const Tensor& x) { return options.inplace() ? relu_(x) : relu(x); }
void ReLUImpl::pretty_print(std::ostream& os) const {
  os << "ReLU(" << (options.inplace() ? "inplace=true" : "") << ")";
}

Tensor LeakyReLUImpl::forward(const Tensor& x) { return functional::leaky_relu(x, options); }
void LeakyReLUImpl::pretty_print(std::ostream& os) const {
  os << "LeakyReLU(negative_slope=" << options.negative_slope()
     << (options.inplace() ? ", inplace=true" : "") << ")";
}

Tensor SoftplusImpl::forward(const Tensor& x) { return softplus(x, options.beta(), options.threshold()); }
void SoftplusImpl::pretty_print(std::ostream& os) const {
  os << "Softplus(beta=" << options.beta() << ", threshold=" << options.threshold() << ")";
}

GELUImpl::GELUImpl(const GELUOptions& o) : options(o) {
  GRADLAB_CHECK(o.approximate() == "none" || o.approximate() == "tanh", ValueError, "GELU",
                "unknown approximation", "\"none\" or \"tanh\"", "\"" + o.approximate() + "\"");
}
Tensor GELUImpl::forward(const Tensor& x) { return functional::gelu(x, options); }
void GELUImpl::pretty_print(std::ostream& os) const {
  os << "GELU(approximate='" << options.approximate() << "')";
}

Tensor TanhImpl::forward(const Tensor& x) { return tanh(x); }
Tensor SigmoidImpl::forward(const Tensor& x) { return sigmoid(x); }

Tensor SoftmaxImpl::forward(const Tensor& x) { return softmax(x, options.dim()); }
void SoftmaxImpl::pretty_print(std::ostream& os) const {
  os << "Softmax(dim=" << options.dim() << ")";
}

Tensor LogSoftmaxImpl::forward(const Tensor& x) { return log_softmax(x, options.dim()); }
void LogSoftmaxImpl::pretty_print(std::ostream& os) const {
  os << "LogSoftmax(dim=" << options.dim() << ")";
}

// ---- Dropout ---------------------------------------------------------------------------------

DropoutImpl::DropoutImpl(const DropoutOptions& o) : options(o) {
  GRADLAB_CHECK(o.p() >= 0 && o.p() <= 1, ValueError, "Dropout",
                "dropout probability has to be between 0 and 1", "0 <= p <= 1",
                std::to_string(o.p()));
}
Tensor DropoutImpl::forward(const Tensor& x) {
  check_input("Dropout", x);
  return dropout(x, options.p(), is_training(), options.generator());
}
void DropoutImpl::pretty_print(std::ostream& os) const { os << "Dropout(p=" << options.p() << ")"; }

Dropout2dImpl::Dropout2dImpl(const Dropout2dOptions& o) : options(o) {
  GRADLAB_CHECK(o.p() >= 0 && o.p() <= 1, ValueError, "Dropout2d",
                "dropout probability has to be between 0 and 1", "0 <= p <= 1",
                std::to_string(o.p()));
}
Tensor Dropout2dImpl::forward(const Tensor& x) {
  check_input("Dropout2d", x);
  return functional::dropout2d(
      x, functional::Dropout2dFuncOptions().p(options.p()).training(is_training()).generator(
             options.generator()));
}
void Dropout2dImpl::pretty_print(std::ostream& os) const {
  os << "Dropout2d(p=" << options.p() << ")";
}

Dropout3dImpl::Dropout3dImpl(const Dropout3dOptions& o) : options(o) {
  GRADLAB_CHECK(o.p() >= 0 && o.p() <= 1, ValueError, "Dropout3d",
                "dropout probability has to be between 0 and 1", "0 <= p <= 1",
                std::to_string(o.p()));
}
Tensor Dropout3dImpl::forward(const Tensor& x) {
  check_input("Dropout3d", x);
  return functional::dropout3d(
      x, functional::Dropout3dFuncOptions().p(options.p()).training(is_training()).generator(
             options.generator()));
}
void Dropout3dImpl::pretty_print(std::ostream& os) const {
  os << "Dropout3d(p=" << options.p() << ")";
}

// ---- BatchNorm1d -----------------------------------------------------------------------------

BatchNormImplBase::BatchNormImplBase(const BatchNormOptions& o, const char* name,
                                     int64_t dim_lo, int64_t dim_hi, const char* layout)
    : options(o), name_(name), dim_lo_(dim_lo), dim_hi_(dim_hi), layout_(layout) {
  check_positive(name, "num_features", o.num_features());
  const int64_t C = o.num_features();
  if (o.affine()) {
    weight = register_parameter("weight", ones({C}));
    bias = register_parameter("bias", zeros({C}));
  }
  if (o.track_running_stats()) {
    running_mean = register_buffer("running_mean", zeros({C}));
    running_var = register_buffer("running_var", ones({C}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, dtype(kInt64)));
  }
}

void BatchNormImplBase::reset_running_stats() {
  if (!options.track_running_stats()) return;
  NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1.0);
  num_batches_tracked.zero_();
}

void BatchNormImplBase::reset_parameters() {
  reset_running_stats();
  if (options.affine()) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

Tensor BatchNormImplBase::forward(const Tensor& input) {
  check_input(name_, input);
  GRADLAB_CHECK(input.dim() >= dim_lo_ && input.dim() <= dim_hi_, ShapeError, name_,
                dim_lo_ == dim_hi_ ? "expected a " + std::to_string(dim_lo_) + "-D input"
                                   : "expected a " + std::to_string(dim_lo_) + "-D or " +
                                         std::to_string(dim_hi_) + "-D input",
                std::string(layout_) + " with C = " + std::to_string(options.num_features()),
                shape_str(input.sizes()));
  GRADLAB_CHECK(input.size(1) == options.num_features(), ShapeError, name_,
                "the input's dim 1 must equal num_features",
                "input with " + std::to_string(options.num_features()) + " features in dim 1",
                shape_str(input.sizes()));
  double factor = 0.0;
  if (is_training() && options.track_running_stats()) {
    {
      NoGradGuard no_grad;
      num_batches_tracked.add_(1);
    }
    // momentum nullopt: cumulative moving average (factor 1/n after n batches).
    factor = options.momentum() ? *options.momentum()
                                : 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
  }
  const bool use_batch_stats = is_training() || !options.track_running_stats();
  const bool pass_running = !is_training() || options.track_running_stats();
  return batch_norm(input, pass_running ? running_mean : Tensor(),
                    pass_running ? running_var : Tensor(), weight, bias, use_batch_stats, factor,
                    options.eps());
}

void BatchNormImplBase::pretty_print(std::ostream& os) const {
  os << name_ << "(" << options.num_features() << ", eps=" << options.eps() << ", momentum=";
  if (options.momentum())
    os << *options.momentum();
  else
    os << "None";
  os << ", affine=" << tf(options.affine())
     << ", track_running_stats=" << tf(options.track_running_stats()) << ")";
}

// ---- Unflatten, ZeroPad2d ---------------------------------------------------------------------

// [..., n, ...] -> [..., s0, s1, ..., ...] with Π s = n (one s may be -1)
Tensor UnflattenImpl::forward(const Tensor& input) {
  check_input("Unflatten", input);
  const int64_t d = wrap_dim(options.dim(), input.dim(), "Unflatten");
  Shape s;
  for (int64_t k = 0; k < input.dim(); ++k) {
    if (k != d) {
      s.push_back(input.size(k));
      continue;
    }
    int64_t known = 1, unknown = 0;
    for (int64_t v : options.sizes()) {
      if (v == -1) ++unknown;
      else known *= v;
    }
    GRADLAB_CHECK(unknown <= 1 && (unknown ? known > 0 && input.size(d) % known == 0 : known == input.size(d)),
                  ShapeError, "Unflatten", "the sizes must multiply to the size of dim " + std::to_string(d),
                  "sizes whose product is " + std::to_string(input.size(d)),
                  shape_str(Shape(options.sizes())) + " for input " + shape_str(input.sizes()));
    for (int64_t v : options.sizes()) s.push_back(v == -1 ? input.size(d) / known : v);
  }
  return input.reshape(s);
}
void UnflattenImpl::pretty_print(std::ostream& os) const {
  os << "Unflatten(dim=" << options.dim() << ", unflattened_size=" << shape_str(Shape(options.sizes())) << ")";
}

ZeroPad2dImpl::ZeroPad2dImpl(const ZeroPad2dOptions& o) : options(o) {
  GRADLAB_CHECK(o.padding().size() == 4, ValueError, "ZeroPad2d", "padding must be one number or four",
                "{left, right, top, bottom}", std::to_string(o.padding().size()) + " values");
}
Tensor ZeroPad2dImpl::forward(const Tensor& input) {
  check_input("ZeroPad2d", input);
  return functional::pad(input, functional::PadFuncOptions(options.padding()));
}
void ZeroPad2dImpl::pretty_print(std::ostream& os) const {
  const auto& p = options.padding();
  os << "ZeroPad2d(padding=[" << p[0] << ", " << p[1] << ", " << p[2] << ", " << p[3] << "])";
}

// ---- LayerNorm -------------------------------------------------------------------------------

LayerNormImpl::LayerNormImpl(const LayerNormOptions& o) : options(o) {
  GRADLAB_CHECK(!o.normalized_shape().empty(), ValueError, "LayerNorm",
                "normalized_shape must not be empty", "e.g. {features}", "[]");
  for (auto s : o.normalized_shape()) check_positive("LayerNorm", "normalized_shape sizes", s);
  if (o.elementwise_affine()) {
    weight = register_parameter("weight", ones(o.normalized_shape()));
    bias = register_parameter("bias", zeros(o.normalized_shape()));
  }
}

void LayerNormImpl::reset_parameters() {
  if (!options.elementwise_affine()) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor LayerNormImpl::forward(const Tensor& input) {
  check_input("LayerNorm", input);
  return layer_norm(input, options.normalized_shape(), weight, bias, options.eps());
}

void LayerNormImpl::pretty_print(std::ostream& os) const {
  os << "LayerNorm(" << shape_str(options.normalized_shape()) << ", eps=" << options.eps()
     << ", elementwise_affine=" << tf(options.elementwise_affine()) << ")";
}

// ---- Embedding -------------------------------------------------------------------------------

EmbeddingImpl::EmbeddingImpl(const EmbeddingOptions& o) : options(o) {
  check_positive("Embedding", "num_embeddings", o.num_embeddings());
  check_positive("Embedding", "embedding_dim", o.embedding_dim());
  if (o.padding_idx()) {
    int64_t& p = *options.padding_idx();
    GRADLAB_CHECK(p >= -o.num_embeddings() && p < o.num_embeddings(), ValueError, "Embedding",
                  "padding_idx must be within num_embeddings",
                  "an index in [" + std::to_string(-o.num_embeddings()) + ", " +
                      std::to_string(o.num_embeddings()) + ")",
                  std::to_string(p));
    if (p < 0) p += o.num_embeddings();
  }
  weight = register_parameter("weight", empty({o.num_embeddings(), o.embedding_dim()}));
  reset_parameters();
}

void EmbeddingImpl::reset_parameters() {
  init::normal_(weight);
  if (options.padding_idx()) {
    NoGradGuard no_grad;
    weight.select(0, *options.padding_idx()).zero_();
  }
}

Tensor EmbeddingImpl::forward(const Tensor& indices) {
  check_input("Embedding", indices);
  GRADLAB_CHECK(indices.dtype() == kInt64, DTypeError, "Embedding", "indices must be int64",
                "int64", to_string(indices.dtype()), "convert with .to(kInt64)");
  Tensor y = embedding(weight, indices);
  if (!options.padding_idx()) return y;
  // The padding row gets no gradient: multiply its lookups by 0 (its value is 0 anyway).
  Tensor keep = ne(indices, *options.padding_idx()).to(y.dtype()).unsqueeze(-1);
  return y * keep;
}

void EmbeddingImpl::pretty_print(std::ostream& os) const {
  os << "Embedding(" << options.num_embeddings() << ", " << options.embedding_dim();
  if (options.padding_idx()) os << ", padding_idx=" << *options.padding_idx();
  os << ")";
}

// ---- Conv2d, MaxPool2d -----------------------------------------------------------------------

namespace {
// in_channels, out_channels and groups of a Conv1d / Conv2d (LibTorch's checks, as ValueErrors).
void check_conv_channels(const char* name, int64_t in, int64_t out, int64_t groups) {
  check_positive(name, "in_channels", in);
  check_positive(name, "out_channels", out);
  check_positive(name, "groups", groups);
  GRADLAB_CHECK(in % groups == 0, ValueError, name, "in_channels must be divisible by groups",
                "a multiple of " + std::to_string(groups), std::to_string(in));
  GRADLAB_CHECK(out % groups == 0, ValueError, name, "out_channels must be divisible by groups",
                "a multiple of " + std::to_string(groups), std::to_string(out));
}
}  // namespace

Conv2dImpl::Conv2dImpl(const Conv2dOptions& o) : options(o) {
  check_conv_channels("Conv2d", o.in_channels(), o.out_channels(), o.groups());
  check_positive("Conv2d", "kernel_size", std::min(o.kernel_size().h, o.kernel_size().w));
  // [out, in / groups, kh, kw]: the default init's fan_in is in / groups * kh * kw.
  weight = register_parameter("weight", empty({o.out_channels(), o.in_channels() / o.groups(),
                                               o.kernel_size().h, o.kernel_size().w}));
  if (o.bias()) bias = register_parameter("bias", empty({o.out_channels()}));
  reset_parameters();
}

void Conv2dImpl::reset_parameters() { default_init(weight, bias); }

Tensor Conv2dImpl::forward(const Tensor& input) {
  check_input("Conv2d", input);
  const int64_t C = options.in_channels();
  GRADLAB_CHECK(
      input.dim() == 3 || input.dim() == 4, ShapeError, "Conv2d", "expected a 3-D or 4-D input",
      "[N, " + std::to_string(C) + ", H, W] or [" + std::to_string(C) + ", H, W]",
      shape_str(input.sizes()),
      input.dim() == 2 ? "flat rows need a reshape first, e.g. x.view({-1, 1, 8, 8})" : "");
  const int64_t c = input.size(input.dim() - 3);
  GRADLAB_CHECK(c == C, ShapeError, "Conv2d", "the input's channel dim must equal in_channels",
                "input with " + std::to_string(C) + " channels", shape_str(input.sizes()),
                "images are [N, C, H, W] (channels first), not [N, H, W, C]");
  return conv2d(input, weight, bias, options.stride(), options.padding(), options.dilation(),
                options.groups());
}

void Conv2dImpl::pretty_print(std::ostream& os) const {
  os << "Conv2d(" << options.in_channels() << ", " << options.out_channels()
     << ", kernel_size=" << options.kernel_size().str() << ", stride=" << options.stride().str();
  if (options.padding() != IntPair(0)) os << ", padding=" << options.padding().str();
  if (options.dilation() != IntPair(1)) os << ", dilation=" << options.dilation().str();
  if (options.groups() != 1) os << ", groups=" << options.groups();
  os << ", bias=" << tf(options.bias()) << ")";
}

Conv1dImpl::Conv1dImpl(const Conv1dOptions& o) : options(o) {
  check_conv_channels("Conv1d", o.in_channels(), o.out_channels(), o.groups());
  check_positive("Conv1d", "kernel_size", o.kernel_size());
  weight = register_parameter(
      "weight", empty({o.out_channels(), o.in_channels() / o.groups(), o.kernel_size()}));
  if (o.bias()) bias = register_parameter("bias", empty({o.out_channels()}));
  reset_parameters();
}

void Conv1dImpl::reset_parameters() { default_init(weight, bias); }

Tensor Conv1dImpl::forward(const Tensor& input) {
  check_input("Conv1d", input);
  const int64_t C = options.in_channels();
  GRADLAB_CHECK(input.dim() == 2 || input.dim() == 3, ShapeError, "Conv1d",
                "expected a 2-D or 3-D input",
                "[N, " + std::to_string(C) + ", L] or [" + std::to_string(C) + ", L]",
                shape_str(input.sizes()));
  GRADLAB_CHECK(input.size(input.dim() - 2) == C, ShapeError, "Conv1d",
                "the input's channel dim must equal in_channels",
                "input with " + std::to_string(C) + " channels", shape_str(input.sizes()),
                "sequences are [N, C, L] (channels first), not [N, L, C]: transpose(1, 2)");
  return conv1d(input, weight, bias, options.stride(), options.padding(), options.dilation(),
                options.groups());
}

void Conv1dImpl::pretty_print(std::ostream& os) const {
  os << "Conv1d(" << options.in_channels() << ", " << options.out_channels() << ", kernel_size=["
     << options.kernel_size() << "], stride=[" << options.stride() << "]";
  if (options.padding() != 0) os << ", padding=[" << options.padding() << "]";
  if (options.dilation() != 1) os << ", dilation=[" << options.dilation() << "]";
  if (options.groups() != 1) os << ", groups=" << options.groups();
  os << ", bias=" << tf(options.bias()) << ")";
}

ConvTranspose2dImpl::ConvTranspose2dImpl(const ConvTranspose2dOptions& o) : options(o) {
  const char* name = "ConvTranspose2d";
  check_positive(name, "in_channels", o.in_channels());
  check_positive(name, "out_channels", o.out_channels());
  check_positive(name, "groups", o.groups());
  check_positive(name, "kernel_size", std::min(o.kernel_size().h, o.kernel_size().w));
  GRADLAB_CHECK(o.in_channels() % o.groups() == 0, ValueError, name,
                "in_channels must be divisible by groups",
                "a multiple of " + std::to_string(o.groups()), std::to_string(o.in_channels()));
  GRADLAB_CHECK(o.out_channels() % o.groups() == 0, ValueError, name,
                "out_channels must be divisible by groups",
                "a multiple of " + std::to_string(o.groups()), std::to_string(o.out_channels()));
  // NOTE: [in, out / groups, kh, kw], the transpose of Conv2d's layout; so the default init's
  // fan_in (dim 1 times the kernel) is out_channels / groups * kh * kw, as in LibTorch.
  weight = register_parameter("weight", empty({o.in_channels(), o.out_channels() / o.groups(),
                                               o.kernel_size().h, o.kernel_size().w}));
  if (o.bias()) bias = register_parameter("bias", empty({o.out_channels()}));
  reset_parameters();
}

void ConvTranspose2dImpl::reset_parameters() { default_init(weight, bias); }

Tensor ConvTranspose2dImpl::forward(const Tensor& input,
                                    const std::optional<std::vector<int64_t>>& output_size) {
  const char* name = "ConvTranspose2d";
  check_input(name, input);
  const int64_t C = options.in_channels();
  GRADLAB_CHECK(input.dim() == 3 || input.dim() == 4, ShapeError, name,
                "expected a 3-D or 4-D input",
                "[N, " + std::to_string(C) + ", H, W] or [" + std::to_string(C) + ", H, W]",
                shape_str(input.sizes()));
  GRADLAB_CHECK(input.size(input.dim() - 3) == C, ShapeError, name,
                "the input's channel dim must equal in_channels",
                "input with " + std::to_string(C) + " channels", shape_str(input.sizes()),
                "images are [N, C, H, W] (channels first), not [N, H, W, C]");
  IntPair opad = options.output_padding();
  if (output_size) {
    // LibTorch's _output_padding: each size must lie in [smallest, smallest + stride - 1].
    std::vector<int64_t> size = *output_size;
    const auto rank = static_cast<size_t>(input.dim());
    if (size.size() == rank) size.erase(size.begin(), size.end() - 2);
    GRADLAB_CHECK(size.size() == 2, ShapeError, name,
                  "output_size must have 2 or " + std::to_string(rank) + " elements",
                  "{oh, ow}", shape_str(*output_size));
    const IntPair k = options.kernel_size(), s = options.stride(), p = options.padding(),
                  d = options.dilation();
    const int64_t H = input.size(-2), W = input.size(-1);
    const int64_t min_h = (H - 1) * s.h - 2 * p.h + d.h * (k.h - 1) + 1,
                  min_w = (W - 1) * s.w - 2 * p.w + d.w * (k.w - 1) + 1;
    const bool ok = size[0] >= min_h && size[0] <= min_h + s.h - 1 && size[1] >= min_w &&
                    size[1] <= min_w + s.w - 1;
    GRADLAB_CHECK(ok, ShapeError, name,
                  "requested an output size of " + shape_str(size) + " for an input of " +
                      shape_str(input.sizes()),
                  "sizes from " + shape_str({min_h, min_w}) + " to " +
                      shape_str({min_h + s.h - 1, min_w + s.w - 1}),
                  shape_str(size));
    opad = IntPair(size[0] - min_h, size[1] - min_w);
  }
  return conv_transpose2d(input, weight, bias, options.stride(), options.padding(), opad,
                          options.groups(), options.dilation());
}

void ConvTranspose2dImpl::pretty_print(std::ostream& os) const {
  os << "ConvTranspose2d(" << options.in_channels() << ", " << options.out_channels()
     << ", kernel_size=" << options.kernel_size().str() << ", stride=" << options.stride().str();
  if (options.padding() != IntPair(0)) os << ", padding=" << options.padding().str();
  if (options.output_padding() != IntPair(0))
    os << ", output_padding=" << options.output_padding().str();
  if (options.groups() != 1) os << ", groups=" << options.groups();
  if (options.dilation() != IntPair(1)) os << ", dilation=" << options.dilation().str();
  os << ", bias=" << tf(options.bias()) << ")";
}

Tensor MaxPool2dImpl::forward(const Tensor& input) {
  check_input("MaxPool2d", input);
  return functional::max_pool2d(input, options);  // refuses ceil_mode(true)
}

void MaxPool2dImpl::pretty_print(std::ostream& os) const {
  os << "MaxPool2d(kernel_size=" << options.kernel_size().str()
     << ", stride=" << options.stride().str()
     << ", padding=" << options.padding().str() << ")";
}

// ---- AvgPool2d, AdaptiveAvgPool1d / 2d, Upsample, GroupNorm (nn/pooling.hpp): one call of
// their op (ops/resample.cpp, ops/nn_ops.cpp) or of F::interpolate ----------------------------

namespace {
template <class V>
void print_list(std::ostream& os, const std::vector<V>& v) {
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
}
}  // namespace

Tensor AvgPool2dImpl::forward(const Tensor& input) {
  check_input("AvgPool2d", input);
  return functional::avg_pool2d(input, options);
}

void AvgPool2dImpl::pretty_print(std::ostream& os) const {
  os << "AvgPool2d(kernel_size=" << options.kernel_size().str()
     << ", stride=" << options.stride().str() << ", padding=" << options.padding().str() << ")";
}

Tensor AdaptiveAvgPool2dImpl::forward(const Tensor& input) {
  check_input("AdaptiveAvgPool2d", input);
  return adaptive_avg_pool2d(input, options.output_size());
}

void AdaptiveAvgPool2dImpl::pretty_print(std::ostream& os) const {
  os << "AdaptiveAvgPool2d(output_size=" << options.output_size().str() << ")";
}

Tensor AdaptiveAvgPool1dImpl::forward(const Tensor& input) {
  check_input("AdaptiveAvgPool1d", input);
  return adaptive_avg_pool1d(input, options.output_size());
}

void AdaptiveAvgPool1dImpl::pretty_print(std::ostream& os) const {
  os << "AdaptiveAvgPool1d(output_size=" << options.output_size() << ")";
}

Tensor UpsampleImpl::forward(const Tensor& input) {
  check_input("Upsample", input);
  return functional::interpolate(input, InterpolateFuncOptions()
                                            .size(options.size())
                                            .scale_factor(options.scale_factor())
                                            .mode(options.mode())
                                            .align_corners(options.align_corners()));
}

void UpsampleImpl::pretty_print(std::ostream& os) const {
  os << "Upsample(";
  if (options.size()) os << "size=", print_list(os, *options.size());
  if (options.scale_factor()) os << "scale_factor=", print_list(os, *options.scale_factor());
  os << ", mode=" << to_string(options.mode()) << ")";
}

GroupNormImpl::GroupNormImpl(const GroupNormOptions& o) : options(o) {
  GRADLAB_CHECK(o.num_groups() > 0 && o.num_channels() > 0 && o.num_channels() % o.num_groups() == 0,
                ValueError, "GroupNorm", "num_channels must be divisible by num_groups",
                "num_groups > 0 dividing num_channels = " + std::to_string(o.num_channels()),
                std::to_string(o.num_groups()));
  if (o.affine()) {
    weight = register_parameter("weight", ones({o.num_channels()}));
    bias = register_parameter("bias", zeros({o.num_channels()}));
  }
}

void GroupNormImpl::reset_parameters() {
  if (!options.affine()) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor GroupNormImpl::forward(const Tensor& input) {
  check_input("GroupNorm", input);
  return group_norm(input, options.num_groups(), weight, bias, options.eps());
}

void GroupNormImpl::pretty_print(std::ostream& os) const {
  os << "GroupNorm(" << options.num_groups() << ", " << options.num_channels()
     << ", eps=" << options.eps() << ", affine=" << tf(options.affine()) << ")";
}

}  // namespace gradlab::nn

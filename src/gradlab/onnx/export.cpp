// onnx::export_model over ONNX's protobuf classes (libonnx-dev). Modules map to one ONNX node
// each where ONNX has it (Gemm, Conv, MaxPool, BatchNormalization, LayerNormalization, Gather ...)
// and to a few elementwise nodes where opset 17 has none (GELU). The example input runs through
// the model alongside, so every value's shape is known.

#include "gradlab/onnx/export.hpp"

#if GRADLAB_HAVE_ONNX

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <numbers>
#include <variant>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/core/tensor_impl.hpp"
#include "gradlab/io/atomic_file.hpp"
#include "gradlab/nn/nn.hpp"
#include "gradlab/ops/op_traits.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::onnx {

namespace {

namespace ox = ::onnx;

int elem_type(ScalarType dt, const std::string& what) {
  switch (dt) {
    case kFloat32: return ox::TensorProto::FLOAT;
    case kFloat64: return ox::TensorProto::DOUBLE;
    case kInt64: return ox::TensorProto::INT64;
    default:
      throw DTypeError(error_message("onnx::export_model", what + " has a dtype ONNX export does not take",
                                     "float32, float64 or int64", to_string(dt)));
  }
}

[[noreturn]] void unsupported(const std::string& what, const std::string& hint) {
  throw ValueError(error_message("onnx::export_model", what + " cannot be exported",
                                 "a supported module or op (see onnx/export.hpp)", what, hint));
}

// Builds one GraphProto: fresh value names, initializers, nodes.
class Emitter {
 public:
  explicit Emitter(ox::GraphProto* g) : g_(g) {}
  std::string fresh(const std::string& base) { return base + "_" + std::to_string(n_++); }
  // A tensor kept in the model (a weight, a constant), by value.
  std::string init(const Tensor& t_in, const std::string& base) {
    Tensor t = t_in.detach().to(Device(kCPU)).contiguous();
    const std::string name = fresh(base);
    ox::TensorProto* p = g_->add_initializer();
    p->set_name(name);
    p->set_data_type(elem_type(t.dtype(), "the tensor " + base));
    for (int64_t d : t.sizes()) p->add_dims(d);
    p->set_raw_data(std::string(static_cast<const char*>(t.impl()->data()),
                                static_cast<size_t>(t.numel()) * element_size(t.dtype())));
    return name;
  }
  std::string scalar(double v, ScalarType dt, const std::string& base) {
    return init(scalar_tensor(v, dtype(dt)), base);
  }
  std::string ints(const std::vector<int64_t>& v, const std::string& base) {
    return init(from_vector(v, {static_cast<int64_t>(v.size())}, dtype(kInt64)), base);
  }
  ox::NodeProto* node(const std::string& op, const std::vector<std::string>& in, std::string& out) {
    ox::NodeProto* n = g_->add_node();
    n->set_op_type(op);
    n->set_name(fresh(op));
    for (const auto& i : in) n->add_input(i);
    out = fresh(op);
    n->add_output(out);
    return n;
  }
  std::string op(const std::string& type, const std::vector<std::string>& in) {
    std::string out;
    node(type, in, out);
    return out;
  }
  static void attr(ox::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(ox::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(ox::NodeProto* n, const std::string& name, double v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(ox::AttributeProto::FLOAT);
    a->set_f(static_cast<float>(v));
  }
  static void attr(ox::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(ox::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  ox::GraphProto* graph() { return g_; }

 private:
  ox::GraphProto* g_;
  int n_ = 0;
};

void set_value_info(ox::ValueInfoProto* v, const std::string& name, const Tensor& t) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type(t.dtype(), "the value " + name));
  for (int64_t d : t.sizes()) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

// gelu(x) = 0.5 x (1 + erf(x / √2)) (opset 17 has no Gelu node).
std::string emit_gelu(Emitter& E, const std::string& x, ScalarType dt) {
  std::string e = E.op("Erf", {E.op("Div", {x, E.scalar(std::numbers::sqrt2, dt, "sqrt2")})});
  std::string h = E.op("Mul", {x, E.op("Add", {e, E.scalar(1, dt, "one")})});
  return E.op("Mul", {h, E.scalar(0.5, dt, "half")});
}

// Conv / MaxPool window attributes (pads: begin h, begin w, end h, end w).
void window_attrs(::onnx::NodeProto* n, IntPair kernel, IntPair stride, IntPair padding, IntPair dilation) {
  Emitter::attr(n, "kernel_shape", std::vector<int64_t>{kernel.h, kernel.w});
  Emitter::attr(n, "strides", std::vector<int64_t>{stride.h, stride.w});
  Emitter::attr(n, "pads", std::vector<int64_t>{padding.h, padding.w, padding.h, padding.w});
  Emitter::attr(n, "dilations", std::vector<int64_t>{dilation.h, dilation.w});
}

void require_eval(const nn::Module& m, const char* type) {
  if (m.is_training())
    throw ValueError(error_message("onnx::export_model",
                                   std::string(type) + " is in training mode", "eval mode",
                                   "training mode", "call model->eval() before exporting"));
}

// Emits module m applied to value x (whose example value is v); returns the output's name and
// sets v to the example output.
std::string emit_module(Emitter& E, const nn::Module& m, const std::string& x, Tensor& v) {
  using namespace nn;
  const ScalarType dt = v.dtype();
  if (auto* s = dynamic_cast<const SequentialImpl*>(&m)) {
    std::string cur = x;
    for (const auto& [name, child] : s->named_children()) cur = emit_module(E, *child, cur, v);
    return cur;
  }
  if (auto* l = dynamic_cast<const LinearImpl*>(&m)) {
    Tensor y = const_cast<LinearImpl*>(l)->forward(v);
    std::string out;
    if (v.dim() == 2) {
      std::vector<std::string> in = {x, E.init(l->weight, "weight")};
      if (l->bias.defined()) in.push_back(E.init(l->bias, "bias"));
      Emitter::attr(E.node("Gemm", in, out), "transB", int64_t{1});
    } else {
      out = E.op("MatMul", {x, E.init(l->weight.t(), "weight_t")});
      if (l->bias.defined()) out = E.op("Add", {out, E.init(l->bias, "bias")});
    }
    v = y;
    return out;
  }
  if (auto* c = dynamic_cast<const Conv2dImpl*>(&m)) {
    if (v.dim() != 4) unsupported("Conv2d on an unbatched 3-D input", "export with a batched [N, C, H, W] example");
    Tensor y = const_cast<Conv2dImpl*>(c)->forward(v);
    const auto& o = c->options;
    std::vector<std::string> in = {x, E.init(c->weight, "conv_weight")};
    if (c->bias.defined()) in.push_back(E.init(c->bias, "conv_bias"));
    std::string out;
    auto* n = E.node("Conv", in, out);
    window_attrs(n, o.kernel_size(), o.stride(), o.padding(), o.dilation());
    if (o.groups() != 1) Emitter::attr(n, "group", o.groups());  // weight [O, C / group, kh, kw]
    v = y;
    return out;
  }
  if (auto* p = dynamic_cast<const MaxPool2dImpl*>(&m)) {
    if (v.dim() != 4) unsupported("MaxPool2d on an unbatched 3-D input", "export with a batched [N, C, H, W] example");
    Tensor y = const_cast<MaxPool2dImpl*>(p)->forward(v);
    const auto& o = p->options;
    const IntPair st = o.stride();
    std::string out;
    auto* n = E.node("MaxPool", {x}, out);
    window_attrs(n, o.kernel_size(), st, o.padding(), o.dilation());
    v = y;
    return out;
  }
  if (auto* b = dynamic_cast<const BatchNorm1dImpl*>(&m)) {
    require_eval(m, "BatchNorm1d");
    if (!b->options.track_running_stats())
      unsupported("BatchNorm1d without running stats", "eval mode then uses batch statistics, which ONNX's BatchNormalization does not");
    Tensor y = const_cast<BatchNorm1dImpl*>(b)->forward(v);
    const int64_t C = b->options.num_features();
    const Tensor w = b->weight.defined() ? b->weight : ones({C}, dtype(dt));
    const Tensor bias = b->bias.defined() ? b->bias : zeros({C}, dtype(dt));
    std::string out;
    auto* n = E.node("BatchNormalization",
                     {x, E.init(w, "bn_weight"), E.init(bias, "bn_bias"),
                      E.init(b->running_mean, "bn_mean"), E.init(b->running_var, "bn_var")},
                     out);
    Emitter::attr(n, "epsilon", b->options.eps());
    v = y;
    return out;
  }
  if (auto* d = dynamic_cast<const DropoutImpl*>(&m)) {
    require_eval(m, "Dropout");
    (void)d;
    return E.op("Identity", {x});
  }
  if (dynamic_cast<const IdentityImpl*>(&m)) return E.op("Identity", {x});
  if (dynamic_cast<const ReLUImpl*>(&m)) { v = relu(v); return E.op("Relu", {x}); }
  if (dynamic_cast<const SigmoidImpl*>(&m)) { v = sigmoid(v); return E.op("Sigmoid", {x}); }
  if (dynamic_cast<const TanhImpl*>(&m)) { v = tanh(v); return E.op("Tanh", {x}); }
  if (auto* a = dynamic_cast<const LeakyReLUImpl*>(&m)) {
    v = leaky_relu(v, a->options.negative_slope());
    std::string out;
    Emitter::attr(E.node("LeakyRelu", {x}, out), "alpha", a->options.negative_slope());
    return out;
  }
  if (auto* sp = dynamic_cast<const SoftplusImpl*>(&m)) {
    // softplus(x) = log(1 + exp(βx)) / β (the linear part above the threshold differs by
    // less than exp(-threshold)).
    const double beta = sp->options.beta();
    v = const_cast<SoftplusImpl*>(sp)->forward(v);
    if (beta == 1) return E.op("Softplus", {x});
    std::string bx = E.op("Mul", {x, E.scalar(beta, dt, "beta")});
    return E.op("Div", {E.op("Softplus", {bx}), E.scalar(beta, dt, "beta")});
  }
  if (auto* g = dynamic_cast<const GELUImpl*>(&m)) {
    v = const_cast<GELUImpl*>(g)->forward(v);
    if (g->options.approximate() == "none") return emit_gelu(E, x, dt);
    // 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))
    std::string x3 = E.op("Mul", {E.op("Mul", {x, x}), x});
    std::string inner = E.op("Add", {x, E.op("Mul", {x3, E.scalar(0.044715, dt, "c")})});
    std::string t = E.op("Tanh", {E.op("Mul", {inner, E.scalar(std::sqrt(2.0 / std::numbers::pi), dt, "k")})});
    std::string h = E.op("Mul", {x, E.op("Add", {t, E.scalar(1, dt, "one")})});
    return E.op("Mul", {h, E.scalar(0.5, dt, "half")});
  }
  if (auto* s = dynamic_cast<const SoftmaxImpl*>(&m)) {
    v = softmax(v, s->options.dim());
    std::string out;
    Emitter::attr(E.node("Softmax", {x}, out), "axis", s->options.dim());
    return out;
  }
  if (auto* s = dynamic_cast<const LogSoftmaxImpl*>(&m)) {
    v = log_softmax(v, s->options.dim());
    std::string out;
    Emitter::attr(E.node("LogSoftmax", {x}, out), "axis", s->options.dim());
    return out;
  }
  if (auto* f = dynamic_cast<const FlattenImpl*>(&m)) {
    Tensor y = const_cast<FlattenImpl*>(f)->forward(v);
    std::string out;
    if (f->options.start_dim() == 1 && (f->options.end_dim() == -1 || f->options.end_dim() == v.dim() - 1))
      Emitter::attr(E.node("Flatten", {x}, out), "axis", int64_t{1});
    else
      out = E.op("Reshape", {x, E.ints(y.sizes(), "shape")});
    v = y;
    return out;
  }
  if (auto* ln = dynamic_cast<const LayerNormImpl*>(&m)) {
    Tensor y = const_cast<LayerNormImpl*>(ln)->forward(v);
    const Shape& ns = ln->options.normalized_shape();
    const Tensor w = ln->weight.defined() ? ln->weight : ones(ns, dtype(dt));
    const Tensor b = ln->bias.defined() ? ln->bias : zeros(ns, dtype(dt));
    std::string out;
    auto* n = E.node("LayerNormalization", {x, E.init(w, "ln_weight"), E.init(b, "ln_bias")}, out);
    Emitter::attr(n, "axis", -static_cast<int64_t>(ns.size()));
    Emitter::attr(n, "epsilon", ln->options.eps());
    v = y;
    return out;
  }
  if (auto* e = dynamic_cast<const EmbeddingImpl*>(&m)) {
    Tensor y = const_cast<EmbeddingImpl*>(e)->forward(v);
    std::string out;
    Emitter::attr(E.node("Gather", {E.init(e->weight, "embedding"), x}, out), "axis", int64_t{0});
    v = y;
    return out;
  }
  unsupported("module " + m.name(), "export the traced graph (jit::trace) or use supported modules");
}

// What an op struct's ONNX mapping (its kOnnx trait) writes to: this Emitter, at one dtype.
class TracedGraph final : public autograd::OnnxGraph {
 public:
  TracedGraph(Emitter& e, ScalarType dt) : E(e), dt_(dt) {}
  std::string op(const std::string& type, const std::vector<std::string>& in,
                 const std::vector<autograd::OnnxAttr>& attrs) override {
    std::string out;
    ox::NodeProto* n = E.node(type, in, out);
    for (const auto& a : attrs) std::visit([&](const auto& v) { Emitter::attr(n, a.name, v); }, a.value);
    return out;
  }
  std::string scalar(double v, const char* name) override { return E.scalar(v, dt_, name); }
  std::string ints(const std::vector<int64_t>& v, const char* name) override { return E.ints(v, name); }
  int64_t elem_type(ScalarType dt) override { return gradlab::onnx::elem_type(dt, "a cast"); }

 private:
  Emitter& E;
  ScalarType dt_;
};

// One traced node as ONNX nodes, as its op's kOnnx trait says; `in` are the names of its tensor inputs.
std::string emit_traced(Emitter& E, const jit::Graph& g, const jit::Node& n,
                        const std::vector<std::string>& in) {
  const jit::Value& out = g.values[n.outputs[0]];
  using Kind = autograd::Onnx::Kind;
  if (!n.op) unsupported("traced op " + n.kind, "it is not an op struct of the library");
  const autograd::Onnx& mapping = n.op->onnx;
  if (mapping.kind == Kind::Same) return E.op(mapping.op, in);
  if (mapping.kind == Kind::Custom) {
    TracedGraph graph(E, out.dtype);
    return n.op->to_onnx(graph, autograd::OnnxCall{in, n.attrs, out.shape, out.dtype});
  }
  unsupported("traced op " + n.kind, std::string(mapping.reason) +
                                          "; or export the module instead (export_model(model, ...)), which "
                                          "maps layers such as Conv2d whole");
}

void finish(ox::ModelProto& model, const ExportOptions& options, const std::string& path) {
  model.set_ir_version(8);
  model.set_producer_name("gradlab");
  model.set_producer_version("0.1.0");
  auto* op = model.add_opset_import();
  op->set_domain("");
  op->set_version(options.opset);
  try {
    ox::checker::check_model(model);
  } catch (const std::exception& e) {
    throw ValueError(error_message("onnx::export_model", "the model fails onnx::checker::check_model",
                                   "a valid ONNX model", e.what(),
                                   "this is a bug in the exporter: please report the model"));
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    throw IOError(error_message("onnx::export_model", "could not serialize the model", "", path));
  io::write_file_atomic(path, [&](io::FileWriter& w) { w.write(bytes.data(), bytes.size()); });
}

}  // namespace

bool available() { return true; }

void export_model(const nn::Module& model, const Tensor& example_input, const std::string& path,
                  const ExportOptions& options) {
  NoGradGuard no_grad;
  ox::ModelProto proto;
  Emitter E(proto.mutable_graph());
  proto.mutable_graph()->set_name(options.graph_name);
  set_value_info(proto.mutable_graph()->add_input(), options.input_name, example_input);
  Tensor v = example_input;
  std::string out = emit_module(E, model, options.input_name, v);
  // The graph output gets its own name through an Identity.
  ox::NodeProto* id = proto.mutable_graph()->add_node();
  id->set_op_type("Identity");
  id->add_input(out);
  id->add_output(options.output_name);
  set_value_info(proto.mutable_graph()->add_output(), options.output_name, v);
  finish(proto, options, path);
}

void export_model(const jit::Graph& g, const Tensor& example_input, const std::string& path,
                  const ExportOptions& options) {
  GRADLAB_CHECK(g.inputs.size() == 1 && g.outputs.size() == 1, ValueError, "onnx::export_model",
                "a traced graph must have one input and one output", "1 and 1",
                std::to_string(g.inputs.size()) + " and " + std::to_string(g.outputs.size()));
  NoGradGuard no_grad;
  ox::ModelProto proto;
  Emitter E(proto.mutable_graph());
  proto.mutable_graph()->set_name(options.graph_name);
  set_value_info(proto.mutable_graph()->add_input(), options.input_name, example_input);
  std::vector<std::string> names(g.values.size());
  names[g.inputs[0]] = options.input_name;
  for (size_t i = 0; i < g.values.size(); ++i)
    if (g.values[i].kind == jit::Value::Kind::Constant) names[i] = E.init(g.values[i].constant, "const");
  for (const jit::Node& n : g.nodes) {
    std::vector<std::string> in;
    for (int id : n.inputs)
      if (g.values[id].defined) in.push_back(names[id]);
    names[n.outputs[0]] = emit_traced(E, g, n, in);
    if (n.outputs.size() > 1) unsupported("traced op " + n.kind + " with several outputs", "export the module instead");
  }
  ox::NodeProto* id = proto.mutable_graph()->add_node();
  id->set_op_type("Identity");
  id->add_input(names[g.outputs[0]]);
  id->add_output(options.output_name);
  ox::ValueInfoProto* o = proto.mutable_graph()->add_output();
  o->set_name(options.output_name);
  const jit::Value& ov = g.values[g.outputs[0]];
  auto* tt = o->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type(ov.dtype, "the output"));
  for (int64_t d : ov.shape) tt->mutable_shape()->add_dim()->set_dim_value(d);
  finish(proto, options, path);
}

}  // namespace gradlab::onnx

#else  // no libonnx-dev: the API is there and says why it cannot work

namespace gradlab::onnx {

namespace {
[[noreturn]] void not_built() {
  throw IOError(error_message("onnx::export_model", "gradlab was built without ONNX support",
                              "a build with libonnx-dev", "libonnx-dev not found at configure time",
                              "install libonnx-dev libprotobuf-dev (tools/setup.sh) and configure again"));
}
}  // namespace

bool available() { return false; }
void export_model(const nn::Module&, const Tensor&, const std::string&, const ExportOptions&) { not_built(); }
void export_model(const jit::Graph&, const Tensor&, const std::string&, const ExportOptions&) { not_built(); }

}  // namespace gradlab::onnx

#endif

// jit::trace: a tracer installed on this thread through the hooks in record() (ops/trace_hook.hpp)
// and in Tensor::item / to_vector (core/host_read.hpp), for the duration of one call of fn.

#include "gradlab/jit/trace.hpp"

#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <ostream>
#include <sstream>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/core/generator.hpp"
#include "gradlab/core/host_read.hpp"
#include "gradlab/ops/ops.hpp"
#include "gradlab/ops/trace_hook.hpp"

namespace gradlab::jit {

namespace {

namespace ad = autograd::detail;

// "MulBackward0" -> "Mul", "MaxPool2DWithIndicesBackward0" -> "MaxPool2DWithIndices".
std::string kind_of(const std::string& op_name) {
  const auto at = op_name.rfind("Backward");
  return at == std::string::npos || at == 0 ? op_name : op_name.substr(0, at);
}

class Tracer {
 public:
  explicit Tracer(bool print_warnings) : print_warnings_(print_warnings) {
    ad::tracers_active.fetch_add(1, std::memory_order_relaxed);
    detail::host_read_watchers.fetch_add(1, std::memory_order_relaxed);
    ad::set_trace_sink(&Tracer::on_call, this);
    detail::set_host_read_hook(&Tracer::on_host_read, this);
  }
  ~Tracer() {
    ad::set_trace_sink(nullptr, nullptr);
    detail::set_host_read_hook(nullptr, nullptr);
    detail::host_read_watchers.fetch_sub(1, std::memory_order_relaxed);
    ad::tracers_active.fetch_sub(1, std::memory_order_relaxed);
  }
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  int add_input(const Tensor& t) {
    const int id = add_value(t, Value::Kind::Input);
    g_.inputs.push_back(id);
    return id;
  }
  // The id of t: known, or a new constant (a tensor the trace did not see being made).
  int id_of(const Tensor& t) {
    if (!t.defined()) {
      Value v;
      v.defined = false;
      g_.values.push_back(v);
      return static_cast<int>(g_.values.size()) - 1;
    }
    auto it = ids_.find(t.impl());
    if (it != ids_.end()) return it->second;
    return add_value(t, Value::Kind::Constant);
  }
  void warn(std::string w) {
    if (print_warnings_) std::cerr << w << "\n";
    g_.warnings.push_back(std::move(w));
  }
  Graph finish(const std::vector<Tensor>& results) {
    for (const auto& r : results) g_.outputs.push_back(id_of(r));
    return std::move(g_);
  }

 private:
  int add_value(const Tensor& t, Value::Kind kind) {
    Value v;
    v.kind = kind;
    v.shape = t.sizes();
    v.dtype = t.dtype();
    v.device = t.device();
    if (kind == Value::Kind::Constant) v.constant = t;
    g_.values.push_back(v);
    const int id = static_cast<int>(g_.values.size()) - 1;
    ids_[t.impl()] = id;
    alive_.push_back(t);  // keeps the impl (and so its address) from being reused
    return id;
  }
  static void on_call(void* self, ad::TracedCall&& c) {
    auto& tr = *static_cast<Tracer*>(self);
    Node n;
    n.op_name = c.name;
    n.op = c.info;
    n.kind = kind_of(n.op_name);
    for (const auto& t : c.inputs) n.inputs.push_back(tr.id_of(t));
    const int node = static_cast<int>(tr.g_.nodes.size());
    for (size_t i = 0; i < c.outputs.size(); ++i) {
      const int id = tr.add_value(c.outputs[i], Value::Kind::Op);
      tr.g_.values[id].node = node;
      tr.g_.values[id].output_nr = static_cast<int>(i);
      n.outputs.push_back(id);
    }
    n.attrs = std::move(c.attrs);
    n.site = c.site;
    n.replay = std::move(c.replay);
    tr.g_.nodes.push_back(std::move(n));
  }
  static void on_host_read(void* self, const char* what) {
    if (ad::trace_in_op()) return;  // an op's own read (a bounds check), not the user's
    auto& tr = *static_cast<Tracer*>(self);
    // item() reads through to_vector(): one warning per place in the op sequence.
    if (tr.last_read_at_ == tr.g_.nodes.size()) return;
    tr.last_read_at_ = tr.g_.nodes.size();
    std::string w = std::string("TracerWarning: a tensor value was read on the host (") + what +
                    ") after " + std::to_string(tr.g_.nodes.size()) +
                    " traced op(s); control flow that depends on it is frozen in the trace, so "
                    "the graph may be wrong for other inputs (check it with "
                    "TraceOptions::check_inputs)";
    for (const auto& old : tr.g_.warnings)
      if (old == w) return;
    if (tr.print_warnings_) std::cerr << w << "\n";
    tr.g_.warnings.push_back(std::move(w));
  }

  Graph g_;
  std::map<const TensorImpl*, int> ids_;
  std::vector<Tensor> alive_;
  bool print_warnings_;
  size_t last_read_at_ = static_cast<size_t>(-1);
};

// "%3", "n2": a one-letter prefix and a number. NOTE: not "%" + std::to_string(id): GCC 12
// warns (-Wrestrict) falsely on a short literal plus a temporary string.
std::string tag(char prefix, int64_t id) {
  std::string s(1, prefix);
  s += std::to_string(id);
  return s;
}

std::string value_type(const Value& v) {
  if (!v.defined) return "None";
  return to_string(v.dtype) + shape_str(v.shape);
}

std::string attr_str(const ad::TraceAttr& a) {
  std::ostringstream os;
  if (auto* i = std::get_if<int64_t>(&a)) os << *i;
  else if (auto* d = std::get_if<double>(&a)) os << *d;
  else if (auto* l = std::get_if<std::vector<int64_t>>(&a)) os << shape_str(*l);
  else os << std::get<std::string>(a);
  return os.str();
}

std::string constant_str(const Value& v) {
  if (v.constant.numel() == 1 && v.constant.is_floating_point())
    return "constant(" + std::to_string(v.constant.item<double>()) + ")";
  return v.constant.requires_grad() ? "parameter" : "constant";
}

Graph trace_impl(const TracedFn& fn, const std::vector<Tensor>& inputs, bool print_warnings) {
  Tracer tracer(print_warnings);
  for (const auto& t : inputs) {
    GRADLAB_CHECK(t.defined(), ValueError, "jit::trace", "an example input is undefined",
                  "defined tensors", "Tensor()");
    tracer.add_input(t);
  }
  // NOTE: random draws inside fn (Dropout in training mode, randn) become constants of the
  // trace: every replay would reuse the same mask. Seen as a change of the default generator.
  const std::string rng_before = default_generator().get_state();
  std::vector<Tensor> results = fn(inputs);
  if (default_generator().get_state() != rng_before)
    tracer.warn("TracerWarning: the function drew random numbers from the default generator "
                "(Dropout in training mode, randn ...); the trace freezes them as constants, so "
                "every replay would reuse the same draw");
  return tracer.finish(results);
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return "[" + s + "]";
}

}  // namespace

std::vector<Tensor> Graph::replay(const std::vector<Tensor>& in) const {
  GRADLAB_CHECK(in.size() == inputs.size(), ValueError, "Graph::replay", "wrong number of inputs",
                std::to_string(inputs.size()), std::to_string(in.size()));
  std::vector<Tensor> env(values.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const Value& v = values[inputs[i]];
    GRADLAB_CHECK(in[i].defined() && in[i].sizes() == v.shape && in[i].dtype() == v.dtype,
                  ShapeError, "Graph::replay",
                  "input " + std::to_string(i) + " differs from the traced example",
                  value_type(v), in[i].defined() ? to_string(in[i].dtype()) + shape_str(in[i].sizes()) : "None",
                  "a trace is specialized to its example's shapes and dtypes: trace again");
    env[inputs[i]] = in[i];
  }
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].kind == Value::Kind::Constant) env[i] = values[i].constant;
  for (const Node& n : nodes) {
    std::vector<Tensor> args;
    for (int id : n.inputs) args.push_back(env[id]);
    std::vector<Tensor> outs = n.replay(args);
    for (size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k) env[n.outputs[k]] = outs[k];
  }
  std::vector<Tensor> out;
  for (int id : outputs) out.push_back(env[id]);
  return out;
}

Tensor Graph::replay(const Tensor& input) const {
  std::vector<Tensor> r = replay(std::vector<Tensor>{input});
  GRADLAB_CHECK(r.size() == 1, ValueError, "Graph::replay", "the graph has several outputs",
                "1 output", std::to_string(r.size()), "call replay({inputs...})");
  return r[0];
}

std::vector<std::string> Graph::kinds() const {
  std::vector<std::string> k;
  for (const auto& n : nodes) k.push_back(n.kind);
  return k;
}

std::string Graph::str() const {
  std::ostringstream os;
  os << "graph(";
  for (size_t i = 0; i < inputs.size(); ++i)
    os << (i ? ", " : "") << "%" << inputs[i] << " : " << value_type(values[inputs[i]]);
  os << "):\n";
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].kind == Value::Kind::Constant)
      os << "  %" << i << " : " << value_type(values[i]) << " = " << constant_str(values[i]) << "\n";
  for (const Node& n : nodes) {
    os << "  ";
    for (size_t k = 0; k < n.outputs.size(); ++k)
      os << (k ? ", " : "") << "%" << n.outputs[k] << " : " << value_type(values[n.outputs[k]]);
    os << " = " << n.kind << "(";
    bool first = true;
    for (int id : n.inputs) {
      os << (first ? "" : ", ") << (values[id].defined ? tag('%', id) : "None");
      first = false;
    }
    for (const auto& a : n.attrs) {
      os << (first ? "" : ", ") << attr_str(a);
      first = false;
    }
    os << ")\n";
  }
  os << "  return (";
  for (size_t i = 0; i < outputs.size(); ++i) os << (i ? ", " : "") << "%" << outputs[i];
  os << ")\n";
  return os.str();
}

std::string Graph::dot() const {
  std::ostringstream os;
  os << "digraph traced {\n  rankdir=TB;\n  node [fontname=\"monospace\"];\n";
  // A value's source box: an input / constant box, or the node that makes it.
  auto source = [&](int id) {
    const Value& v = values[id];
    return v.kind == Value::Kind::Op ? tag('n', v.node) : tag('v', id);
  };
  for (size_t i = 0; i < values.size(); ++i) {
    const Value& v = values[i];
    if (v.kind == Value::Kind::Input)
      os << "  v" << i << " [shape=ellipse, label=\"input %" << i << "\\n" << value_type(v) << "\"];\n";
    else if (v.kind == Value::Kind::Constant)
      os << "  v" << i << " [shape=note, label=\"" << constant_str(v) << " %" << i << "\\n"
         << value_type(v) << "\"];\n";
  }
  for (size_t k = 0; k < nodes.size(); ++k) {
    os << "  n" << k << " [shape=box, label=\"" << nodes[k].kind << "\"];\n";
    for (int id : nodes[k].inputs)
      if (values[id].defined)
        os << "  " << source(id) << " -> n" << k << " [label=\"" << value_type(values[id]) << "\"];\n";
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    os << "  out" << i << " [shape=ellipse, label=\"output " << i << "\"];\n  " << source(outputs[i])
       << " -> out" << i << ";\n";
  os << "}\n";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Graph& g) { return os << g.str(); }

Graph trace(const TracedFn& fn, const std::vector<Tensor>& example_inputs,
            const TraceOptions& options) {
  Graph g = trace_impl(fn, example_inputs, options.print_warnings);
  for (size_t c = 0; c < options.check_inputs.size(); ++c) {
    const auto& in = options.check_inputs[c];
    Graph again = trace_impl(fn, in, /*print_warnings=*/false);
    const std::string where = "on check input " + std::to_string(c);
    if (again.kinds() != g.kinds())
      throw TracingCheckError(error_message(
          "jit::trace", "graphs differed across invocations " + where, join(g.kinds()),
          join(again.kinds()),
          "the function's control flow depends on its inputs (a branch on tensor values); a "
          "trace records one path: keep such code out of the traced function"));
    std::vector<Tensor> eager = fn(in), replayed;
    bool same_shapes = in.size() == g.inputs.size();
    for (size_t i = 0; same_shapes && i < in.size(); ++i)
      same_shapes = in[i].sizes() == g.values[g.inputs[i]].shape;
    if (!same_shapes) continue;  // a trace is specialized to shapes: only the structure compares
    {
      NoGradGuard no_grad;
      replayed = g.replay(in);
    }
    for (size_t k = 0; k < eager.size() && k < replayed.size(); ++k) {
      if (eager[k].sizes() == replayed[k].sizes() &&
          allclose(replayed[k].to(kFloat64), eager[k].to(kFloat64), options.check_rtol,
                   options.check_atol))
        continue;
      std::string got = "shape " + shape_str(replayed[k].sizes());
      if (eager[k].sizes() == replayed[k].sizes())
        got = "max |difference| " +
              std::to_string(amax(abs(replayed[k].to(kFloat64) - eager[k].to(kFloat64))).item<double>());
      throw TracingCheckError(error_message(
          "jit::trace",
          "output " + std::to_string(k) + " of the traced graph does not match the function " + where,
          "the eager result (shape " + shape_str(eager[k].sizes()) + ")", got,
          "the trace froze something that depends on the input values (a branch, a value read "
          "with item()); keep it out of the traced function"));
    }
  }
  return g;
}

Graph trace(const std::function<Tensor(const Tensor&)>& fn, const Tensor& example_input,
            const TraceOptions& options) {
  TracedFn f = [&fn](const std::vector<Tensor>& in) { return std::vector<Tensor>{fn(in.at(0))}; };
  return trace(f, {example_input}, options);
}

}  // namespace gradlab::jit

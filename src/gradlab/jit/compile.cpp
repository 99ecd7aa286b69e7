// jit::compile: trace once per input signature, cut the graph into fused regions and eager ops,
// then run that plan on every call. See compile.hpp for the rules.

#include "gradlab/jit/compile.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/autograd/node.hpp"
#include "gradlab/autograd/record.hpp"
#include "gradlab/backend/fused.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::jit {

using kern::FusedOutput;
using kern::FusedProgram;
using kern::FusedStep;
using math::Binary;
using math::Unary;
using Kind = FusedStep::Kind;
using Reduce = FusedOutput::Reduce;

namespace {

double attr_double(const Node& n, size_t i) {
  const auto& a = n.attrs.at(i);
  if (auto* d = std::get_if<double>(&a)) return *d;
  return static_cast<double>(std::get<int64_t>(a));
}

// The fused step of an elementwise node (its operands still to fill), or none.
std::optional<FusedStep> step_of(const Node& n) {
  static const std::map<std::string, Binary> binary = {
      {"AddBackward0", Binary::Add},         {"SubBackward0", Binary::Sub},
      {"MulBackward0", Binary::Mul},         {"DivBackward0", Binary::Div},
      {"MaximumBackward0", Binary::Maximum}, {"MinimumBackward0", Binary::Minimum}};
  static const std::map<std::string, Unary> unary = {
      {"NegBackward0", Unary::Neg},         {"ExpBackward0", Unary::Exp},
      {"LogBackward0", Unary::Log},         {"SqrtBackward0", Unary::Sqrt},
      {"AbsBackward0", Unary::Abs},         {"SinBackward0", Unary::Sin},
      {"CosBackward0", Unary::Cos},         {"TanhBackward0", Unary::Tanh},
      {"SigmoidBackward0", Unary::Sigmoid}, {"ErfBackward0", Unary::Erf},
      {"ReluBackward0", Unary::Relu},       {"LeakyReluBackward0", Unary::LeakyRelu},
      {"SoftplusBackward0", Unary::Softplus}, {"ClampBackward1", Unary::Clamp},
      {"PowBackward0", Unary::PowScalar}};
  FusedStep s;
  if (auto b = binary.find(n.op_name); b != binary.end()) {
    s.kind = Kind::Binary;
    s.op = static_cast<int>(b->second);
    return s;
  }
  if (auto u = unary.find(n.op_name); u != unary.end()) {
    s.kind = Kind::Unary;
    s.op = static_cast<int>(u->second);
    if (!n.attrs.empty()) s.p = attr_double(n, 0);
    if (n.attrs.size() > 1) s.q = attr_double(n, 1);
    return s;
  }
  return std::nullopt;
}

// ---- the fused backward: reverse-mode over a program's steps, as another program ------------

struct Builder {
  std::vector<FusedStep> steps;
  int push(FusedStep s) {
    steps.push_back(s);
    return static_cast<int>(steps.size()) - 1;
  }
  int cst(double v) {
    FusedStep s;
    s.kind = Kind::Const;
    s.p = v;
    return push(s);
  }
  int un(Unary op, int a, double p = 0, double q = 0) {
    FusedStep s;
    s.kind = Kind::Unary, s.op = static_cast<int>(op), s.a = a, s.p = p, s.q = q;
    return push(s);
  }
  int bin(Binary op, int a, int b) {
    FusedStep s;
    s.kind = math::is_comparison(op) ? Kind::Compare : Kind::Binary;
    s.op = static_cast<int>(op), s.a = a, s.b = b;
    return push(s);
  }
  int sel(int c, int a, int b) {
    FusedStep s;
    s.kind = Kind::Select, s.a = c, s.b = a, s.c = b;
    return push(s);
  }
  int mul(int a, int b) { return bin(Binary::Mul, a, b); }
};

// Adds d(output)/d(operand) contributions of step `s` (adjoint g) to adj. The local derivatives
// are those of the op structs' backward (ops/internal/elementwise.hpp), written with steps.
// Only operands that lead to a wanted input (`dep`) get an adjoint; the rest would be dead work.
void backprop_step(Builder& B, const FusedStep& st, int y, int g, std::vector<int>& adj,
                   const std::vector<bool>& dep) {
  auto acc = [&](int r, int d) {
    if (dep[r]) adj[r] = adj[r] < 0 ? d : B.bin(Binary::Add, adj[r], d);
  };
  const int x = st.a;
  if (st.kind == Kind::Unary) {
    int d = -1;
    switch (static_cast<Unary>(st.op)) {
      case Unary::Neg: d = B.un(Unary::Neg, g); break;
      case Unary::Exp: d = B.mul(g, y); break;
      case Unary::Log: d = B.bin(Binary::Div, g, x); break;
      case Unary::Sqrt: d = B.bin(Binary::Div, g, B.mul(y, B.cst(2))); break;
      case Unary::Abs: d = B.mul(g, B.un(Unary::Sign, x)); break;
      case Unary::Sin: d = B.mul(g, B.un(Unary::Cos, x)); break;
      case Unary::Cos: d = B.un(Unary::Neg, B.mul(g, B.un(Unary::Sin, x))); break;
      case Unary::Tanh: d = B.mul(g, B.bin(Binary::Sub, B.cst(1), B.mul(y, y))); break;
      case Unary::Sigmoid: d = B.mul(B.mul(g, y), B.bin(Binary::Sub, B.cst(1), y)); break;
      case Unary::Relu: d = B.mul(g, B.bin(Binary::Gt, y, B.cst(0))); break;
      case Unary::Erf: {
        const int e = B.un(Unary::Exp, B.un(Unary::Neg, B.mul(x, x)));
        d = B.mul(B.mul(g, B.cst(2.0 / std::sqrt(std::numbers::pi))), e);
        break;
      }
      case Unary::LeakyRelu:
        d = B.sel(B.bin(Binary::Gt, x, B.cst(0)), g, B.mul(g, B.cst(st.p)));
        break;
      case Unary::Softplus: {
        const int bx = B.mul(x, B.cst(st.p));
        d = B.sel(B.bin(Binary::Gt, bx, B.cst(st.q)), g, B.mul(g, B.un(Unary::Sigmoid, bx)));
        break;
      }
      case Unary::Clamp:
        d = B.mul(B.mul(g, B.bin(Binary::Ge, x, B.cst(st.p))), B.bin(Binary::Le, x, B.cst(st.q)));
        break;
      case Unary::PowScalar:
        if (st.p == 0) d = B.cst(0);
        else d = B.mul(B.mul(g, B.cst(st.p)), st.p == 2 ? x : B.un(Unary::PowScalar, x, st.p - 1));
        break;
      default: throw Error("jit::compile: no fused derivative for unary op " + std::to_string(st.op));
    }
    acc(x, d);
    return;
  }
  if (st.kind == Kind::Binary) {
    const int a = st.a, b = st.b;
    switch (static_cast<Binary>(st.op)) {
      case Binary::Add: acc(a, g), acc(b, g); break;
      case Binary::Sub: acc(a, g), acc(b, B.un(Unary::Neg, g)); break;
      case Binary::Mul: acc(a, B.mul(g, b)), acc(b, B.mul(g, a)); break;
      case Binary::Div:
        acc(a, B.bin(Binary::Div, g, b));
        acc(b, B.un(Unary::Neg, B.bin(Binary::Div, B.mul(g, a), B.mul(b, b))));
        break;
      case Binary::Maximum:
      case Binary::Minimum: {
        // dc/2 to each on ties, as the eager op; else all to the winner.
        const Binary loses = static_cast<Binary>(st.op) == Binary::Maximum ? Binary::Lt : Binary::Gt;
        const int share = B.sel(B.bin(Binary::Eq, a, b), B.mul(g, B.cst(0.5)), g);
        acc(a, B.sel(B.bin(loses, a, b), B.cst(0), share));
        acc(b, B.sel(B.bin(loses, b, a), B.cst(0), share));
        break;
      }
      default: throw Error("jit::compile: no fused derivative for binary op " + std::to_string(st.op));
    }
    return;
  }
  if (st.kind == Kind::Select) {  // d/dcond = 0
    acc(st.b, B.sel(st.a, g, B.cst(0)));
    acc(st.c, B.sel(st.a, B.cst(0), g));
  }
  // Input, Const, Compare: nothing flows further.
}

// Drops the steps no output depends on (a recomputed value the derivatives do not read).
FusedProgram prune(FusedProgram p) {
  const size_t S = p.steps.size();
  std::vector<bool> live(S, false);
  for (const auto& o : p.outputs) live[o.reg] = true;
  for (size_t s = S; s-- > 0;) {
    if (!live[s]) continue;
    for (int r : {p.steps[s].a, p.steps[s].b, p.steps[s].c})
      if (r >= 0) live[r] = true;
  }
  std::vector<int> at(S, -1);
  std::vector<FusedStep> kept;
  for (size_t s = 0; s < S; ++s) {
    if (!live[s]) continue;
    FusedStep st = p.steps[s];
    for (int* r : {&st.a, &st.b, &st.c})
      if (*r >= 0) *r = at[*r];
    at[s] = static_cast<int>(kept.size());
    kept.push_back(st);
  }
  for (auto& o : p.outputs) o.reg = at[o.reg];
  p.steps = std::move(kept);
  return p;
}

// The backward program of `fwd` (n_in inputs): inputs = fwd's inputs, then one upstream gradient
// per fwd output (expanded to fwd.shape); outputs = the gradients of the inputs in `wanted`.
// `saved` lists forward registers whose values the forward wrote out (inputs n_in + outputs + j):
// read back instead of recomputed.
FusedProgram backward_program(const FusedProgram& fwd, size_t n_in, const std::vector<size_t>& wanted,
                              const std::vector<int>& saved) {
  Builder B;
  B.steps = fwd.steps;  // recompute the cheap forward values tile by tile
  for (size_t j = 0; j < saved.size(); ++j) {
    FusedStep in;
    in.kind = Kind::Input;
    in.index = static_cast<int64_t>(n_in + fwd.outputs.size() + j);
    B.steps[saved[j]] = in;
  }
  std::vector<int> adj(fwd.steps.size(), -1);
  auto grow = [&] { adj.resize(B.steps.size(), -1); };
  std::vector<bool> dep(fwd.steps.size(), false);  // depends on a wanted input
  for (size_t s = 0; s < fwd.steps.size(); ++s) {
    const FusedStep& st = fwd.steps[s];
    if (st.kind == Kind::Input)
      dep[s] = std::find(wanted.begin(), wanted.end(), static_cast<size_t>(st.index)) != wanted.end();
    for (int r : {st.a, st.b, st.c})
      if (r >= 0 && dep[r]) dep[s] = true;
  }
  for (size_t k = 0; k < fwd.outputs.size(); ++k) {
    FusedStep in;
    in.kind = Kind::Input;
    in.index = static_cast<int64_t>(n_in + k);
    int g = B.push(in);
    if (fwd.outputs[k].reduce != Reduce::None && fwd.outputs[k].scale != 1)
      g = B.mul(g, B.cst(fwd.outputs[k].scale));
    grow();
    const int r = fwd.outputs[k].reg;
    adj[r] = adj[r] < 0 ? g : B.bin(Binary::Add, adj[r], g);
    grow();
  }
  for (size_t s = fwd.steps.size(); s-- > 0;) {
    if (adj[s] < 0) continue;
    if (!dep[s]) continue;
    backprop_step(B, fwd.steps[s], static_cast<int>(s), adj[s], adj, dep);
    grow();
  }
  FusedProgram p;
  p.shape = fwd.shape;
  p.dtype = fwd.dtype;
  for (size_t i : wanted) {
    int reg = -1;
    for (size_t s = 0; s < fwd.steps.size(); ++s)
      if (fwd.steps[s].kind == Kind::Input && fwd.steps[s].index == static_cast<int64_t>(i)) reg = static_cast<int>(s);
    int g = reg >= 0 && adj[reg] >= 0 ? adj[reg] : B.cst(0);
    p.outputs.push_back({g, Reduce::None, 1});
  }
  p.steps = std::move(B.steps);
  return prune(std::move(p));
}

// ---- regions ----------------------------------------------------------------------------------

// Formulas worth saving for backward rather than recomputing (a libm-class function each).
bool costly(Unary op) {
  switch (op) {
    case Unary::Exp: case Unary::Log: case Unary::Sin: case Unary::Cos: case Unary::Tanh:
    case Unary::Sigmoid: case Unary::Erf: case Unary::Softplus: case Unary::PowScalar:
      return true;
    default:
      return false;
  }
}

struct Region {
  std::vector<int> nodes;     // graph nodes it replaces, in order
  std::vector<int> inputs;    // graph values read (their own shapes: expanded when run)
  std::vector<int> outputs;   // graph values written, one per program output
  FusedProgram program;
  // Training: `program` plus outputs for the values of the costly formulas (erf, exp, tanh ...),
  // so the fused backward reads them instead of recomputing them (as eager saves them).
  FusedProgram train_program;
  std::vector<int> saved_regs;
  int compute_ops = 0;
  std::string kinds;          // "Mul, Add, Relu"
};

// The fused backward node of one region call.
class FusedNode : public autograd::Node {
 public:
  FusedNode(std::shared_ptr<const Region> r, const std::vector<Tensor>& inputs,
            const std::vector<Tensor>& values)
      : region_(std::move(r)), saved_(inputs.size()), values_(values.size()) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      saved_[i].save(inputs[i], this, /*is_output=*/false);
      register_saved(&saved_[i]);
      shapes_.push_back(inputs[i].sizes());
    }
    for (size_t j = 0; j < values.size(); ++j) {
      values_[j].save(values[j], this, /*is_output=*/false);
      register_saved(&values_[j]);
    }
  }
  std::string name() const override { return "FusedBackward0"; }
  autograd::GradList apply(autograd::GradList&& grads) override {
    GRADLAB_CHECK(!GradMode::is_enabled(), AutogradError, "jit::compile",
                  "double backward (create_graph) through a fused region is not supported",
                  "backward without create_graph", "create_graph=true",
                  "call the function uncompiled for higher derivatives");
    const FusedProgram& fwd = region_->program;
    std::vector<Tensor> ins;
    for (auto& s : saved_) ins.push_back(s.unpack().expand(fwd.shape));
    for (size_t k = 0; k < grads.size(); ++k) {
      Tensor g = grads[k].contiguous();
      if (fwd.outputs[k].reduce == Reduce::All) g = g.reshape({}).expand(fwd.shape);
      else if (fwd.outputs[k].reduce == Reduce::LastDim) {
        Shape s = fwd.shape;
        s.back() = 1;
        g = g.reshape(s).expand(fwd.shape);
      }
      ins.push_back(g);
    }
    std::vector<size_t> wanted;
    for (size_t i = 0; i < saved_.size(); ++i)
      if (needs_input_grad(i)) wanted.push_back(i);
    for (auto& v : values_) ins.push_back(v.unpack());
    std::vector<Tensor> dx =
        kern::run_fused(backward_program(fwd, saved_.size(), wanted, region_->saved_regs), ins);
    autograd::GradList out(saved_.size());
    for (size_t k = 0; k < wanted.size(); ++k) {
      const size_t i = wanted[k];
      out[i] = dx[k].sizes() == shapes_[i] ? dx[k] : sum_to(dx[k], shapes_[i]);
    }
    return out;
  }

 private:
  std::shared_ptr<const Region> region_;
  std::vector<autograd::SavedTensor> saved_, values_;
  std::vector<Shape> shapes_;
};

std::string signature(const std::vector<Tensor>& in) {
  std::ostringstream os;
  os << (GradMode::is_enabled() ? "g" : "n");
  for (const auto& t : in)
    os << "|" << to_string(t.dtype()) << shape_str(t.sizes()) << t.device().str()
       << (t.requires_grad() ? "r" : "");
  return os.str();
}

}  // namespace

// One specialization: the graph and how each of its nodes runs.
struct Plan {
  Graph graph;
  bool eager = false;      // run fn itself (the trace could not be trusted)
  std::string eager_reason;
  struct Item {
    int node = -1;         // a graph node replayed eagerly, or
    std::shared_ptr<const Region> region;  // a fused region
  };
  std::vector<Item> items;
  std::vector<std::string> notes;  // eager ops and why
};

namespace {

std::shared_ptr<Plan> build_plan(Graph g, const CompileOptions& opt) {
  auto plan = std::make_shared<Plan>();
  plan->graph = std::move(g);
  const Graph& G = plan->graph;
  if (!G.warnings.empty()) {
    plan->eager = true;
    const bool random = G.warnings.back().find("random numbers") != std::string::npos;
    plan->eager_reason =
        random ? "the function draws random numbers while traced (a trace would freeze them), so it runs eagerly"
               : "the function reads tensor values on the host while traced (" +
                     std::to_string(G.warnings.size()) +
                     " TracerWarning); its control flow may depend on data, so it runs eagerly";
    return plan;
  }
  // Uses of each value outside a given node (to find region outputs).
  std::vector<std::vector<int>> users(G.values.size());
  for (size_t k = 0; k < G.nodes.size(); ++k)
    for (int v : G.nodes[k].inputs) users[v].push_back(static_cast<int>(k));
  std::vector<bool> is_output(G.values.size(), false);
  for (int v : G.outputs) is_output[v] = true;

  Region cur;
  std::map<int, int> reg;  // graph value -> register of cur
  std::set<int> absorbed_expands;
  bool have_shape = false;
  Device cur_device;

  auto input_reg = [&](int v) {
    for (size_t i = 0; i < cur.inputs.size(); ++i)
      if (cur.inputs[i] == v) return reg.at(v);
    FusedStep s;
    s.kind = Kind::Input;
    s.index = static_cast<int64_t>(cur.inputs.size());
    cur.inputs.push_back(v);
    cur.program.steps.push_back(s);
    return reg[v] = static_cast<int>(cur.program.steps.size()) - 1;
  };
  std::vector<Region> regions;
  std::vector<Plan::Item> items;
  auto close = [&] {
    if (cur.nodes.empty()) return;
    if (cur.compute_ops >= opt.min_region_ops) {
      // Outputs: values made inside and read outside (or returned).
      std::set<int> inside(cur.nodes.begin(), cur.nodes.end());
      for (int k : cur.nodes) {
        const Node& n = G.nodes[k];
        const int v = n.outputs[0];
        if (n.op_name.rfind("SumBackward", 0) == 0) continue;  // added below
        bool outside = is_output[v];
        for (int u : users[v]) outside = outside || !inside.count(u);
        if (outside && n.op_name != "ExpandBackward0") {
          cur.outputs.push_back(v);
          cur.program.outputs.push_back({reg.at(v), Reduce::None, 1});
        }
      }
      for (int k : cur.nodes)  // an absorbed Expand read outside runs eagerly as well (a view)
        if (G.nodes[k].op_name == "ExpandBackward0") {
          bool outside = is_output[G.nodes[k].outputs[0]];
          for (int u : users[G.nodes[k].outputs[0]]) outside = outside || !inside.count(u);
          if (outside) items.push_back({k, nullptr});
        }
      cur.train_program = cur.program;
      for (size_t k = 0; k < cur.program.steps.size(); ++k) {
        const FusedStep& st = cur.program.steps[k];
        if (st.kind == Kind::Unary && costly(static_cast<Unary>(st.op))) {
          cur.saved_regs.push_back(static_cast<int>(k));
          cur.train_program.outputs.push_back({static_cast<int>(k), Reduce::None, 1});
        }
      }
      auto r = std::make_shared<Region>(cur);
      items.push_back({-1, r});
    } else {
      for (int k : cur.nodes) {
        items.push_back({k, nullptr});
        if (G.nodes[k].op_name != "ExpandBackward0")
          plan->notes.push_back(G.nodes[k].kind + ": ran eager (a lone elementwise op: nothing to fuse it with)");
      }
    }
    cur = Region{};
    reg.clear();
    have_shape = false;
  };

  for (size_t k = 0; k < G.nodes.size(); ++k) {
    const Node& n = G.nodes[k];
    const int ki = static_cast<int>(k);
    std::string why;
    const Value& out = G.values[n.outputs.at(0)];
    std::string dev_why;
    const bool dtype_ok = out.dtype == kFloat32 || out.dtype == kFloat64;
    const bool dev_ok = kern::fused_supported(out.device, &dev_why);
    auto same_kind = [&] { return out.dtype == cur.program.dtype && out.device == cur_device; };
    if (!opt.fuse) why = "fusion is off (CompileOptions::fuse)";
    else if (!dtype_ok) why = "dtype " + to_string(out.dtype) + " (fused regions are float32 / float64)";
    else if (!dev_ok) why = dev_why;
    const bool is_expand = n.op_name == "ExpandBackward0";
    const bool is_sum = n.op_name == "SumBackward0" || n.op_name == "SumBackward1";
    std::optional<FusedStep> step = why.empty() ? step_of(n) : std::nullopt;
    if (why.empty() && is_expand) {
      // x.expand(shape) of a value from outside the region: a broadcast input.
      const int in = n.inputs[0];
      if (reg.count(in) && G.values[in].shape != out.shape) {
        close();
      }
      if (have_shape && (out.shape != cur.program.shape || !same_kind())) close();
      if (!have_shape) {
        cur.program.shape = out.shape, cur.program.dtype = out.dtype, cur_device = out.device, have_shape = true;
      }
      reg[n.outputs[0]] = reg.count(in) ? reg.at(in) : input_reg(in);
      cur.nodes.push_back(ki);
      continue;
    }
    if (why.empty() && is_sum && have_shape && reg.count(n.inputs[0]) &&
        G.values[n.inputs[0]].shape == cur.program.shape) {
      const auto& dims = std::get<std::vector<int64_t>>(n.attrs.at(0));
      const int64_t rank = static_cast<int64_t>(cur.program.shape.size());
      Reduce red = Reduce::None;
      if (n.op_name == "SumBackward0" || static_cast<int64_t>(dims.size()) == rank) red = Reduce::All;
      else if (dims.size() == 1 && dims[0] == rank - 1) red = Reduce::LastDim;
      if (red != Reduce::None) {
        cur.nodes.push_back(ki);
        cur.outputs.push_back(n.outputs[0]);
        cur.program.outputs.push_back({reg.at(n.inputs[0]), red, 1});
        cur.kinds += (cur.kinds.empty() ? "" : ", ") + std::string(red == Reduce::All ? "Sum" : "Sum(-1)");
        close();
        continue;
      }
    }
    if (step) {
      // Operands: registers of this region, or same-shaped values from outside.
      bool fits = true;
      if (have_shape && (out.shape != cur.program.shape || !same_kind())) close();
      for (int v : n.inputs)
        if (!reg.count(v) && G.values[v].shape != out.shape) fits = false;
      if (fits) {
        if (!have_shape) cur.program.shape = out.shape, cur.program.dtype = out.dtype, cur_device = out.device, have_shape = true;
        FusedStep s = *step;
        s.a = reg.count(n.inputs[0]) ? reg.at(n.inputs[0]) : input_reg(n.inputs[0]);
        if (s.kind == Kind::Binary) s.b = reg.count(n.inputs[1]) ? reg.at(n.inputs[1]) : input_reg(n.inputs[1]);
        cur.program.steps.push_back(s);
        reg[n.outputs[0]] = static_cast<int>(cur.program.steps.size()) - 1;
        cur.nodes.push_back(ki);
        cur.kinds += (cur.kinds.empty() ? "" : ", ") + n.kind;
        ++cur.compute_ops;
        continue;
      }
      why = "operands of different shapes without an expand";
    }
    if (why.empty()) {
      if (is_sum && !reg.count(n.inputs[0]))
        why = "a reduction with no elementwise chain before it to fuse with";
      else if (is_sum) why = "a reduction over other dims than all or the last";
      else if (n.op_name == "PowBackward1") why = "pow with a tensor exponent is not fused";
      else why = "not an elementwise op";
    }
    close();
    items.push_back({ki, nullptr});
    if (!is_expand) plan->notes.push_back(n.kind + ": ran eager (" + why + ")");
  }
  close();
  plan->items = std::move(items);
  return plan;
}

std::vector<Tensor> run_region(const Region& r, const std::shared_ptr<const Region>& shared,
                               std::vector<Tensor>& env, const Graph& G) {
  std::vector<Tensor> ins, expanded;
  bool need_grad = false;
  for (int v : r.inputs) {
    ins.push_back(env[v]);
    need_grad = need_grad || env[v].requires_grad();
  }
  need_grad = need_grad && GradMode::is_enabled();
  std::vector<Tensor> outs, values;
  {
    NoGradGuard no_grad;
    for (const auto& t : ins) expanded.push_back(t.sizes() == r.program.shape ? t : t.expand(r.program.shape));
    outs = kern::run_fused(need_grad ? r.train_program : r.program, expanded);
    values.assign(outs.begin() + static_cast<std::ptrdiff_t>(r.outputs.size()), outs.end());
    outs.resize(r.outputs.size());
    for (size_t k = 0; k < outs.size(); ++k)
      if (outs[k].sizes() != G.values[r.outputs[k]].shape) outs[k] = outs[k].reshape(G.values[r.outputs[k]].shape);
  }
  if (need_grad) {
    auto node = std::make_shared<FusedNode>(shared, ins, values);
    std::vector<const Tensor*> in_ptrs;
    for (const auto& t : ins) in_ptrs.push_back(&t);
    std::vector<Tensor*> out_ptrs;
    for (auto& t : outs) out_ptrs.push_back(&t);
    autograd::connect(node, in_ptrs, out_ptrs);
  }
  return outs;
}

std::vector<Tensor> run_plan(const Plan& p, const std::vector<Tensor>& inputs) {
  const Graph& G = p.graph;
  std::vector<Tensor> env(G.values.size());
  for (size_t i = 0; i < inputs.size(); ++i) env[G.inputs[i]] = inputs[i];
  for (size_t i = 0; i < G.values.size(); ++i)
    if (G.values[i].kind == Value::Kind::Constant) env[i] = G.values[i].constant;
  for (const auto& item : p.items) {
    if (item.region) {
      std::vector<Tensor> outs = run_region(*item.region, item.region, env, G);
      for (size_t k = 0; k < outs.size(); ++k) env[item.region->outputs[k]] = outs[k];
      continue;
    }
    const Node& n = G.nodes[item.node];
    std::vector<Tensor> args;
    for (int id : n.inputs) args.push_back(env[id]);
    std::vector<Tensor> outs = n.replay(args);
    for (size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k) env[n.outputs[k]] = outs[k];
  }
  std::vector<Tensor> out;
  for (int id : G.outputs) out.push_back(env[id]);
  return out;
}

}  // namespace

CompiledFunction::CompiledFunction(TracedFn fn, CompileOptions options)
    : fn_(std::move(fn)), options_(options) {}

std::vector<Tensor> CompiledFunction::operator()(const std::vector<Tensor>& inputs) {
  const std::string key = signature(inputs);
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    TraceOptions topt;
    topt.print_warnings = false;
    it = plans_.emplace(key, build_plan(trace(fn_, inputs, topt), options_)).first;
  }
  last_ = it->second;
  if (last_->eager) return fn_(inputs);
  return run_plan(*last_, inputs);
}

Tensor CompiledFunction::operator()(const Tensor& input) {
  std::vector<Tensor> r = (*this)(std::vector<Tensor>{input});
  GRADLAB_CHECK(r.size() == 1, ValueError, "CompiledFunction", "the function has several outputs",
                "1 output", std::to_string(r.size()), "call it with a list of inputs");
  return r[0];
}

int CompiledFunction::fused_regions() const {
  if (!last_) return 0;
  int n = 0;
  for (const auto& item : last_->items) n += item.region ? 1 : 0;
  return n;
}

std::string CompiledFunction::report() const {
  if (!last_) return "not called yet\n";
  if (last_->eager) return "eager: " + last_->eager_reason + "\n";
  std::ostringstream os;
  int k = 0;
  for (const auto& item : last_->items) {
    if (!item.region) continue;
    const Region& r = *item.region;
    os << "fused region " << k++ << ": " << r.compute_ops << " ops (" << r.kinds << ") in one pass over "
       << to_string(r.program.dtype) << shape_str(r.program.shape) << ", " << r.inputs.size()
       << " input(s), " << r.outputs.size() << " output(s)\n";
  }
  for (const auto& n : last_->notes) os << n << "\n";
  return os.str();
}

CompiledFunction compile(TracedFn fn, CompileOptions options) {
  return CompiledFunction(std::move(fn), options);
}

CompiledFunction compile(std::function<Tensor(const Tensor&)> fn, CompileOptions options) {
  return CompiledFunction(
      [f = std::move(fn)](const std::vector<Tensor>& in) { return std::vector<Tensor>{f(in.at(0))}; },
      options);
}

}  // namespace gradlab::jit

// The planner of jit::compile: walks a traced graph in order and cuts it into fused regions
// (runs of elementwise ops over one shape, with broadcast inputs, optionally ended by a sum) and
// eager nodes, each eager one with its reason. What fuses is read from the ops' traits
// (kFormula, kFusion: ops/op_traits.hpp), never from their names.

#include <map>
#include <optional>
#include <set>

#include "gradlab/jit/plan.hpp"

namespace gradlab::jit {

using autograd::Formula;
using autograd::Fusion;
using kern::FusedOutput;
using kern::FusedStep;
using Kind = FusedStep::Kind;
using Reduce = FusedOutput::Reduce;

namespace {

Fusion fusion_of(const Node& n) { return n.op ? n.op->fusion : Fusion::None; }

// The fused step of an elementwise node (its operands still to fill), or none.
std::optional<FusedStep> step_of(const Node& n) {
  if (fusion_of(n) != Fusion::Elementwise) return std::nullopt;
  const Formula f = n.op->formula;
  FusedStep s;
  s.op = f.op;
  s.kind = f.kind == Formula::Kind::Binary ? Kind::Binary : Kind::Unary;
  if (s.kind == Kind::Unary) {
    auto real = [&](size_t i) {
      if (auto* d = std::get_if<double>(&n.attrs[i])) return *d;
      return static_cast<double>(std::get<int64_t>(n.attrs[i]));
    };
    if (!n.attrs.empty()) s.p = real(0);
    if (n.attrs.size() > 1) s.q = real(1);
  }
  return s;
}

class Planner {
 public:
  Planner(const Graph& g, const CompileOptions& opt, Plan& plan) : G(g), opt_(opt), plan_(plan) {
    users_.resize(G.values.size());
    for (size_t k = 0; k < G.nodes.size(); ++k)
      for (int v : G.nodes[k].inputs) users_[v].push_back(static_cast<int>(k));
    is_output_.assign(G.values.size(), false);
    for (int v : G.outputs) is_output_[v] = true;
  }

  void run() {
    for (size_t k = 0; k < G.nodes.size(); ++k) add(static_cast<int>(k));
    close();
  }

 private:
  // One node: into the open region, or eager (closing the region first).
  void add(int k) {
    const Node& n = G.nodes[k];
    const Value& out = G.values[n.outputs.at(0)];
    std::string why = unfusable(out);
    const Fusion fusion = fusion_of(n);
    if (why.empty()) {
      if (fusion == Fusion::Broadcast) return absorb_expand(n, k, out);
      if (fusion == Fusion::Sum && absorb_sum(n, k)) return;
      if (fusion == Fusion::Elementwise) {
        if (absorb_step(n, k, out)) return;
        why = "operands of different shapes without an expand";
      }
    }
    if (why.empty()) {
      if (fusion == Fusion::Sum && !reg_.count(n.inputs[0])) why = "a reduction with no elementwise chain before it to fuse with";
      else if (fusion == Fusion::Sum) why = "a reduction over other dims than all or the last";
      else if (n.op && n.op->formula.kind != Formula::Kind::None) why = "an elementwise op that does not fuse (its kFusion trait)";
      else why = "not an elementwise op";
    }
    close();
    plan_.items.push_back({k, nullptr});
    if (fusion != Fusion::Broadcast) plan_.notes.push_back(n.kind + ": ran eager (" + why + ")");
  }

  // Why values like `out` cannot be in a fused region at all, or "".
  std::string unfusable(const Value& out) const {
    std::string dev_why;
    if (!opt_.fuse) return "fusion is off (CompileOptions::fuse)";
    if (out.dtype != kFloat32 && out.dtype != kFloat64)
      return "dtype " + to_string(out.dtype) + " (fused regions are float32 / float64)";
    if (!kern::fused_supported(out.device, &dev_why)) return dev_why;
    return "";
  }

  // x.expand(shape) of a value from outside the region: a broadcast input.
  void absorb_expand(const Node& n, int k, const Value& out) {
    const int in = n.inputs[0];
    if (reg_.count(in) && G.values[in].shape != out.shape) close();
    open_for(out);
    reg_[n.outputs[0]] = reg_.count(in) ? reg_.at(in) : input_reg(in);
    cur_.nodes.push_back(k);
  }

  // A sum over all dims or the last one of a value of the region ends it.
  bool absorb_sum(const Node& n, int k) {
    const int in = n.inputs[0];
    if (!open_ || !reg_.count(in) || G.values[in].shape != cur_.program.shape) return false;
    const auto& dims = std::get<std::vector<int64_t>>(n.attrs.at(0));
    const int64_t rank = static_cast<int64_t>(cur_.program.shape.size());
    Reduce red = Reduce::None;
    if (static_cast<int64_t>(dims.size()) == rank) red = Reduce::All;
    else if (dims.size() == 1 && dims[0] == rank - 1) red = Reduce::LastDim;
    if (red == Reduce::None) return false;
    cur_.nodes.push_back(k);
    cur_.outputs.push_back(n.outputs[0]);
    cur_.program.outputs.push_back({reg_.at(in), red, 1});
    note_kind(red == Reduce::All ? "Sum" : "Sum(-1)");
    close();
    return true;
  }

  // An elementwise op whose operands are registers or same-shaped values from outside.
  bool absorb_step(const Node& n, int k, const Value& out) {
    std::optional<FusedStep> step = step_of(n);
    if (open_ && !same_kind(out)) close();
    for (int v : n.inputs)
      if (!reg_.count(v) && G.values[v].shape != out.shape) return false;
    open_for(out);
    FusedStep s = *step;
    s.a = operand(n.inputs[0]);
    if (s.kind == Kind::Binary) s.b = operand(n.inputs[1]);
    push(s, n.op);
    reg_[n.outputs[0]] = static_cast<int>(cur_.program.steps.size()) - 1;
    cur_.nodes.push_back(k);
    note_kind(n.kind);
    ++cur_.compute_ops;
    return true;
  }

  bool same_kind(const Value& out) const {
    return out.shape == cur_.program.shape && out.dtype == cur_.program.dtype && out.device == device_;
  }
  // Opens a region over out's shape, dtype and device (closing one of another kind).
  void open_for(const Value& out) {
    if (open_ && !same_kind(out)) close();
    if (open_) return;
    cur_.program.shape = out.shape, cur_.program.dtype = out.dtype, device_ = out.device, open_ = true;
  }
  void push(const FusedStep& s, const autograd::OpInfo* op) {
    cur_.program.steps.push_back(s);
    cur_.step_ops.push_back(op);
  }
  int operand(int v) { return reg_.count(v) ? reg_.at(v) : input_reg(v); }
  int input_reg(int v) {
    for (int known : cur_.inputs)
      if (known == v) return reg_.at(v);
    FusedStep s;
    s.kind = Kind::Input;
    s.index = static_cast<int64_t>(cur_.inputs.size());
    cur_.inputs.push_back(v);
    push(s, nullptr);
    return reg_[v] = static_cast<int>(cur_.program.steps.size()) - 1;
  }
  void note_kind(const std::string& kind) { cur_.kinds += (cur_.kinds.empty() ? "" : ", ") + kind; }
  bool read_outside(int v, const std::set<int>& inside) const {
    bool outside = is_output_[v];
    for (int u : users_[v]) outside = outside || !inside.count(u);
    return outside;
  }

  // Ends the open region: a fused item when it has enough compute ops, else its nodes run eager.
  void close() {
    if (cur_.nodes.empty()) return reset();
    if (cur_.compute_ops < opt_.min_region_ops) {
      for (int k : cur_.nodes) {
        plan_.items.push_back({k, nullptr});
        if (fusion_of(G.nodes[k]) != Fusion::Broadcast)
          plan_.notes.push_back(G.nodes[k].kind + ": ran eager (a lone elementwise op: nothing to fuse it with)");
      }
      return reset();
    }
    // Outputs: values made inside and read outside (or returned); sums were added already.
    const std::set<int> inside(cur_.nodes.begin(), cur_.nodes.end());
    for (int k : cur_.nodes) {
      const Fusion f = fusion_of(G.nodes[k]);
      const int v = G.nodes[k].outputs[0];
      if (f == Fusion::Sum || f == Fusion::Broadcast || !read_outside(v, inside)) continue;
      cur_.outputs.push_back(v);
      cur_.program.outputs.push_back({reg_.at(v), Reduce::None, 1});
    }
    for (int k : cur_.nodes)  // an absorbed expand read outside runs eagerly as well (a view)
      if (fusion_of(G.nodes[k]) == Fusion::Broadcast && read_outside(G.nodes[k].outputs[0], inside))
        plan_.items.push_back({k, nullptr});
    cur_.train_program = cur_.program;
    for (size_t k = 0; k < cur_.program.steps.size(); ++k) {
      const FusedStep& st = cur_.program.steps[k];
      if (st.kind == Kind::Unary && math::costly(static_cast<math::Unary>(st.op)))
        cur_.saved_regs.push_back(static_cast<int>(k));
    }
    // Keep only the values some derivative reads (sigmoid's and exp's read y; sin's reads cos(x),
    // log's x): the backward with every input wanted is the most any call can need, and its
    // pruned program reads saved value j as input n_in + outputs + j only when it uses it.
    if (!cur_.saved_regs.empty()) {
      const size_t n_in = cur_.inputs.size(), first = n_in + cur_.program.outputs.size();
      std::vector<size_t> all(n_in);
      for (size_t i = 0; i < n_in; ++i) all[i] = i;
      std::vector<bool> read(cur_.saved_regs.size(), false);
      for (const FusedStep& st : backward_program(cur_, n_in, all).steps)
        if (st.kind == Kind::Input && static_cast<size_t>(st.index) >= first)
          read[static_cast<size_t>(st.index) - first] = true;
      std::vector<int> kept;
      for (size_t j = 0; j < read.size(); ++j)
        if (read[j]) kept.push_back(cur_.saved_regs[j]);
      cur_.saved_regs = kept;
    }
    for (int k : cur_.saved_regs) cur_.train_program.outputs.push_back({k, Reduce::None, 1});
    plan_.items.push_back({-1, std::make_shared<Region>(cur_)});
    reset();
  }
  void reset() {
    cur_ = Region{};
    reg_.clear();
    open_ = false;
  }

  const Graph& G;
  const CompileOptions& opt_;
  Plan& plan_;
  std::vector<std::vector<int>> users_;  // nodes reading each value
  std::vector<bool> is_output_;
  Region cur_;                           // the open region
  std::map<int, int> reg_;               // graph value -> register of cur_
  bool open_ = false;
  Device device_;
};

}  // namespace

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
  Planner(G, opt, *plan).run();
  return plan;
}

}  // namespace gradlab::jit

// The fused backward of a region: reverse mode over its program's steps, written as another
// program. Each step's local derivative is its op's derivative template (the same one the eager
// backward runs on tensors: ops/internal/elementwise.hpp), run here on registers.

#include <algorithm>

#include "gradlab/backend/fused_builder.hpp"
#include "gradlab/jit/plan.hpp"

namespace gradlab::jit {

using kern::FusedBuilder;
using kern::FusedOutput;
using kern::FusedProgram;
using kern::FusedStep;
using kern::Reg;
using Kind = FusedStep::Kind;
using Reduce = FusedOutput::Reduce;

namespace {

// Adjoints of the forward registers, grown as the builder appends steps.
struct Adjoints {
  std::vector<int> of;      // register -> its adjoint's register, or -1
  std::vector<bool> dep;    // the register depends on a wanted input: only those get adjoints
  void add(FusedBuilder& B, int r, Reg d) {
    if (r < 0 || !d.defined() || !dep[r]) return;
    of[r] = of[r] < 0 ? d.id : (B.reg(of[r]) + d).id;
  }
};

// Adds the contributions of step `s` (value y, adjoint g) to its operands' adjoints.
void backprop_step(FusedBuilder& B, const FusedStep& st, const autograd::OpInfo* op, int y, Reg g,
                   Adjoints& adj) {
  if (!op || !op->fused_derivative) return;  // Input, Const: nothing flows further
  kern::FusedGrad fg;
  fg.dy = g;
  fg.y = B.reg(y);
  fg.in = {B.reg(st.a), st.b >= 0 ? B.reg(st.b) : Reg{}};
  fg.p = st.p, fg.q = st.q;
  fg.want = {adj.dep[st.a], st.b >= 0 && adj.dep[st.b]};
  op->fused_derivative(fg);
  adj.add(B, st.a, fg.grad[0]);
  adj.add(B, st.b, fg.grad[1]);
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

}  // namespace

FusedProgram backward_program(const Region& r, size_t n_in, const std::vector<size_t>& wanted) {
  const FusedProgram& fwd = r.program;
  FusedBuilder B;
  B.steps = fwd.steps;  // recompute the cheap forward values tile by tile
  for (size_t j = 0; j < r.saved_regs.size(); ++j) {  // read back the ones the forward wrote out
    FusedStep in;
    in.kind = Kind::Input;
    in.index = static_cast<int64_t>(n_in + fwd.outputs.size() + j);
    B.steps[r.saved_regs[j]] = in;
  }
  Adjoints adj{std::vector<int>(fwd.steps.size(), -1), std::vector<bool>(fwd.steps.size(), false)};
  auto grow = [&] {
    adj.of.resize(B.steps.size(), -1);
    adj.dep.resize(B.steps.size(), false);
  };
  for (size_t s = 0; s < fwd.steps.size(); ++s) {
    const FusedStep& st = fwd.steps[s];
    if (st.kind == Kind::Input)
      adj.dep[s] = std::find(wanted.begin(), wanted.end(), static_cast<size_t>(st.index)) != wanted.end();
    for (int reg : {st.a, st.b, st.c})
      if (reg >= 0 && adj.dep[reg]) adj.dep[s] = true;
  }
  for (size_t k = 0; k < fwd.outputs.size(); ++k) {
    Reg g = B.input(static_cast<int64_t>(n_in + k));
    if (fwd.outputs[k].reduce != Reduce::None && fwd.outputs[k].scale != 1) g = g * fwd.outputs[k].scale;
    grow();
    adj.add(B, fwd.outputs[k].reg, g);
    grow();
  }
  for (size_t s = fwd.steps.size(); s-- > 0;) {
    if (adj.of[s] < 0 || !adj.dep[s]) continue;
    backprop_step(B, fwd.steps[s], r.step_ops[s], static_cast<int>(s), B.reg(adj.of[s]), adj);
    grow();
  }
  FusedProgram p;
  p.shape = fwd.shape;
  p.dtype = fwd.dtype;
  for (size_t i : wanted) {
    int reg = -1;
    for (size_t s = 0; s < fwd.steps.size(); ++s)
      if (fwd.steps[s].kind == Kind::Input && fwd.steps[s].index == static_cast<int64_t>(i)) reg = static_cast<int>(s);
    const int g = reg >= 0 && adj.of[reg] >= 0 ? adj.of[reg] : B.constant(0).id;
    p.outputs.push_back({g, Reduce::None, 1});
  }
  p.steps = std::move(B.steps);
  return prune(std::move(p));
}

}  // namespace gradlab::jit

// Gradient mutants: deliberately wrong backward formulas, to prove the properties can fail.
//
// Each mutant overrides the backward of one real op struct (ops/internal/*.hpp) with a wrong
// formula (marked MUTANT) through testing::BackwardOverride, installed while the table row's own
// op function records. So the mutated run goes through the same public function, dispatch,
// kernels and saved members as the real op: the one change is the formula. Nothing is copied.
//
// The two composites of the table (softmax, log_softmax) are mutated through the primitive that
// carries the term their mutant drops: softmax = e / Σe loses "- Σ dy*y" when Div's gradient to
// the denominator is dropped, log_softmax = x - logsumexp(x) loses "- softmax Σ dy" when Sub's
// gradient to the subtrahend is dropped.
//
// The engine-level mutant ("= instead of += on fan-out") is not an op's backward: fan-out is the
// engine adding the gradients that reach one tensor from two consumers. It is a custom
// autograd::Function that fans x out to two outputs and whose backward keeps only the last
// incoming gradient (buffer = g1 where the engine does buffer += g1); it replaces the test-only
// "fan_out" row, which the x + x law and gradcheck use.
//
// Controls: every override mutant is run again with a transparent override of the same structs
// (their own backward), which must pass the same properties. The test runs every applicable
// property against every mutant and prints the kill table.

#include <algorithm>
#include <cstdio>

#include "gradlab/ops/internal/elementwise.hpp"
#include "gradlab/ops/internal/index.hpp"
#include "gradlab/ops/internal/linalg.hpp"
#include "gradlab/ops/internal/reduce.hpp"
#include "gradlab/ops/internal/shape.hpp"
#include "gradlab/testing/mutants.hpp"
#include "prop_support.hpp"

namespace {

using namespace proptest;
using namespace gradlab::ops_detail;
using gradlab::autograd::GradList;
using gradlab::testing::BackwardOverride;

// index + 1, wrapped to [0, n): the off-by-one of the gather/scatter mutants.
Tensor shifted(const Tensor& index, int64_t n) {
  Tensor up = add(index, Scalar(int64_t{1}));
  return where(ge(up, Scalar(n)), sub(up, Scalar(n)), up);
}

// ---- mutants as overrides -----------------------------------------------------------------------

// The guards of an installed mutant (one per op struct it overrides).
using Guards = std::vector<std::shared_ptr<void>>;
using Install = std::function<Guards()>;

struct Mutation {
  Install wrong;  ///< the mutant formula
  Install same;   ///< the control: the same structs, overridden by their own backward
};

// `fn` as the backward of each of Ops (Sum<true> and Sum<false> share one formula).
template <class... Ops, class F>
Mutation override_of(F fn) {
  return {[fn] { return Guards{std::make_shared<BackwardOverride<Ops>>(fn)...}; },
          [] {
            return Guards{std::make_shared<BackwardOverride<Ops>>(
                [](Ops& op, const GradList& g) { return op.backward(g); })...};
          }};
}

// The row's own op function, with `install` active while it records.
OpFn with_override(const std::string& row, const Install& install) {
  return [real = spec_named(row).op, install](const TensorList& in, const OpParams& p) {
    const Guards on = install();
    return real(in, p);
  };
}

// (a, b) = (x, x): x handed to two consumers. Backward gets (da, db); the engine's sum is da + db.
struct FanOutAssign : autograd::Function<FanOutAssign> {
  static TensorList forward(autograd::AutogradContext*, Tensor x) { return {x * 1.0, x * 1.0}; }
  static TensorList backward(autograd::AutogradContext*, TensorList g) {
    Tensor buffer = g[0];
    buffer = g[1];  // MUTANT: the engine's InputBuffer does buffer = buffer + g[1]
    return {buffer};
  }
};

struct Mutant {
  std::string name, row, change;
  Mutation mutation;  ///< an op struct's backward overridden (empty for the engine mutant)
  OpFn replacement;   ///< the engine mutant: the row's op replaced outright
  OpFn op() const { return replacement ? replacement : with_override(row, mutation.wrong); }
};

std::vector<Mutant> catalogue() {
  std::vector<Mutant> m;
  auto mutant = [&m](std::string name, std::string row, std::string change, Mutation mu) {
    m.push_back({std::move(name), std::move(row), std::move(change), std::move(mu), {}});
  };

  // ---- binary
  mutant("add_db_negated", "add", "db = -dc (sign flip)",
         override_of<Add>([](Add&, const GradList& g) {
           return GradList{g[0], -g[0]};  // MUTANT: db = -dc
         }));
  mutant("sub_db_sign_lost", "sub", "db = dc (sign flip)",
         override_of<Sub>([](Sub& op, const GradList& g) {
           return GradList{g[0], op.needs_input_grad(1) ? g[0] : Tensor()};  // MUTANT: db = dc
         }));
  mutant("mul_grads_swapped", "mul", "da = dc*a, db = dc*b (swapped)",
         override_of<Mul>([](Mul& op, const GradList& g) {
           // MUTANT: each gradient takes its own operand where the other one belongs
           return GradList{op.needs_input_grad(1) ? g[0] * op.a_.unpack() : Tensor(),
                           op.needs_input_grad(0) ? g[0] * op.b_.unpack() : Tensor()};
         }));
  mutant("mul_ignores_upstream", "mul", "da = b, db = a (dc ignored)",
         override_of<Mul>([](Mul& op, const GradList&) {
           return GradList{op.needs_input_grad(0) ? op.b_.unpack() : Tensor(),  // MUTANT: no dc
                           op.needs_input_grad(1) ? op.a_.unpack() : Tensor()};
         }));
  mutant("div_db_sign", "div", "db = +dc*a/b^2 (sign flip)",
         override_of<Div>([](Div& op, const GradList& g) {
           Tensor b = op.b_.unpack();
           // MUTANT: db = +dc * a / b² (the minus lost)
           return GradList{op.needs_input_grad(0) ? g[0] / b : Tensor(),
                           op.needs_input_grad(1) ? g[0] * op.a_.unpack() / (b * b) : Tensor()};
         }));
  mutant("div_db_b_not_b2", "div", "db = -dc*a/b (factor error)",
         override_of<Div>([](Div& op, const GradList& g) {
           Tensor b = op.b_.unpack();
           // MUTANT: db = -dc * a / b (b, not b²)
           return GradList{op.needs_input_grad(0) ? g[0] / b : Tensor(),
                           op.needs_input_grad(1) ? -g[0] * op.a_.unpack() / b : Tensor()};
         }));
  mutant("maximum_to_smaller", "maximum", "gradient routed to the smaller operand",
         override_of<Maximum>([](Maximum& op, const GradList& g) {
           Tensor a = op.a_.unpack(), b = op.b_.unpack();
           Tensor share = where(eq(a, b), g[0] * 0.5, g[0]);
           // MUTANT: gt for lt: each operand's share is zeroed where it is the larger one
           return GradList{where(gt(a, b), 0.0, share), where(gt(b, a), 0.0, share)};
         }));
  mutant("where_swapped", "where", "da and db branches swapped",
         override_of<Where>([](Where& op, const GradList& g) {
           Tensor c = op.cond_.unpack(), z = zeros_like(g[0]);
           // MUTANT: a gets dy where cond is false, b where it is true
           return GradList{Tensor(), op.needs_input_grad(1) ? where(c, z, g[0]) : Tensor(),
                           op.needs_input_grad(2) ? where(c, g[0], z) : Tensor()};
         }));

  // ---- unary
  mutant("exp_uses_input", "exp", "dx = dy*x (input used instead of output)",
         override_of<Exp>([](Exp& op, const GradList& g) {
           return GradList{g[0] * log(op.y_.unpack())};  // MUTANT: dy * x (x = log y) for dy * y
         }));
  mutant("log_sign", "log", "dx = -dy/x (sign flip)",
         override_of<Log>([](Log& op, const GradList& g) {
           return GradList{-g[0] / op.x_.unpack()};  // MUTANT: sign flipped
         }));
  mutant("sqrt_missing_half", "sqrt", "dx = dy/y (factor 2 missing)",
         override_of<Sqrt>([](Sqrt& op, const GradList& g) {
           return GradList{g[0] / op.y_.unpack()};  // MUTANT: factor 2 missing
         }));
  mutant("abs_sign_dropped", "abs", "dx = dy (sign(x) dropped)",
         override_of<Abs>([](Abs&, const GradList& g) {
           return GradList{g[0]};  // MUTANT: sign(x) dropped
         }));
  mutant("sin_uses_sin", "sin", "dx = dy*sin(x) (wrong derivative)",
         override_of<Sin>([](Sin& op, const GradList& g) {
           return GradList{g[0] * sin(op.x_.unpack())};  // MUTANT: sin for cos
         }));
  mutant("cos_sign_lost", "cos", "dx = dy*sin(x) (minus lost)",
         override_of<Cos>([](Cos& op, const GradList& g) {
           return GradList{g[0] * sin(op.x_.unpack())};  // MUTANT: minus lost
         }));
  mutant("tanh_from_input", "tanh", "dx = dy*(1 - x^2) (input for output)",
         override_of<Tanh>([](Tanh& op, const GradList& g) {
           Tensor y = op.y_.unpack(), x = 0.5 * log((1 + y) / (1 - y));  // x = atanh(y)
           return GradList{g[0] * (1 - x * x)};  // MUTANT: the input where the output y belongs
         }));
  mutant("sigmoid_from_input", "sigmoid", "dx = dy*x*(1 - x) (input for output)",
         override_of<Sigmoid>([](Sigmoid& op, const GradList& g) {
           Tensor y = op.y_.unpack(), x = log(y / (1 - y));  // x = logit(y)
           return GradList{g[0] * x * (1 - x)};  // MUTANT: the input where the output y belongs
         }));
  mutant("erf_missing_constant", "erf", "dx = dy*exp(-x^2) (2/sqrt(pi) missing)",
         override_of<Erf>([](Erf& op, const GradList& g) {
           Tensor x = op.x_.unpack();
           return GradList{g[0] * exp(-(x * x))};  // MUTANT: 2/√π missing
         }));
  mutant("relu_ignores_upstream", "relu", "dx = (y > 0) (dy ignored)",
         override_of<Relu>([](Relu& op, const GradList& g) {
           return GradList{gt(op.y_.unpack(), 0.0).to(g[0].dtype())};  // MUTANT: ignores dy
         }));
  mutant("leaky_relu_slope_lost", "leaky_relu", "dx = 0 for x < 0 (slope lost)",
         override_of<LeakyRelu>([](LeakyRelu& op, const GradList& g) {
           return GradList{where(gt(op.x_.unpack(), 0.0), g[0], g[0] * 0.0)};  // MUTANT: slope lost
         }));
  mutant("clamp_mask_lost", "clamp", "dx = dy everywhere (mask forgotten)",
         override_of<Clamp>([](Clamp&, const GradList& g) {
           return GradList{g[0]};  // MUTANT: the mask is forgotten
         }));
  mutant(
      "pow_exponent_off_by_one", "pow", "dx = dy*p*x^p (p, not p-1)",
      override_of<PowScalar>([](PowScalar& op, const GradList& g) {
        if (op.p == 0) return op.backward(g);
        return GradList{g[0] * op.p * pow(op.x_.unpack(), op.p)};  // MUTANT: exponent p, not p - 1
      }));

  // ---- linear algebra
  mutant("bmm_da_untransposed", "bmm", "dA = dC @ B (B^T expected)",
         override_of<Bmm>([](Bmm& op, const GradList& g) {
           // MUTANT: dA = dC @ B (Bᵀ expected)
           return GradList{
               op.needs_input_grad(0) ? bmm(g[0], op.b_.unpack()) : Tensor(),
               op.needs_input_grad(1) ? bmm(op.a_.unpack().transpose(1, 2), g[0]) : Tensor()};
         }));
  mutant("bmm_grads_swapped", "bmm", "returns (dB, dA)",
         override_of<Bmm>([](Bmm& op, const GradList& g) {
           GradList r = op.backward(g);
           return GradList{r[1], r[0]};  // MUTANT: the two gradients swapped
         }));

  // ---- reductions
  mutant(
      "sum_mean_scaling", "sum", "dx = dy/n (mean's scaling on a sum)",
      override_of<Sum<true>, Sum<false>>([](auto& op, const GradList& g) {
        int64_t n = 1;
        for (auto d : op.dims) n *= op.in_shape[d];
        // MUTANT: / n (mean's backward on a sum)
        return GradList{keep_reduced(g[0], op.in_shape, op.dims, op.keepdim).expand(op.in_shape) /
                        static_cast<double>(n)};
      }));
  mutant("sum_wrong_axis", "sum", "dy unsqueezed at the last dims, not the reduced ones",
         override_of<Sum<true>, Sum<false>>([](auto& op, const GradList& g) {
           if (op.keepdim || op.dims.empty()) return op.backward(g);
           Shape s;  // MUTANT: the reduced dims put back last instead of where they were
           for (int64_t d = 0; d < static_cast<int64_t>(op.in_shape.size()); ++d)
             if (!std::binary_search(op.dims.begin(), op.dims.end(), d))
               s.push_back(op.in_shape[d]);
           s.resize(s.size() + op.dims.size(), 1);
           return GradList{g[0].reshape(s).expand(op.in_shape)};
         }));
  mutant(
      "amax_mask_lost", "amax", "dx = dy everywhere (no argmax mask)",
      override_of<AmaxAmin<true>>([](AmaxAmin<true>& op, const GradList& g) {
        const Shape s = op.x_.unpack().sizes();
        return GradList{keep_reduced(g[0], s, op.dims, op.keepdim).expand(s)};  // MUTANT: no mask
      }));
  mutant("max_dim_off_by_one", "max", "scatter at index + 1",
         override_of<MaxMinDim<true>>([](MaxMinDim<true>& op, const GradList& g) {
           if (op.in_shape.empty()) return op.backward(g);
           Tensor idx = op.idx_.unpack(), dy = g[0];
           if (!op.keepdim) idx = idx.unsqueeze(op.dim), dy = dy.unsqueeze(op.dim);
           Tensor at = shifted(idx, op.in_shape[op.dim]);  // MUTANT: index + 1
           return GradList{scatter_add(zeros(op.in_shape, dy.options()), op.dim, at, dy)};
         }));

  // ---- shapes and indexing
  mutant("expand_missing_sum", "expand", "no sum over broadcast dims (first copy taken)",
         override_of<Expand>([](Expand& op, const GradList& g) {
           Tensor r = g[0];  // MUTANT: no sum over the broadcast dims: the first copy is taken
           while (r.dim() > static_cast<int64_t>(op.in_shape.size())) r = r.select(0, 0);
           for (int64_t d = 0; d < r.dim(); ++d)
             if (op.in_shape[d] == 1 && r.size(d) != 1) r = r.narrow(d, 0, 1);
           return GradList{r.contiguous()};
         }));
  mutant("permute_not_inverted", "permute", "dx = dy.permute(p) (inverse expected)",
         override_of<Permute>([](Permute& op, const GradList& g) {
           return GradList{g[0].permute(op.perm)};  // MUTANT: perm, not its inverse
         }));
  mutant(
      "index_select_off_by_one", "index_select", "index_add at index + 1",
      override_of<IndexSelect>([](IndexSelect& op, const GradList& g) {
        Tensor at = shifted(op.index_.unpack(), op.in_shape[op.dim]);  // MUTANT: index + 1
        return GradList{index_add(zeros(op.in_shape, g[0].options()), op.dim, at, g[0]), Tensor()};
      }));
  mutant("index_add_off_by_one", "index_add", "dsrc = index_select at index + 1",
         override_of<IndexAdd>([](IndexAdd& op, const GradList& g) {
           Tensor at = shifted(op.index_.unpack(), g[0].size(op.dim));  // MUTANT: index + 1
           return GradList{g[0], Tensor(),
                           op.needs_input_grad(2) ? index_select(g[0], op.dim, at) : Tensor()};
         }));
  mutant("gather_off_by_one", "gather", "scatter_add at index + 1",
         override_of<Gather>([](Gather& op, const GradList& g) {
           Tensor at = shifted(op.index_.unpack(), op.in_shape[op.dim]);  // MUTANT: index + 1
           return GradList{scatter_add(zeros(op.in_shape, g[0].options()), op.dim, at, g[0]),
                           Tensor()};
         }));
  mutant("scatter_add_off_by_one", "scatter_add", "dsrc = gather at index + 1",
         override_of<ScatterAdd>([](ScatterAdd& op, const GradList& g) {
           Tensor at = shifted(op.index_.unpack(), g[0].size(op.dim));  // MUTANT: index + 1
           return GradList{g[0], Tensor(),
                           op.needs_input_grad(2) ? gather(g[0], op.dim, at) : Tensor()};
         }));

  // ---- composites, through the primitive that carries the term
  mutant("softmax_no_subtraction", "softmax", "Div: db = 0, so dx = y*dy (- sum dy*y dropped)",
         override_of<Div>([](Div& op, const GradList& g) {
           // MUTANT: y = e / Σe with Σe treated as a constant (db = 0)
           return GradList{op.needs_input_grad(0) ? g[0] / op.b_.unpack() : Tensor(), Tensor()};
         }));
  mutant("log_softmax_no_softmax_term", "log_softmax",
         "Sub: db = 0, so dx = dy (- softmax sum dy dropped)",
         override_of<Sub>([](Sub&, const GradList& g) {
           // MUTANT: y = x - logsumexp(x) with logsumexp treated as a constant (db = 0)
           return GradList{g[0], Tensor()};
         }));

  // ---- the engine
  Mutant fan_out{"fan_out_assign", "fan_out", "engine: buffer = g instead of buffer += g", {}, {}};
  fan_out.replacement = [](const TensorList& in, const OpParams&) {
    return FanOutAssign::apply(in[0]);
  };
  m.push_back(fan_out);
  return m;
}

// ---- the kill table
// -------------------------------------------------------------------------------

struct Property {
  std::string name;
  std::function<void()> body;
};

// Laws that use a row, by row name.
std::vector<Property> laws_for(const std::string& row, const OpLookup& ops) {
  std::vector<Property> r;
  if (row == "reshape")
    r.push_back({"law: reshape round-trip", [ops] { law_reshape_roundtrip(ops); }});
  if (row == "permute") r.push_back({"law: permute inverse", [ops] { law_permute_inverse(ops); }});
  if (row == "softmax" || row == "log_softmax")
    r.push_back({"law: softmax shift", [ops] { law_softmax_shift(ops); }});
  if (row == "add" || row == "fan_out")
    r.push_back({"law: x + x = 2x", [ops] { law_add_self(ops); }});
  if (row == "sum" || row == "expand")
    r.push_back({"law: sum(expand(x))", [ops] { law_sum_expand(ops); }});
  return r;
}

// The "[property:check]" tag a property body fails with (RapidCheck prints the case first).
std::string caught_check(const std::string& message) {
  for (const char* t : {"[gradcheck", "[gradgradcheck", "[law", "[composed", "[reference"}) {
    const auto at = message.find(t);
    if (at == std::string::npos) continue;
    const auto end = message.find(']', at);
    return message.substr(at + 1, end - at - 1);
  }
  return "exception";
}

// The properties a mutant of `row` runs against (its control runs the same ones).
std::vector<Property> properties_for(const std::string& row, const OpFn& op) {
  const OpSpec spec = with_op(spec_named(row), op);
  const OpLookup ops = replace_op(table_ops(), row, op);
  std::vector<Property> props{{"gradcheck", [spec] { gradcheck_property(spec); }}};
  for (auto& l : laws_for(row, ops)) props.push_back(l);
  if (spec.composable)
    props.push_back({"composed graph", [ops, row] { composed_property(ops, row); }});
  return props;
}

TEST(GradientMutants, ControlsPass) {
  // Each override mutant's structs, overridden by their own backward instead: the same properties
  // pass, so what a mutant is caught for is its formula, not the override.
  int runs = 0;
  for (const Mutant& m : catalogue()) {
    if (m.replacement) continue;
    for (const Property& p : properties_for(m.row, with_override(m.row, m.mutation.same))) {
      const RunResult r = run_property(p.body, 20, "control/" + m.name + "/" + p.name);
      EXPECT_FALSE(r.failed || r.gave_up) << m.name << " / " << p.name << ":\n" << r.message;
      ++runs;
    }
  }
  EXPECT_GE(runs, 35);
}

TEST(GradientMutants, EveryMutantIsKilled) {
  const auto mutants = catalogue();
  ASSERT_GE(mutants.size(), 36u);  // the catalogue only grows
  int killed = 0, localized = 0, composable = 0;
  std::printf("\n%-28s %-12s %-46s %-34s %s\n", "mutant", "row", "change",
              "caught by, after n cases", "also caught by");
  std::string survivors, not_localized;
  for (const Mutant& m : mutants) {
    const bool is_composable = spec_named(m.row).composable;
    std::string first, others;
    for (const Property& p : properties_for(m.row, m.op())) {
      const RunResult r =
          run_property(p.body, 100, "mutant/" + m.name + "/" + p.name, /*expect_failure=*/true);
      if (!r.failed) continue;
      // A report the harness could not judge does not count as a kill: the mutant must fail.
      if (caught_check(r.message).ends_with(":inconclusive")) {
        others += (others.empty() ? "" : ", ") + caught_check(r.message) + " (not a kill)";
        continue;
      }
      const std::string what = caught_check(r.message) + " after " + std::to_string(r.cases);
      if (first.empty())
        first = what;
      else
        others += (others.empty() ? "" : ", ") + what;
      if (p.name == "composed graph") {
        const bool named = r.message.find("first op whose local gradient fails: `" + m.row + "`") !=
                           std::string::npos;
        localized += named;
        if (!named) not_localized += "  " + m.name + ":\n" + r.message + "\n";
      }
    }
    composable += is_composable;
    if (!first.empty())
      ++killed;
    else
      survivors += "  " + m.name + "\n";
    std::printf("%-28s %-12s %-46s %-34s %s\n", m.name.c_str(), m.row.c_str(), m.change.c_str(),
                first.empty() ? "SURVIVED" : first.c_str(), others.c_str());
  }
  std::printf(
      "killed %d of %zu mutants (%.0f%%); the composed-graph property named the mutated op first "
      "in %d of %d "
      "graphs with a composable mutant\n(seed %llu)\n",
      killed, mutants.size(), 100.0 * killed / static_cast<double>(mutants.size()), localized,
      composable, static_cast<unsigned long long>(rc_seed()));
  EXPECT_EQ(killed, static_cast<int>(mutants.size())) << "surviving mutants:\n" << survivors;
  EXPECT_EQ(localized, composable)
      << "random graphs where the first failing op was not the mutant:\n"
      << not_localized;
}

}  // namespace

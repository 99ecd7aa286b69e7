// Gradient mutants: deliberately wrong backward formulas, to prove the properties can fail.
//
// Each mutant is a copy of an op struct from src/gradlab/ops/*.cpp with exactly one change
// (marked MUTANT), run through autograd::record like the original, and wrapped as the OpFn of
// the table row it replaces. They are compiled into this test only, never into the library.
//
// The engine-level mutant ("= instead of += on fan-out") cannot be a copy of an op: fan-out is
// the engine adding the gradients that reach one tensor from two consumers. It is expressed as a
// custom autograd::Function that fans x out to two outputs and whose backward keeps only the last
// incoming gradient (buffer = g1 where the engine does buffer += g1); it replaces the test-only
// "fan_out" row, which the x + x law and gradcheck use.
//
// Two ops of the library are composites with no struct to copy (softmax, log_softmax): their
// mutants are fused structs with one term dropped, and the correct fused structs run as
// controls that must pass, so the dropped term is what gets caught.
//
// The test runs every applicable property against every mutant and prints the kill table.

#include <cstdio>
#include <numbers>

#include "gradlab/ops/common.hpp"
#include "prop_support.hpp"

namespace {

using namespace proptest;
using namespace gradlab::ops_detail;
using gradlab::autograd::GradList;

int64_t wrapd(int64_t d, int64_t rank) { return d < 0 ? d + std::max<int64_t>(rank, 1) : d; }

// index + 1, wrapped to [0, n): the off-by-one of the gather/scatter mutants.
Tensor shifted(const Tensor& index, int64_t n) {
  Tensor up = add(index, Scalar(int64_t{1}));
  return where(ge(up, Scalar(n)), sub(up, Scalar(n)), up);
}

// ---- binary -----------------------------------------------------------------------------------

// c = a + b          da = dc, db = dc
struct MutAddNeg : Op<MutAddNeg> {
  static constexpr const char* kName = "AddBackward0";
  Tensor forward(const Tensor& a, const Tensor& b) { return cpu::binary(cpu::Binary::Add, a, b); }
  GradList backward(const GradList& g) { return {g[0], -g[0]}; }  // MUTANT: db = -dc
};

// c = a - b          da = dc, db = -dc
struct MutSubSign : Op<MutSubSign> {
  static constexpr const char* kName = "SubBackward0";
  Tensor forward(const Tensor& a, const Tensor& b) { return cpu::binary(cpu::Binary::Sub, a, b); }
  GradList backward(const GradList& g) {
    return {g[0], needs_input_grad(1) ? g[0] : Tensor()};
  }  // MUTANT: db = dc
};

// c = a * b          da = dc * b, db = dc * a
template <int Fault>
struct MutMul : Op<MutMul<Fault>> {
  static constexpr const char* kName = "MulBackward0";
  SavedTensor a_, b_;
  Tensor forward(const Tensor& a, const Tensor& b) {
    this->save(a_, a);  // MUTANT (both): saves both, the formula picks the wrong one
    this->save(b_, b);
    return cpu::binary(cpu::Binary::Mul, a, b);
  }
  GradList backward(const GradList& g) {
    if constexpr (Fault == 0) return {g[0] * a_.unpack(), g[0] * b_.unpack()};  // MUTANT: swapped
    return {b_.unpack(), a_.unpack()};  // MUTANT: ignores dc
  }
};

// c = a / b          da = dc / b, db = -dc * a / b²
template <int Fault>
struct MutDiv : Op<MutDiv<Fault>> {
  static constexpr const char* kName = "DivBackward0";
  SavedTensor a_, b_;
  Tensor forward(const Tensor& a, const Tensor& b) {
    this->save(b_, b);
    if (b.requires_grad()) this->save(a_, a);
    return cpu::binary(cpu::Binary::Div, a, b);
  }
  GradList backward(const GradList& g) {
    Tensor b = b_.unpack();
    Tensor db;
    if (this->needs_input_grad(1)) {
      if constexpr (Fault == 0)
        db = g[0] * a_.unpack() / (b * b);  // MUTANT: sign flipped
      else
        db = -g[0] * a_.unpack() / b;  // MUTANT: b instead of b²
    }
    return {this->needs_input_grad(0) ? g[0] / b : Tensor(), db};
  }
};

// c = max(a, b)      da = dc where a > b (dc/2 on ties), db likewise
struct MutMaximum : Op<MutMaximum> {
  static constexpr const char* kName = "MaximumBackward0";
  SavedTensor a_, b_;
  Tensor forward(const Tensor& a, const Tensor& b) {
    save(a_, a);
    save(b_, b);
    return cpu::binary(cpu::Binary::Maximum, a, b);
  }
  GradList backward(const GradList& g) {
    Tensor a = a_.unpack(), b = b_.unpack();
    Tensor share = where(eq(a, b), g[0] * 0.5, g[0]);
    return {where(gt(a, b), 0.0, share),
            where(gt(b, a), 0.0, share)};  // MUTANT: to the smaller one
  }
};

// y = cond ? a : b    da = cond ? dy : 0, db = cond ? 0 : dy
struct MutWhere : Op<MutWhere> {
  static constexpr const char* kName = "WhereBackward0";
  SavedTensor cond_;
  Tensor forward(const Tensor& cond, const Tensor& a, const Tensor& b) {
    save(cond_, cond);
    return cpu::where(cond, a, b);
  }
  GradList backward(const GradList& g) {
    Tensor c = cond_.unpack();
    Tensor z = zeros_like(g[0]);
    return {Tensor(),
            needs_input_grad(1) ? where(c, z, g[0]) : Tensor(),  // MUTANT: branches swapped
            needs_input_grad(2) ? where(c, g[0], z) : Tensor()};
  }
};

// ---- unary ------------------------------------------------------------------------------------

// y = exp(x)         dx = dy * y
struct MutExp : Op<MutExp> {
  static constexpr const char* kName = "ExpBackward0";
  SavedTensor x_;
  Tensor forward(const Tensor& x) {
    save(x_, x);  // MUTANT: keeps the input where the output is the derivative
    return cpu::unary(cpu::Unary::Exp, x);
  }
  GradList backward(const GradList& g) { return {g[0] * x_.unpack()}; }
};

// y = log(x)         dx = dy / x
struct MutLog : Op<MutLog> {
  static constexpr const char* kName = "LogBackward0";
  SavedTensor x_;
  Tensor forward(const Tensor& x) {
    save(x_, x);
    return cpu::unary(cpu::Unary::Log, x);
  }
  GradList backward(const GradList& g) { return {-g[0] / x_.unpack()}; }  // MUTANT: sign flipped
};

// y = √x             dx = dy / (2 y)
struct MutSqrt : Op<MutSqrt> {
  static constexpr const char* kName = "SqrtBackward0";
  SavedTensor y_;
  Tensor forward(const Tensor& x) {
    Tensor y = cpu::unary(cpu::Unary::Sqrt, x);
    save(y_, y, kOutput);
    return y;
  }
  GradList backward(const GradList& g) { return {g[0] / y_.unpack()}; }  // MUTANT: factor 2 missing
};

// y = |x|            dx = dy * sign(x)
struct MutAbs : Op<MutAbs> {
  static constexpr const char* kName = "AbsBackward0";
  SavedTensor x_;
  Tensor forward(const Tensor& x) {
    save(x_, x);
    return cpu::unary(cpu::Unary::Abs, x);
  }
  GradList backward(const GradList& g) { return {g[0] * 1.0}; }  // MUTANT: sign(x) dropped
};

// y = sin(x)         dx = dy * cos(x)
struct MutSin : Op<MutSin> {
  static constexpr const char* kName = "SinBackward0";
  SavedTensor x_;
  Tensor forward(const Tensor& x) {
    save(x_, x);
    return cpu::unary(cpu::Unary::Sin, x);
  }
  GradList backward(const GradList& g) { return {g[0] * sin(x_.unpack())}; }  // MUTANT: sin for cos
};

// y = cos(x)         dx = -dy * sin(x)
struct MutCos : Op<MutCos> {
  static constexpr const char* kName = "CosBackward0";
  SavedTensor x_;
  Tensor forward(const Tensor& x) {
    save(x_, x);
    return cpu::unary(cpu::Unary::Cos, x);
  }
  GradList backward(const GradList& g) { return {g[0] * sin(x_.unpack())}; }  // MUTANT: minus lost
};

// y = tanh(x)        dx = dy * (1 - y²)
struct MutTanh : Op<MutTanh> {
  static constexpr const char* kName = "TanhBackward0";
  SavedTensor y_;
  Tensor forward(const Tensor& x) {
    save(y_, x);  // MUTANT: the input saved where the output belongs
    return cpu::unary(cpu::Unary::Tanh, x);
  }
  GradList backward(const GradList& g) {
    Tensor y = y_.unpack();
    return {g[0] * (1 - y * y)};
  }
};

// y = σ(x)           dx = dy * y * (1 - y)
struct MutSigmoid : Op<MutSigmoid> {
  static constexpr const char* kName = "SigmoidBackward0";
  SavedTensor y_;
  Tensor forward(const Tensor& x) {
    save(y_, x);  // MUTANT: the input saved where the output belongs
    return cpu::unary(cpu::Unary::Sigmoid, x);
  }
  GradList backward(const GradList& g) {
    Tensor y = y_.unpack();
    return {g[0] * y * (1 - y)};
  }
};

// y = erf(x)         dx = dy * 2/√π * exp(-x²)
struct MutErf : Op<MutErf> {
  static constexpr const char* kName = "ErfBackward0";
  SavedTensor x_;
  Tensor forward(const Tensor& x) {
    save(x_, x);
    return cpu::unary(cpu::Unary::Erf, x);
  }
  GradList backward(const GradList& g) {
    Tensor x = x_.unpack();
    return {g[0] * exp(-(x * x))};  // MUTANT: 2/√π missing
  }
};

// y = max(x, 0)      dx = dy * (y > 0)
struct MutRelu : Op<MutRelu> {
  static constexpr const char* kName = "ReluBackward0";
  SavedTensor y_;
  Tensor forward(const Tensor& x) {
    Tensor y = cpu::unary(cpu::Unary::Relu, x);
    save(y_, y, kOutput);
    return y;
  }
  GradList backward(const GradList& g) {
    return {gt(y_.unpack(), 0.0).to(g[0].dtype())};
  }  // MUTANT: ignores dy
};

// y = x > 0 ? x : s x    dx = dy * (x > 0 ? 1 : s)
struct MutLeakyRelu : Op<MutLeakyRelu> {
  static constexpr const char* kName = "LeakyReluBackward0";
  SavedTensor x_;
  double slope = 0;
  Tensor forward(const Tensor& x, double s) {
    slope = s;
    save(x_, x);
    return cpu::unary(cpu::Unary::LeakyRelu, x, s);
  }
  GradList backward(const GradList& g) {
    return {where(gt(x_.unpack(), 0.0), g[0], g[0] * 0.0)};
  }  // MUTANT: slope lost
};

// y = clamp(x, lo, hi)   dx = dy where lo <= x <= hi, else 0
struct MutClamp : Op<MutClamp> {
  static constexpr const char* kName = "ClampBackward1";
  SavedTensor x_;
  double lo = -INFINITY, hi = INFINITY;
  Tensor forward(const Tensor& x, double l, double h) {
    lo = l;
    hi = h;
    save(x_, x);
    return cpu::unary(cpu::Unary::Clamp, x, l, h);
  }
  GradList backward(const GradList& g) { return {g[0] * 1.0}; }  // MUTANT: the mask is forgotten
};

// y = x^p            dx = dy * p * x^(p-1)
struct MutPowScalar : Op<MutPowScalar> {
  static constexpr const char* kName = "PowBackward0";
  SavedTensor x_;
  double p = 1;
  Tensor forward(const Tensor& x, double exponent) {
    p = exponent;
    save(x_, x);
    return cpu::unary(cpu::Unary::PowScalar, x, exponent);
  }
  GradList backward(const GradList& g) {
    if (p == 0) return {zeros_like(g[0])};
    return {g[0] * p * pow(x_.unpack(), p)};  // MUTANT: exponent p instead of p - 1
  }
};

// ---- linear algebra ---------------------------------------------------------------------------

// C = A @ B, batched      dA = dC @ Bᵀ, dB = Aᵀ @ dC
template <int Fault>
struct MutBmm : Op<MutBmm<Fault>> {
  static constexpr const char* kName = "BmmBackward0";
  SavedTensor a_, b_;
  Tensor forward(const Tensor& a, const Tensor& b) {
    if (b.requires_grad()) this->save(a_, a);
    if (a.requires_grad()) this->save(b_, b);
    return cpu::bmm(a, b);
  }
  GradList backward(const GradList& g) {
    Tensor da = this->needs_input_grad(0) ? bmm(g[0], b_.unpack().transpose(1, 2)) : Tensor();
    Tensor db = this->needs_input_grad(1) ? bmm(a_.unpack().transpose(1, 2), g[0]) : Tensor();
    if constexpr (Fault == 0)
      da = this->needs_input_grad(0) ? bmm(g[0], b_.unpack()) : Tensor();  // MUTANT: Bᵀ → B
    if constexpr (Fault == 1) return {db, da};  // MUTANT: the two gradients swapped
    return {da, db};
  }
};

// ---- reductions -------------------------------------------------------------------------------

Dims norm_dims(const Tensor& x, const Dims& dims) {
  Dims r;
  if (dims.empty() || x.dim() == 0) {
    for (int64_t d = 0; d < x.dim(); ++d) r.push_back(d);
    return r;
  }
  for (auto d : dims) r.push_back(wrapd(d, x.dim()));
  std::sort(r.begin(), r.end());
  return r;
}

Tensor keep_reduced(const Tensor& g, const Shape& in_shape, const Dims& dims, bool keepdim) {
  if (keepdim || dims.empty()) return g;
  Shape s = in_shape;
  for (auto d : dims) s[d] = 1;
  return g.reshape(s);
}

// y = Σ_dims x       dx = dy broadcast back to x.shape
template <int Fault>
struct MutSum : Op<MutSum<Fault>> {
  static constexpr const char* kName = "SumBackward1";
  Shape in_shape;
  Dims dims;
  bool keepdim = false;
  Tensor forward(const Tensor& x, const Dims& d, bool k) {
    in_shape = x.sizes();
    dims = d;
    keepdim = k;
    return cpu::reduce(cpu::Reduce::Sum, x, d, k);
  }
  GradList backward(const GradList& g) {
    if constexpr (Fault == 0) {
      int64_t n = 1;
      for (auto d : dims) n *= in_shape[d];
      return {keep_reduced(g[0], in_shape, dims, keepdim).expand(in_shape) /
              static_cast<double>(n)};  // MUTANT: /n
    }
    if (keepdim || dims.empty()) return {g[0].expand(in_shape)};
    Shape s;  // MUTANT: the reduced dims put back last instead of where they were
    for (int64_t d = 0; d < static_cast<int64_t>(in_shape.size()); ++d)
      if (!std::binary_search(dims.begin(), dims.end(), d)) s.push_back(in_shape[d]);
    for (size_t k = 0; k < dims.size(); ++k) s.push_back(1);
    return {g[0].reshape(s).expand(in_shape)};
  }
};

// y = max_dims x      dx = dy * (x == y) / (number of ties)
struct MutAmax : Op<MutAmax> {
  static constexpr const char* kName = "AmaxBackward0";
  SavedTensor x_, y_;
  Dims dims;
  bool keepdim = false;
  Tensor forward(const Tensor& x, const Dims& d, bool k) {
    dims = d;
    keepdim = k;
    Tensor y = cpu::reduce(cpu::Reduce::Max, x, d, k);
    save(x_, x);
    save(y_, y, kOutput);
    return y;
  }
  GradList backward(const GradList& g) {
    Tensor x = x_.unpack();
    return {keep_reduced(g[0], x.sizes(), dims, keepdim).expand(x.sizes()) *
            1.0};  // MUTANT: no mask
  }
};

// (y, i) = max over one dim     dx = zeros(x.shape) with dy at the arg positions
struct MutMaxDim : Op<MutMaxDim> {
  static constexpr const char* kName = "MaxBackward0";
  Shape in_shape;
  SavedTensor idx_;
  int64_t dim = 0;
  bool keepdim = false;
  std::vector<Tensor> forward(const Tensor& x, int64_t d, bool k) {
    in_shape = x.sizes();
    dim = d;
    keepdim = k;
    auto [v, i] = cpu::reduce_index(cpu::Reduce::Max, x, d, k);
    save(idx_, i);
    return {v, i};
  }
  GradList backward(const GradList& g) {
    if (in_shape.empty()) return {g[0]};
    Tensor idx = idx_.unpack(), dy = g[0];
    if (!keepdim) {
      idx = idx.unsqueeze(dim);
      dy = dy.unsqueeze(dim);
    }
    return {scatter_add(zeros(in_shape, dy.options()), dim, shifted(idx, in_shape[dim]),
                        dy)};  // MUTANT: idx + 1
  }
};

// ---- shapes and indexing ------------------------------------------------------------------------

// y = x broadcast to `shape`     dx = sum_to(dy, x.shape)
struct MutExpand : Op<MutExpand> {
  static constexpr const char* kName = "ExpandBackward0";
  Shape in_shape;
  Tensor forward(const Tensor& x, const Shape& shape) {
    in_shape = x.sizes();
    Tensor y;
    {
      NoGradGuard ng;
      y = expand(x, shape).detach();
    }
    return make_view(x, y.sizes(), y.strides(), x.storage_offset());
  }
  GradList backward(const GradList& g) {
    // MUTANT: no sum over the broadcast dims: takes the first copy instead.
    Tensor r = g[0];
    while (r.dim() > static_cast<int64_t>(in_shape.size())) r = r.select(0, 0);
    for (int64_t d = 0; d < r.dim(); ++d)
      if (in_shape[d] == 1 && r.size(d) != 1) r = r.narrow(d, 0, 1);
    return {r.contiguous()};
  }
};

// y = x with dims permuted       dx = dy permuted back
struct MutPermute : Op<MutPermute> {
  static constexpr const char* kName = "PermuteBackward0";
  Dims perm;
  Tensor forward(const Tensor& x, const Dims& p) {
    perm = p;
    Shape s;
    Strides st;
    for (auto d : p) {
      s.push_back(x.sizes()[d]);
      st.push_back(x.strides()[d]);
    }
    return make_view(x, s, st, x.storage_offset());
  }
  GradList backward(const GradList& g) {
    return {g[0].permute(perm)};
  }  // MUTANT: perm, not its inverse
};

// y = x[.., index[i], ..] along dim      dx = index_add(zeros(x.shape), dim, index, dy)
struct MutIndexSelect : Op<MutIndexSelect> {
  static constexpr const char* kName = "IndexSelectBackward0";
  Shape in_shape;
  SavedTensor index_;
  int64_t dim = 0;
  Tensor forward(const Tensor& x, int64_t d, const Tensor& index) {
    in_shape = x.sizes();
    dim = d;
    save(index_, index);
    return cpu::index_select(x, d, index);
  }
  GradList backward(const GradList& g) {
    return {index_add(zeros(in_shape, g[0].options()), dim, shifted(index_.unpack(), in_shape[dim]),
                      g[0]),  // MUTANT
            Tensor()};
  }
};

// y = self; y[.., index[i], ..] += src[.., i, ..]      dsrc = index_select(dy, dim, index)
struct MutIndexAdd : Op<MutIndexAdd> {
  static constexpr const char* kName = "IndexAddBackward0";
  SavedTensor index_;
  int64_t dim = 0, n = 0;
  Tensor forward(const Tensor& self, int64_t d, const Tensor& index, const Tensor& src) {
    dim = d;
    n = self.size(d);
    save(index_, index);
    return cpu::index_add(self, d, index, src);
  }
  GradList backward(const GradList& g) {
    return {g[0], Tensor(),
            needs_input_grad(2) ? index_select(g[0], dim, shifted(index_.unpack(), n))
                                : Tensor()};  // MUTANT
  }
};

// y[i][j] = x[i][index[i][j]]      dx = scatter_add(zeros(x.shape), dim, index, dy)
struct MutGather : Op<MutGather> {
  static constexpr const char* kName = "GatherBackward0";
  Shape in_shape;
  SavedTensor index_;
  int64_t dim = 0;
  Tensor forward(const Tensor& x, int64_t d, const Tensor& index) {
    in_shape = x.sizes();
    dim = d;
    save(index_, index);
    return cpu::gather(x, d, index);
  }
  GradList backward(const GradList& g) {
    return {scatter_add(zeros(in_shape, g[0].options()), dim,
                        shifted(index_.unpack(), in_shape[dim]), g[0]),  // MUTANT
            Tensor()};
  }
};

// y = self; y[i][index[i][j]] += src[i][j]      dsrc = gather(dy, dim, index)
struct MutScatterAdd : Op<MutScatterAdd> {
  static constexpr const char* kName = "ScatterAddBackward0";
  SavedTensor index_;
  int64_t dim = 0, n = 0;
  Tensor forward(const Tensor& self, int64_t d, const Tensor& index, const Tensor& src) {
    dim = d;
    n = self.size(d);
    save(index_, index);
    return cpu::scatter_add(self, d, index, src);
  }
  GradList backward(const GradList& g) {
    return {
        g[0], Tensor(),
        needs_input_grad(2) ? gather(g[0], dim, shifted(index_.unpack(), n)) : Tensor()};  // MUTANT
  }
};

// ---- softmax family (fused: the library composes them, so there is no struct to copy) -----------

// y = softmax(x)      dx = y * (dy - Σ dy*y)        (Fault 1 drops the subtraction)
template <int Fault>
struct FusedSoftmax : Op<FusedSoftmax<Fault>> {
  static constexpr const char* kName = "SoftmaxBackward0";
  SavedTensor y_;
  int64_t dim = 0;
  Tensor forward(const Tensor& x, int64_t d) {
    dim = d;
    Tensor e = exp(x - amax(x, {d}, true));
    Tensor y = e / sum(e, {d}, true);
    this->save(y_, y, kOutput);
    return y;
  }
  GradList backward(const GradList& g) {
    Tensor y = y_.unpack();
    if constexpr (Fault == 1) return {y * g[0]};  // MUTANT: "- Σ dy*y" dropped
    return {y * (g[0] - sum(g[0] * y, {dim}, true))};
  }
};

// y = log_softmax(x)  dx = dy - softmax(x) Σ dy     (Fault 1 drops the softmax term)
template <int Fault>
struct FusedLogSoftmax : Op<FusedLogSoftmax<Fault>> {
  static constexpr const char* kName = "LogSoftmaxBackward0";
  SavedTensor y_;
  int64_t dim = 0;
  Tensor forward(const Tensor& x, int64_t d) {
    dim = d;
    Tensor y = x - logsumexp(x, {d}, true);
    this->save(y_, y, kOutput);
    return y;
  }
  GradList backward(const GradList& g) {
    if constexpr (Fault == 1) return {g[0] * 1.0};  // MUTANT: "- softmax Σ dy" dropped
    return {g[0] - exp(y_.unpack()) * sum(g[0], {dim}, true)};
  }
};

// ---- the engine-level mutant: = instead of += where a tensor fans out
// -----------------------------

// (a, b) = (x, x): x handed to two consumers. Backward gets (da, db); the engine's sum is da + db.
struct FanOutAssign : autograd::Function<FanOutAssign> {
  static TensorList forward(autograd::AutogradContext*, Tensor x) { return {x * 1.0, x * 1.0}; }
  static TensorList backward(autograd::AutogradContext*, TensorList g) {
    Tensor buffer = g[0];
    buffer = g[1];  // MUTANT: the engine's InputBuffer does buffer = buffer + g[1]
    return {buffer};
  }
};

// ---- OpFns: how each public function feeds its struct
// ----------------------------------------------

template <class OpT>
OpFn binary_fn(const char* name, bool to_float = false) {
  return [name, to_float](const TensorList& in, const OpParams& p) {
    const Site site = Site::current();
    Tensor b = p.has("scalar") ? wrap_scalar(p.real("scalar"), in[0], name) : in[1];
    auto [x, y] = prepare_binary(name, in[0], b, site, to_float);
    return TensorList{record<OpT>(site, x, y)};
  };
}
template <class OpT>
OpFn unary_fn() {
  return [](const TensorList& in, const OpParams&) {
    return TensorList{record<OpT>(Site::current(), in[0])};
  };
}
template <class OpT>
OpFn sum_fn() {
  return [](const TensorList& in, const OpParams& p) {
    const Dims d = norm_dims(in[0], p.has("dims") ? p.dims("dims") : Dims{});
    return TensorList{record<OpT>(Site::current(), in[0], d, p.has("dims") && p.flag("keepdim"))};
  };
}
template <class OpT>
OpFn bmm_fn() {
  return [](const TensorList& in, const OpParams&) {
    return TensorList{record<OpT>(Site::current(), in[0], in[1])};
  };
}
template <class OpT>
OpFn softmax_fn() {
  return [](const TensorList& in, const OpParams& p) {
    return TensorList{record<OpT>(Site::current(), in[0], wrapd(p.integer("dim"), in[0].dim()))};
  };
}

struct Mutant {
  std::string name, row, change;
  OpFn op;
};

std::vector<Mutant> catalogue() {
  std::vector<Mutant> m;
  m.push_back({"add_db_negated", "add", "db = -dc (sign flip)", binary_fn<MutAddNeg>("add")});
  m.push_back({"sub_db_sign_lost", "sub", "db = dc (sign flip)", binary_fn<MutSubSign>("sub")});
  m.push_back(
      {"mul_grads_swapped", "mul", "da = dc*a, db = dc*b (swapped)", binary_fn<MutMul<0>>("mul")});
  m.push_back(
      {"mul_ignores_upstream", "mul", "da = b, db = a (dc ignored)", binary_fn<MutMul<1>>("mul")});
  m.push_back(
      {"div_db_sign", "div", "db = +dc*a/b^2 (sign flip)", binary_fn<MutDiv<0>>("div", true)});
  m.push_back(
      {"div_db_b_not_b2", "div", "db = -dc*a/b (factor error)", binary_fn<MutDiv<1>>("div", true)});
  m.push_back({"maximum_to_smaller", "maximum", "gradient routed to the smaller operand",
               binary_fn<MutMaximum>("maximum")});
  m.push_back({"where_swapped", "where", "da and db branches swapped",
               [](const TensorList& in, const OpParams& p) {
                 Tensor a = in[1], b = in.size() > 2 ? in[2] : in[1];
                 if (p.has("other")) b = wrap_scalar(p.real("other"), in[1], "where");
                 if (p.has("input")) a = wrap_scalar(p.real("input"), in[1], "where");
                 auto [x, y] = prepare_binary("where", a, b, Site::current());
                 const Shape s = broadcast_shapes(in[0].sizes(), x.sizes(), "where");
                 Tensor c = in[0].sizes() == s ? in[0] : in[0].expand(s);
                 if (x.sizes() != s) x = expand(x, s), y = expand(y, s);
                 return TensorList{record<MutWhere>(Site::current(), c, x, y)};
               }});
  m.push_back(
      {"exp_uses_input", "exp", "dx = dy*x (input saved instead of output)", unary_fn<MutExp>()});
  m.push_back({"log_sign", "log", "dx = -dy/x (sign flip)", unary_fn<MutLog>()});
  m.push_back({"sqrt_missing_half", "sqrt", "dx = dy/y (factor 2 missing)", unary_fn<MutSqrt>()});
  m.push_back({"abs_sign_dropped", "abs", "dx = dy (sign(x) dropped)", unary_fn<MutAbs>()});
  m.push_back({"sin_uses_sin", "sin", "dx = dy*sin(x) (wrong derivative)", unary_fn<MutSin>()});
  m.push_back({"cos_sign_lost", "cos", "dx = dy*sin(x) (minus lost)", unary_fn<MutCos>()});
  m.push_back(
      {"tanh_from_input", "tanh", "dx = dy*(1 - x^2) (input for output)", unary_fn<MutTanh>()});
  m.push_back({"sigmoid_from_input", "sigmoid", "dx = dy*x*(1 - x) (input for output)",
               unary_fn<MutSigmoid>()});
  m.push_back({"erf_missing_constant", "erf", "dx = dy*exp(-x^2) (2/sqrt(pi) missing)",
               unary_fn<MutErf>()});
  m.push_back({"relu_ignores_upstream", "relu", "dx = (y > 0) (dy ignored)", unary_fn<MutRelu>()});
  m.push_back({"leaky_relu_slope_lost", "leaky_relu", "dx = 0 for x < 0 (slope lost)",
               [](const TensorList& in, const OpParams& p) {
                 return TensorList{
                     record<MutLeakyRelu>(Site::current(), in[0], p.real("negative_slope"))};
               }});
  m.push_back({"clamp_mask_lost", "clamp", "dx = dy everywhere (mask forgotten)",
               [](const TensorList& in, const OpParams& p) {
                 const double lo = p.has("min") ? p.real("min") : -INFINITY,
                              hi = p.has("max") ? p.real("max") : INFINITY;
                 return TensorList{record<MutClamp>(Site::current(), in[0], lo, hi)};
               }});
  m.push_back({"pow_exponent_off_by_one", "pow", "dx = dy*p*x^p (p, not p-1)",
               [](const TensorList& in, const OpParams& p) {
                 if (!p.has("exponent")) return TensorList{pow(in[0], in[1])};
                 return TensorList{
                     record<MutPowScalar>(Site::current(), in[0], p.real("exponent"))};
               }});
  m.push_back({"bmm_da_untransposed", "bmm", "dA = dC @ B (B^T expected)", bmm_fn<MutBmm<0>>()});
  m.push_back({"bmm_grads_swapped", "bmm", "returns (dB, dA)", bmm_fn<MutBmm<1>>()});
  m.push_back(
      {"sum_mean_scaling", "sum", "dx = dy/n (mean's scaling on a sum)", sum_fn<MutSum<0>>()});
  m.push_back({"sum_wrong_axis", "sum", "dy unsqueezed at the last dims, not the reduced ones",
               sum_fn<MutSum<1>>()});
  m.push_back({"amax_mask_lost", "amax", "dx = dy everywhere (no argmax mask)", sum_fn<MutAmax>()});
  m.push_back({"max_dim_off_by_one", "max", "scatter at index + 1",
               [](const TensorList& in, const OpParams& p) {
                 if (!p.has("dim")) return TensorList{max(in[0])};
                 const int64_t d = in[0].dim() == 0 ? 0 : wrapd(p.integer("dim"), in[0].dim());
                 return record<MutMaxDim>(Site::current(), in[0], d, p.flag("keepdim"));
               }});
  m.push_back({"expand_missing_sum", "expand", "no sum over broadcast dims (first copy taken)",
               [](const TensorList& in, const OpParams& p) {
                 if (p.shape("size") == in[0].sizes()) return TensorList{in[0]};
                 return TensorList{record<MutExpand>(Site::current(), in[0], p.shape("size"))};
               }});
  m.push_back({"permute_not_inverted", "permute", "dx = dy.permute(p) (inverse expected)",
               [](const TensorList& in, const OpParams& p) {
                 Dims w;
                 for (auto d : p.dims("dims")) w.push_back(wrapd(d, in[0].dim()));
                 return TensorList{record<MutPermute>(Site::current(), in[0], w)};
               }});
  m.push_back({"index_select_off_by_one", "index_select", "index_add at index + 1",
               [](const TensorList& in, const OpParams& p) {
                 return TensorList{record<MutIndexSelect>(Site::current(), in[0],
                                                          wrapd(p.integer("dim"), in[0].dim()),
                                                          in[1].reshape({-1}))};
               }});
  m.push_back({"index_add_off_by_one", "index_add", "dsrc = index_select at index + 1",
               [](const TensorList& in, const OpParams& p) {
                 return TensorList{record<MutIndexAdd>(Site::current(), in[0],
                                                       wrapd(p.integer("dim"), in[0].dim()),
                                                       in[1].reshape({-1}), in[2])};
               }});
  m.push_back({"gather_off_by_one", "gather", "scatter_add at index + 1",
               [](const TensorList& in, const OpParams& p) {
                 return TensorList{record<MutGather>(Site::current(), in[0],
                                                     wrapd(p.integer("dim"), in[0].dim()), in[1])};
               }});
  m.push_back({"scatter_add_off_by_one", "scatter_add", "dsrc = gather at index + 1",
               [](const TensorList& in, const OpParams& p) {
                 return TensorList{record<MutScatterAdd>(
                     Site::current(), in[0], wrapd(p.integer("dim"), in[0].dim()), in[1], in[2])};
               }});
  m.push_back({"softmax_no_subtraction", "softmax", "dx = y*dy (- sum  dy*y dropped)",
               softmax_fn<FusedSoftmax<1>>()});
  m.push_back({"log_softmax_no_softmax_term", "log_softmax", "dx = dy (- softmax sum  dy dropped)",
               softmax_fn<FusedLogSoftmax<1>>()});
  m.push_back({"fan_out_assign", "fan_out", "engine: buffer = g instead of buffer += g",
               [](const TensorList& in, const OpParams&) { return FanOutAssign::apply(in[0]); }});
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

TEST(GradientMutants, ControlsPass) {
  // The fused softmax structs without their fault: the same properties must pass, so the one
  // dropped term is what the mutants above are caught for.
  for (auto [row, op] : std::vector<std::pair<std::string, OpFn>>{
           {"softmax", softmax_fn<FusedSoftmax<0>>()},
           {"log_softmax", softmax_fn<FusedLogSoftmax<0>>()}}) {
    SCOPED_TRACE(row);
    const OpSpec spec = with_op(op_spec(row), op);
    RunResult r = run_property([&] { gradcheck_property(spec); }, 100, "control/" + row);
    EXPECT_FALSE(r.failed) << r.message;
    RunResult law = run_property([&] { law_softmax_shift(replace_op(table_ops(), row, op)); }, 100,
                                 "control-law/" + row);
    EXPECT_FALSE(law.failed) << law.message;
  }
}

TEST(GradientMutants, EveryMutantIsKilled) {
  const auto mutants = catalogue();
  ASSERT_GE(mutants.size(), 25u);
  int killed = 0, localized = 0, composable = 0;
  std::printf("\n%-28s %-12s %-46s %-34s %s\n", "mutant", "row", "change",
              "caught by, after n cases", "also caught by");
  std::string survivors, not_localized;
  for (const Mutant& m : mutants) {
    const OpSpec spec = with_op(spec_named(m.row), m.op);
    const OpLookup ops = replace_op(table_ops(), m.row, m.op);
    std::vector<Property> props{{"gradcheck", [spec] { gradcheck_property(spec); }}};
    for (auto& l : laws_for(m.row, ops)) props.push_back(l);
    if (spec.composable)
      props.push_back({"composed graph", [ops, row = m.row] { composed_property(ops, row); }});
    std::string first, others;
    for (const Property& p : props) {
      const RunResult r =
          run_property(p.body, 100, "mutant/" + m.name + "/" + p.name, /*expect_failure=*/true);
      if (!r.failed) continue;
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
    composable += spec.composable;
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

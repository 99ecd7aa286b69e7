#pragma once
// gradcheck / gradgradcheck: compare the analytic gradients of a function (what backward
// computes) with central differences in float64, with PyTorch's option names and defaults, and
// return a report that names the failing Jacobian entries.
//
//   auto f = [](const TensorList& in) -> TensorList { return {log_softmax(in[0], 1)}; };
//   Tensor x = randn({3, 5}, dtype(kFloat64).requires_grad());
//   auto report = testing::gradcheck(f, {x}, testing::GradcheckOptions().raise_exception(false));
//   if (!report) std::cout << report.text();
//
// What it checks (each can be turned off):
//  - the Jacobian: full (every entry, numeric columns vs analytic rows) while the inputs and the
//    outputs are small, else PyTorch's fast mode (uᵀJv for random u, v per input);
//  - the vector-Jacobian product with a random upstream gradient u (not all ones);
//  - Taylor remainder: |L(x + hv) - L(x) - h ∇L·v| must shrink at order 2 as h halves (order 1
//    means the gradient is wrong). The fitted order decides, not a tolerance (which enters only
//    where the remainder reaches the rounding floor first: see TaylorResult); it is reported;
//  - kinks: where left and right one-sided differences disagree, the element is reported as a
//    non-differentiable point instead of a gradient failure;
//  - backward is linear in the upstream gradient, repeated backward gives the same result
//    (within nondet_tol), undefined output gradients act as zeros, fn leaves its inputs alone.
// float32 inputs are checked in float64 (with a warning and a hint): float32 differences with
// eps = 1e-6 are too coarse for atol = 1e-5 and would fail for no reason.
//
// Confidence in the numeric reference. A central difference D(h) = (f(x+h) - f(x-h)) / 2h has
// the error C·h² + (rounding)/h. Every comparison that fails at eps is redone at eps/2:
//  - |D(eps) - D(eps/2)| (≈ (3/4)·C·eps² for a smooth function) estimates that error. When it
//    exceeds the tolerance, the reference itself moves by more than the tolerance when the step
//    halves: the entry is *inconclusive* ("the numeric estimate is unstable here"), not a
//    failure. This happens where fn varies faster than eps resolves (sin(exp(exp(x²))) at 1.5).
//  - Otherwise the analytic value is compared with the Richardson extrapolation
//    R = (4·D(eps/2) - D(eps)) / 3 (error O(eps⁴)), and a failure there is a failure.
// So a comparison that passes at eps costs nothing extra (two evaluations per failing column
// otherwise). The Taylor test is inconclusive when the directional difference along its v is
// unstable in the same sense, or when its remainders never settle at order 1 or 2 above the
// rounding floor (it halves h further, down to about 1e-12, until they do).
// Inconclusive is not a failure: `bool(report)` / `ok` stay true and nothing is thrown, but
// `verdict` is Verdict::Inconclusive, `num_inconclusive` counts the entries, text() says so in
// its first line; fail_on_inconclusive(true) turns it into a failure (ok false, raises).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gradlab/core/error.hpp"
#include "gradlab/core/tensor.hpp"

namespace gradlab::testing {

/// A function under test: tensors in, tensors out (non-float outputs are ignored).
using TensorFn = std::function<TensorList(const TensorList&)>;

/// Options of gradcheck, named and defaulted as torch.autograd.gradcheck's, plus gradlab's own
/// (seed, name, reproduce, top_k and the switches of the extra checks). LibTorch-style setters:
/// GradcheckOptions().atol(1e-6).raise_exception(false).
struct GradcheckOptions {
  double eps_ = 1e-6;            ///< step of the central differences
  double atol_ = 1e-5;           ///< absolute tolerance
  double rtol_ = 1e-3;           ///< relative tolerance (times |numeric|)
  double nondet_tol_ = 0.0;      ///< allowed difference between two identical backward passes
  bool raise_exception_ = true;  ///< throw GradcheckError on failure (else only return the report)
  bool fast_mode_ = false;       ///< uᵀJv per input instead of the full Jacobian
  bool check_undefined_grad_ = true;  ///< an output without gradient must act as a zero gradient
  bool check_grad_dtypes_ = false;    ///< gradients must have their input's dtype
  // ---- gradlab -----------------------------------------------------------------------------
  uint64_t seed_ = 0x5eed;  ///< random upstream gradients and directions
  std::string name_;        ///< op name for the report ("log_softmax")
  std::string reproduce_;   ///< appended as "reproduce: ..." (a test's rerun command)
  int64_t top_k_ = 5;       ///< worst entries listed in the text
  /// Above this many elements (in all differentiable inputs, or in all outputs) the full
  /// Jacobian is replaced by fast mode even when fast_mode is false; 0 never switches.
  int64_t full_jacobian_max_numel_ = 1024;
  /// Fast-mode failures are localized (per-element uᵀJ by differences) up to this many elements.
  int64_t localize_max_numel_ = 4096;
  bool check_taylor_ = true;
  /// Relative rounding level of fn's outputs below which Taylor remainders are ignored; 0 picks
  /// 1e-12, or 1e-5 when an output is float32 or eps >= 1e-4 (fn computes in float32 inside).
  double taylor_rel_noise_ = 0.0;
  bool check_kinks_ = true;
  bool check_linearity_ = true;
  bool check_nondeterminism_ = true;
  bool check_inputs_unchanged_ = true;
  /// float32 inputs are converted to float64 copies before checking (with a warning).
  bool upcast_float32_ = true;
  /// An inconclusive verdict (numeric estimate unstable) counts as a failure: ok false, raises.
  bool fail_on_inconclusive_ = false;

#define GRADLAB_GC_OPT(type, field) \
  GradcheckOptions& field(type v) { \
    field##_ = std::move(v);        \
    return *this;                   \
  }
  GRADLAB_GC_OPT(double, eps)
  GRADLAB_GC_OPT(double, atol)
  GRADLAB_GC_OPT(double, rtol)
  GRADLAB_GC_OPT(double, nondet_tol)
  GRADLAB_GC_OPT(bool, raise_exception)
  GRADLAB_GC_OPT(bool, fast_mode)
  GRADLAB_GC_OPT(bool, check_undefined_grad)
  GRADLAB_GC_OPT(bool, check_grad_dtypes)
  GRADLAB_GC_OPT(uint64_t, seed)
  GRADLAB_GC_OPT(std::string, name)
  GRADLAB_GC_OPT(std::string, reproduce)
  GRADLAB_GC_OPT(int64_t, top_k)
  GRADLAB_GC_OPT(int64_t, full_jacobian_max_numel)
  GRADLAB_GC_OPT(int64_t, localize_max_numel)
  GRADLAB_GC_OPT(bool, check_taylor)
  GRADLAB_GC_OPT(double, taylor_rel_noise)
  GRADLAB_GC_OPT(bool, check_kinks)
  GRADLAB_GC_OPT(bool, check_linearity)
  GRADLAB_GC_OPT(bool, check_nondeterminism)
  GRADLAB_GC_OPT(bool, check_inputs_unchanged)
  GRADLAB_GC_OPT(bool, upcast_float32)
  GRADLAB_GC_OPT(bool, fail_on_inconclusive)
#undef GRADLAB_GC_OPT
};

/// The outcome of gradcheck: every comparison passed; one failed; or none failed but some could
/// not be judged because the numeric estimate is unstable there.
enum class Verdict : int8_t { Passed, Failed, Inconclusive };
std::string to_string(Verdict v);

/// One failing (or inconclusive) comparison: a Jacobian entry (full mode), an element of uᵀJ
/// (vjp), or a whole uᵀJv product (fast mode, no coordinates).
struct GradcheckFailure {
  std::string check;  ///< "jacobian", "vjp" or "fast"
  int64_t input = 0;  ///< index of the input in the argument list
  Shape input_shape;
  ScalarType dtype = kFloat64;
  Shape element;         ///< coordinates inside the input; empty for a fast-mode product
  int64_t output = -1;   ///< for "jacobian": which output
  Shape output_element;  ///< for "jacobian": coordinates inside that output
  double analytic = 0, numeric = 0;
  double abs_err = 0, rel_err = 0;
  double tolerance = 0;  ///< atol + rtol * |numeric| that abs_err exceeded
  /// Redone at eps/2 (the comparison at eps failed): numeric is then the Richardson value
  /// (4·numeric_half - numeric_eps) / 3, or numeric_eps when the estimate is unstable.
  bool refined = false;
  double numeric_eps = 0, numeric_half = 0;  ///< central differences at eps and eps/2
  /// |numeric_eps - numeric_half|: the estimated error of the numeric reference; above
  /// `tolerance` the entry is inconclusive.
  double numeric_spread = 0;
};

/// Where the left and right one-sided differences disagree (a kink such as relu at 0).
struct Kink {
  int64_t input = 0;
  Shape element;
  double value = 0;            ///< the input's value there
  double left = 0, right = 0;  ///< one-sided slopes of the checked scalar
};

/// A check other than the Jacobian comparison (linearity, nondeterminism, ...).
struct CheckResult {
  std::string name;  ///< "linearity", "nondeterminism", "undefined_grad", "inputs_unchanged",
                     ///< "grad_dtype", "taylor", "exception"
  bool passed = true;
  bool inconclusive = false;  ///< could not be judged (passed stays true); detail says why
  std::string detail;         ///< one line, filled on failure (and for taylor always)
};

/// The Taylor-remainder test along one random direction.
struct TaylorResult {
  bool ran = false;
  bool passed = true;
  /// The fit is unusable here: the directional difference along v is unstable (see above), or
  /// the remainders never settle at order 1 or 2 above `noise` (passed stays true).
  bool inconclusive = false;
  /// Fitted order of |L(x+hv) - L(x) - h ∇L·v| in h: the median of the last three halvings once
  /// they agree within 0.6, and either >= 1.7 (a right gradient) or within 0.3 of 1 with slope
  /// r/h matching |D_v - ∇L·v| (a wrong one, D_v the Richardson difference along v). NaN when
  /// the remainder is at rounding level: from the start (fn is linear along v), or before the
  /// orders settle, at h and h/2, which bounds the first-order error by 5·noise/h (a pass when
  /// that is within atol·Σ|u| + rtol·|D_v|, else inconclusive: too few points above the floor
  /// to fit an order); NaN also when inconclusive.
  double order = 0;
  /// Rounding floor of the remainder: max(rel · |u|·|y|, 4 · the largest remainder at
  /// h = ±1e-8, ±1e-9, ±1e-10, where the true one is below 1e-16·|vᵀHv|: measured rounding).
  double noise = 0;
  /// h halves from 1e-3: 7 steps, more (down to about 1e-12) until the orders settle.
  std::vector<double> h, remainder;
};

/// What gradcheck found. Converts to bool: true unless a check failed (so an inconclusive
/// report is true; look at `verdict` or inconclusive() to tell it from a pass).
struct GradcheckReport {
  bool ok = true;
  Verdict verdict = Verdict::Passed;
  std::string name;
  std::string mode;  ///< "full Jacobian" or "fast (uᵀJv)"
  GradcheckOptions options;
  int64_t num_inputs = 0;               ///< all arguments, differentiable or not
  std::vector<int64_t> checked_inputs;  ///< indices of the differentiable ones
  std::vector<Shape> input_shapes;
  std::vector<ScalarType> input_dtypes;
  int64_t jacobian_rows = 0, jacobian_cols = 0;  ///< output and input elements
  int64_t comparisons = 0;                       ///< Jacobian entries / products compared
  int64_t num_failures = 0;  ///< all failing entries (failures holds them, worst first)
  /// Entries whose numeric estimate is unstable (inconclusive holds them, worst first); not
  /// failures, not counted in num_failures.
  int64_t num_inconclusive = 0;
  int64_t num_refined = 0;  ///< comparisons redone at eps/2 because they failed at eps
  double max_abs_err = 0;   ///< over every conclusive comparison, failing or not
  std::vector<GradcheckFailure> failures;
  std::vector<GradcheckFailure> inconclusive_entries;
  std::vector<Kink> kinks;
  std::vector<CheckResult> checks;
  TaylorResult taylor;
  std::vector<std::string> warnings;

  explicit operator bool() const { return ok; }
  /// No failure, but some entry or the Taylor fit could not be judged.
  bool inconclusive() const { return verdict == Verdict::Inconclusive; }
  /// The first failing check's name ("jacobian", "vjp", "fast", "taylor", "linearity", ...), or "".
  std::string first_failure() const;
  /// The k worst failing entries (k defaults to options.top_k).
  std::vector<GradcheckFailure> top(int64_t k = -1) const;
  /// Readable text: on failure it starts with
  ///   "gradcheck failed for <name>: input 0 of 1, shape [3, 5], float64"
  ///   "  element [2, 4]: analytic = 0.1234567, numeric = 0.1299012"
  ///   "  |diff| = 6.4e-03 > atol + rtol*|numeric| = 1.1e-04   (eps=1e-06 atol=1e-05 rtol=1e-03)"
  /// and when inconclusive with
  ///   "gradcheck inconclusive for <name>: the numeric estimate is unstable here (1 of 4 ...)"
  std::string text() const;
  /// The same content as JSON (one object).
  std::string json() const;
};

/// Thrown by gradcheck when raise_exception is set; what() is report().text().
class GradcheckError : public AutogradError {
 public:
  explicit GradcheckError(GradcheckReport report);
  const GradcheckReport& report() const { return report_; }

 private:
  GradcheckReport report_;
};

/// Checks fn's backward against central differences at `inputs`. Inputs that are floating point
/// and require grad are the ones differentiated; others (indices, masks) are passed through.
GradcheckReport gradcheck(const TensorFn& fn, const TensorList& inputs,
                          const GradcheckOptions& options = {});
/// Same, for a function with one output.
GradcheckReport gradcheck(const std::function<Tensor(const TensorList&)>& fn,
                          const TensorList& inputs, const GradcheckOptions& options = {});

/// Checks second derivatives: gradcheck of (inputs, u) -> autograd::grad(fn(inputs), inputs, u,
/// create_graph=true). `grad_outputs` (the u) are random float64 when empty.
GradcheckReport gradgradcheck(const TensorFn& fn, const TensorList& inputs,
                              const TensorList& grad_outputs = {},
                              const GradcheckOptions& options = {});
GradcheckReport gradgradcheck(const std::function<Tensor(const TensorList&)>& fn,
                              const TensorList& inputs, const TensorList& grad_outputs = {},
                              const GradcheckOptions& options = {});

/// Row-major coordinates of flat index `flat` in `shape` ([] for a 0-d tensor).
Shape unravel_index(int64_t flat, const Shape& shape);

}  // namespace gradlab::testing

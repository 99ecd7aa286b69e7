#pragma once
// The op table: every differentiable op of gradlab once, with what a property needs to test it —
// arity, input domains, how to draw shapes and parameters, optional tolerances and, where one
// exists, a reference implementation for small cases. Every op property in checks/ is driven by
// it (gradcheck in float64, forward vs reference, gradgradcheck, composed graphs, mutants).
// The rows are written by op family in testing/op_table/<family>.cpp, mirroring ops/.
//
// Random cases come from a `Draw`: an abstract source of shapes and values. gradlab ships
// GeneratorDraw (seeded, no dependencies); checks/ and users with RapidCheck use the RapidCheck
// one in gradlab/testing/rc_generators.hpp, which shrinks failing cases (drop a dim, halve a
// size, simple values). The table itself never depends on RapidCheck.

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "gradlab/core/generator.hpp"
#include "gradlab/core/tensor.hpp"
#include "gradlab/testing/gradcheck.hpp"

namespace gradlab::testing {

/// Where an input's values may lie: an interval, minus a margin around kinks (points where the
/// op is not differentiable), optionally on a grid (to keep two inputs from tying) or with all
/// elements apart (ties of max / min).
struct Domain {
  std::string label = "any";
  double lo = -2.0, hi = 2.0;
  std::vector<double> kinks;  ///< keep |x - k| >= margin for each
  double margin = 0.1;
  double grid = 0.0;  ///< when > 0: values are grid_offset + n * grid
  double grid_offset = 0.0;
  double distinct = 0.0;  ///< when > 0: every two elements at least this far apart

  /// Any value in [lo, hi].
  static Domain any(double lo = -2.0, double hi = 2.0);
  /// Strictly positive values (log, sqrt, the base of pow).
  static Domain positive(double lo = 0.2, double hi = 3.0);
  /// Away from the given kinks (relu and abs at 0, clamp at its bounds).
  static Domain away_from(std::vector<double> kinks, double margin = 0.1, double lo = -2.0,
                          double hi = 2.0);
  /// |x| >= min_abs (divisors).
  static Domain nonzero(double min_abs = 0.5, double hi = 2.0);
  /// Probabilities, inside (0, 1).
  static Domain probability();
  /// The same domain with every element at least `gap` from every other one.
  Domain distinct_values(double gap = 0.01) const;
  /// The same domain on the grid offset + n * step.
  Domain on_grid(double step, double offset = 0.0) const;

  bool contains(double v) const;
  /// The nearest value of the domain (used by generation and by shrinking).
  double project(double v) const;
  /// Moves elements apart as `distinct` asks (keeps their order).
  void spread(std::vector<double>& values) const;
  /// Simple values inside the domain, simplest first (what shrinking moves values to).
  std::vector<double> simple_values() const;
};

/// A source of random shapes and values for the table's samplers. Implementations decide how
/// values are drawn and shrunk; the table only says what it needs.
class Draw {
 public:
  virtual ~Draw() = default;
  /// An integer in [lo, hi] (shrinks toward lo).
  virtual int64_t integer(int64_t lo, int64_t hi) = 0;
  /// One of `choices` (shrinks toward the first).
  template <class T>
  T choose(const std::vector<T>& choices) {
    return choices.at(static_cast<size_t>(integer(0, static_cast<int64_t>(choices.size()) - 1)));
  }
  bool boolean() { return integer(0, 1) == 1; }
  /// A shape of rank in [min_rank, max_rank] with sizes in [1, max_size].
  virtual Shape shape(int64_t min_rank = 0, int64_t max_rank = 4, int64_t max_size = 5) = 0;
  /// float64 values of `shape` in `domain`; may be a non-contiguous view (when `allow_views`).
  virtual Tensor values(const Shape& shape, const Domain& domain, bool allow_views = true) = 0;
  /// int64 values in [0, high).
  virtual Tensor indices(const Shape& shape, int64_t high) = 0;
  /// A bool mask.
  virtual Tensor mask(const Shape& shape) = 0;
  /// A seed for anything else random inside a case (e.g. dropout's mask).
  virtual uint64_t seed() = 0;

  // Shapes made of the draws above (written once, for every Draw):
  /// A shape that broadcasts to `s`: some leading dims dropped, some sizes set to 1 (shrinks
  /// toward `s` itself).
  Shape broadcastable_to(const Shape& s);
  /// Two shapes that broadcast together: both broadcastable_to one drawn shape.
  std::pair<Shape, Shape> broadcast_pair(int64_t max_rank = 4, int64_t max_size = 5);
  /// Shapes a, b that matmul(a, b) accepts (ranks 1-4, broadcasting batch dims).
  std::pair<Shape, Shape> matmul_pair(int64_t max_size = 5);
  /// A permutation of [0, rank).
  Dims permutation(int64_t rank);
  /// `rank` sizes whose product is n (a reshape target), each a divisor of what is left.
  Shape factors(int64_t n, int64_t rank);

 protected:
  /// matmul_pair's m, k, n, each in [1, max_size] (a Draw may enlarge one, or make one 0).
  virtual std::array<int64_t, 3> matmul_sizes(int64_t max_size);
  /// The batch dims matmul_pair's operands take their trailing ones from (rank 2, sizes 1-3).
  virtual Shape matmul_batch() { return shape(2, 2, 3); }
};

/// A Draw on gradlab's seeded Generator: no dependencies, no shrinking.
class GeneratorDraw : public Draw {
 public:
  explicit GeneratorDraw(uint64_t seed = 0, bool allow_views = true)
      : gen_(seed), views_(allow_views) {}
  int64_t integer(int64_t lo, int64_t hi) override;
  Shape shape(int64_t min_rank = 0, int64_t max_rank = 4, int64_t max_size = 5) override;
  Tensor values(const Shape& shape, const Domain& domain, bool allow_views = true) override;
  Tensor indices(const Shape& shape, int64_t high) override;
  Tensor mask(const Shape& shape) override;
  uint64_t seed() override { return gen_.next_u64(); }
  Generator& generator() { return gen_; }

 private:
  Generator gen_;
  bool views_;
};

/// Non-tensor arguments of one case, by name (PyTorch's argument names where there is one):
///
///   OpParams().set("dims", Dims{0, -1}).set("keepdim", true)    // a sampler writes them
///   sum(x, p.dims("dims"), p.flag("keepdim"))                     // the row's op reads them
///
/// An optional argument is one the sampler may leave out (`p.has("stride")`). Reading a name the
/// case does not have, or as another type, throws ValueError naming the row and the parameter.
class OpParams {
 public:
  /// flag, integer, real, a list of integers (dims or a shape), or a word ("mean").
  using Value = std::variant<bool, int64_t, double, Dims, std::string>;

  OpParams& set(const std::string& name, bool v) { return put(name, v); }
  OpParams& set(const std::string& name, int v) { return put(name, int64_t{v}); }
  OpParams& set(const std::string& name, int64_t v) { return put(name, v); }
  OpParams& set(const std::string& name, double v) { return put(name, v); }
  OpParams& set(const std::string& name, std::vector<int64_t> v) { return put(name, Dims(std::move(v))); }
  OpParams& set(const std::string& name, std::initializer_list<int64_t> v) {
    return put(name, Dims(v));
  }
  OpParams& set(const std::string& name, std::string v) { return put(name, std::move(v)); }
  OpParams& set(const std::string& name, const char* v) { return put(name, std::string(v)); }

  bool has(const std::string& name) const { return values_.count(name) > 0; }
  bool flag(const std::string& name) const;
  int64_t integer(const std::string& name) const;
  /// A real, or an integer read as one.
  double real(const std::string& name) const;
  /// True when `name` holds an integer (pow's integer exponents stay integers).
  bool is_integer(const std::string& name) const;
  const Dims& dims(const std::string& name) const;
  const Shape& shape(const std::string& name) const { return dims(name); }
  const std::string& text(const std::string& name) const;

  /// The row these parameters are for (named in errors); the table's rows set it.
  const std::string& row() const { return row_; }
  OpParams& row(std::string name) {
    row_ = std::move(name);
    return *this;
  }
  /// "dim=-1, keepdim=true" (names in order).
  std::string str() const;
  bool empty() const { return values_.empty(); }

 private:
  OpParams& put(const std::string& name, Value v);
  template <class V>
  const V& get(const std::string& name, const char* kind) const;
  std::map<std::string, Value> values_;
  std::string row_;
};

/// One drawn case: the tensor arguments and the parameters. Floating inputs are the
/// differentiable ones (gradcheck makes them require grad); int64 / bool inputs pass through.
struct OpCase {
  TensorList inputs;
  OpParams params;
  std::string describe;  ///< "sum(x [2, 3], dims [1], keepdim)"
};

/// The op under test applied to a case's inputs (the table's rows call gradlab; mutants replace
/// it).
using OpFn = std::function<TensorList(const TensorList&, const OpParams&)>;

/// One row of the table.
struct OpSpec {
  std::string name;    ///< the public name ("log_softmax", "add_", "cross_entropy_loss")
  int arity = 1;       ///< differentiable tensor inputs
  std::string domain;  ///< the input domains, in words ("x: positive")
  std::string shapes;  ///< the shape generator, in words ("broadcast pair")
  std::function<OpCase(Draw&)> sample;
  OpFn op;
  OpFn reference;                         ///< hand-written or composite; empty when none
  std::optional<double> eps, atol, rtol;  ///< tolerances when the defaults do not fit
  bool second_order = true;               ///< gradgradcheck applies (backward is differentiable)
  bool composable = false;  ///< shape-preserving on any input: usable in random graphs
  std::string notes;

  /// The op as a gradcheck function on this case's parameters.
  TensorFn bind(const OpParams& p) const;
  /// Gradcheck options with this row's tolerances (and its name).
  GradcheckOptions options() const;
};

/// The table (built once). Ops from ops/nn_ops.hpp are included.
const std::vector<OpSpec>& op_table();
/// The row named `name` (throws ValueError if there is none).
const OpSpec& op_spec(const std::string& name);

/// Public functions that are deliberately not rows: non-differentiable (comparisons, argmax,
/// sign ...) or another name of a row (nn::functional::cross_entropy is cross_entropy_loss). Name -> reason.
const std::map<std::string, std::string>& op_table_exemptions();

/// Makes the floating inputs of a case leaves that require grad (copies; the case is kept).
TensorList differentiable_inputs(const OpCase& c);

/// A float64 leaf holding `values` (row-major) of `shape` in one of three memory layouts:
/// 0 contiguous, 1 transposed storage (a non-contiguous view, rank >= 2), 2 every other element
/// of a wider buffer (strided, rank >= 1). Draw implementations use it for non-contiguous inputs.
Tensor make_layout(const std::vector<double>& values, const Shape& shape, int64_t layout);
/// The values of `t` (contiguous) in make_layout's layout 0, 1 or 2, on t's device and dtype
/// (no graph).
Tensor to_layout(const Tensor& t, int64_t layout);

}  // namespace gradlab::testing

#pragma once
// What the library knows about an op, declared once on its struct as traits. jit::compile, ONNX
// export, autocast and the checks read them (through OpInfo, below); an op's display name
// ("ExpBackward0") is never a key. A built-in op struct (ops/internal/*.hpp) declares all of:
//
//   static constexpr Formula kFormula = Unary::Exp;          // its formula (backend/math), or kNoFormula
//   static constexpr Amp kAutocast = Amp::Float32;           // autocast category
//   static constexpr Onnx kOnnx = Onnx::same("Exp");         // ONNX mapping, or Onnx::none("why")
//   static constexpr Fusion kFusion = Fusion::Elementwise;   // how jit::compile may fuse it
//   template <class T> static T derivative(const T& dy, const UnaryArgs<T>& in);  // if it fuses
//
// and the compiler checks it (BuiltinOp, ops/common.hpp). A user's own op (autograd::Op<MyOp>)
// may leave them out: it then exports nowhere, never fuses and is never autocast.

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "gradlab/core/dtype.hpp"
#include "gradlab/core/shape.hpp"
#include "gradlab/ops/trace_hook.hpp"

namespace gradlab {
class Tensor;
namespace math {
enum class Unary;
enum class Binary;
}  // namespace math
namespace kern {
struct FusedGrad;
}  // namespace kern
}  // namespace gradlab

namespace gradlab::autograd {

/// An op's elementwise formula (backend/math/elementwise.hpp), or none.
struct Formula {
  enum class Kind : uint8_t { None, Unary, Binary };
  Kind kind = Kind::None;
  int op = 0;  ///< a math::Unary or math::Binary
  constexpr Formula() = default;
  constexpr Formula(math::Unary u) : kind(Kind::Unary), op(static_cast<int>(u)) {}    // NOLINT: implicit
  constexpr Formula(math::Binary b) : kind(Kind::Binary), op(static_cast<int>(b)) {}  // NOLINT: implicit
  constexpr bool operator==(const Formula& o) const { return kind == o.kind && op == o.op; }
  constexpr bool operator!=(const Formula& o) const { return !(*this == o); }
};
/// An op with no formula of its own (a view, a reduction, a matrix product ...).
inline constexpr Formula kNoFormula{};

/// Autocast category (amp/autocast.hpp), applied to the op's tensor inputs by record():
///   Lower    float16 / bfloat16 (the autocast dtype of the device): matmul, linear
///   Float32  widened to float32: ops that need range or accumulation (exp, log, pow, reductions)
///   Promote  every floating input to the widest of them (ops mixing inputs, e.g. cat)
///   None     as given (relu, add ...: promotion as usual)
enum class Amp : uint8_t { Lower, Float32, Promote, None };

/// How jit::compile may fuse an op.
enum class Fusion : uint8_t {
  None,         ///< replayed eagerly
  Elementwise,  ///< one step of a fused program (its kFormula), differentiated by its derivative
  Broadcast,    ///< an expand: absorbed as a broadcast read of a region input
  Sum,          ///< a sum over all elements or the last dim may end a region
};

/// A non-tensor argument of a traced call, for an ONNX mapping.
struct OnnxAttr {
  const char* name;
  std::variant<int64_t, double, std::vector<int64_t>> value;
};
/// What an op's ONNX mapping writes to (onnx/export.cpp implements it).
class OnnxGraph {
 public:
  virtual ~OnnxGraph() = default;
  /// Adds node `type` reading `inputs`; returns the name of its output.
  virtual std::string op(const std::string& type, const std::vector<std::string>& inputs,
                         const std::vector<OnnxAttr>& attrs = {}) = 0;
  /// A scalar constant of the node's dtype.
  virtual std::string scalar(double v, const char* name) = 0;
  /// An int64 list constant (a shape, axes).
  virtual std::string ints(const std::vector<int64_t>& v, const char* name) = 0;
  /// ONNX's TensorProto element type of dt.
  virtual int64_t elem_type(ScalarType dt) = 0;
};
/// One traced call, as an ONNX mapping sees it.
struct OnnxCall {
  const std::vector<std::string>& in;           ///< names of its (defined) tensor inputs
  const std::vector<detail::TraceAttr>& attrs;  ///< its other arguments, in order
  const Shape& out_shape;
  ScalarType dtype;
  double real(size_t i) const {
    const auto& a = attrs.at(i);
    if (auto* d = std::get_if<double>(&a)) return *d;
    return static_cast<double>(std::get<int64_t>(a));
  }
  int64_t integer(size_t i) const { return std::get<int64_t>(attrs.at(i)); }
  const std::vector<int64_t>& ints(size_t i) const { return std::get<std::vector<int64_t>>(attrs.at(i)); }
};
using OnnxFn = std::string (*)(OnnxGraph&, const OnnxCall&);

/// An op's ONNX mapping.
struct Onnx {
  enum class Kind : uint8_t { Same, Custom, None };
  Kind kind = Kind::None;
  const char* op = nullptr;      ///< Same: the ONNX op over the same inputs
  const char* reason = nullptr;  ///< None: why it does not export
  /// One ONNX node of type `op` reading the same inputs.
  static constexpr Onnx same(const char* op) { return {Kind::Same, op, nullptr}; }
  /// The struct's `static std::string to_onnx(OnnxGraph&, const OnnxCall&)` writes it.
  static constexpr Onnx custom() { return {Kind::Custom, nullptr, nullptr}; }
  /// Not exportable, and why.
  static constexpr Onnx none(const char* reason) { return {Kind::None, nullptr, reason}; }
};

/// The inputs of a unary derivative: x, the output y, the parameters p, q (T: Tensor or kern::Reg).
template <class T>
struct UnaryArgs {
  T x, y;
  double p = 0, q = 0;
};
/// The inputs of a binary derivative: a, b, the output c, and which input gradients are wanted.
template <class T>
struct BinaryArgs {
  T a, b, c;
  bool want_a = true, want_b = true;
};

/// The traits of one op struct, type-erased (the registry, jit and onnx read these).
struct OpInfo {
  const char* name = "";  ///< display only
  Formula formula;
  Amp autocast = Amp::None;
  Onnx onnx = Onnx::none("a user-defined op (no kOnnx trait)");
  Fusion fusion = Fusion::None;
  OnnxFn to_onnx = nullptr;                            ///< Onnx::Kind::Custom
  void (*fused_derivative)(kern::FusedGrad&) = nullptr;  ///< Fusion::Elementwise
  bool builtin = false;                                ///< a library op (traits required)
};

namespace detail {
template <class T, class = void> struct has_formula : std::false_type {};
template <class T> struct has_formula<T, std::void_t<decltype(T::kFormula)>> : std::true_type {};
template <class T, class = void> struct has_autocast : std::false_type {};
template <class T> struct has_autocast<T, std::void_t<decltype(T::kAutocast)>> : std::true_type {};
template <class T, class = void> struct has_onnx : std::false_type {};
template <class T> struct has_onnx<T, std::void_t<decltype(T::kOnnx)>> : std::true_type {};
template <class T, class = void> struct has_fusion : std::false_type {};
template <class T> struct has_fusion<T, std::void_t<decltype(T::kFusion)>> : std::true_type {};
template <class T, class = void> struct has_to_onnx : std::false_type {};
template <class T> struct has_to_onnx<T, std::void_t<decltype(&T::to_onnx)>> : std::true_type {};
template <class T, class = void> struct has_derivative : std::false_type {};
template <class T>
struct has_derivative<T, std::void_t<decltype(&T::template derivative<Tensor>)>> : std::true_type {};

/// The jit's view of T::derivative (ops/derivative.hpp defines it; instantiated for fusing ops).
template <class T>
void fused_derivative_of(kern::FusedGrad& g);
}  // namespace detail

/// The first trait op struct T lacks ("kAutocast", "derivative" ...), or nullptr when it has all.
template <class T>
constexpr const char* missing_trait() {
  if constexpr (!detail::has_formula<T>::value) return "kFormula";
  else if constexpr (!detail::has_autocast<T>::value) return "kAutocast";
  else if constexpr (!detail::has_onnx<T>::value) return "kOnnx";
  else if constexpr (!detail::has_fusion<T>::value) return "kFusion";
  else if constexpr (T::kOnnx.kind == Onnx::Kind::Custom && !detail::has_to_onnx<T>::value) return "to_onnx";
  else if constexpr (T::kFusion == Fusion::Elementwise && !detail::has_derivative<T>::value) return "derivative";
  else if constexpr (T::kFusion == Fusion::Elementwise && T::kFormula.kind == Formula::Kind::None)
    return "kFormula (a fused op needs one)";
  else return nullptr;
}
/// True when op struct T declares every trait.
template <class T>
inline constexpr bool has_op_traits_v = missing_trait<T>() == nullptr;

/// T's traits as an OpInfo (defaults for the ones a user op leaves out).
template <class T>
OpInfo make_op_info(bool builtin) {
  OpInfo info;
  info.name = T::kName;
  info.builtin = builtin;
  if constexpr (detail::has_formula<T>::value) info.formula = T::kFormula;
  if constexpr (detail::has_autocast<T>::value) info.autocast = T::kAutocast;
  if constexpr (detail::has_onnx<T>::value) {
    info.onnx = T::kOnnx;
    if constexpr (T::kOnnx.kind == Onnx::Kind::Custom) info.to_onnx = &T::to_onnx;
  }
  if constexpr (detail::has_fusion<T>::value) {
    info.fusion = T::kFusion;
    if constexpr (T::kFusion == Fusion::Elementwise) info.fused_derivative = &detail::fused_derivative_of<T>;
  }
  return info;
}

}  // namespace gradlab::autograd

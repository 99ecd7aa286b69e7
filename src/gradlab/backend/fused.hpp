#pragma once
// A fused elementwise program (jit::compile's regions): a list of steps over virtual registers,
// run in one pass over memory. The CPU runs it tile by tile (backend/cpu/fused.cpp): every step
// runs over one tile of elements, so the tile stays in cache through the whole chain and each
// input is read and each output written once; tiles are split over the intra-op threads, and
// every result is bit-identical for any thread count. The CUDA backend turns it into one kernel's source
// (backend/cuda/fused_source.cpp) compiled by NVRTC.
//
// Registers are step indices: step i writes register i and reads only earlier ones. Every
// register holds the program's dtype; comparisons give 1 or 0.

#include <cstdint>
#include <string>
#include <vector>

#include "gradlab/backend/math/elementwise.hpp"
#include "gradlab/core/tensor.hpp"

namespace gradlab::kern {

/// One step of a fused program.
struct FusedStep {
  enum class Kind : uint8_t {
    Input,    ///< register = inputs[index] (broadcast views read through their strides)
    Const,    ///< register = p (one value)
    Unary,    ///< register = math formula `op` of a, with parameters p, q
    Binary,   ///< register = math formula `op` of a, b (arithmetic)
    Compare,  ///< register = (a `op` b) ? 1 : 0   (op a math::Binary comparison)
    Select,   ///< register = a != 0 ? b : c
  };
  Kind kind = Kind::Const;
  int op = 0;           ///< math::Unary or math::Binary, as an int
  int a = -1, b = -1, c = -1;
  int64_t index = 0;    ///< Input: which input
  double p = 0, q = 0;  ///< Const: the value; Unary: the formula's parameters
};

/// A register the program writes out, whole or reduced.
struct FusedOutput {
  enum class Reduce : uint8_t { None, All, LastDim };
  int reg = 0;
  Reduce reduce = Reduce::None;
  double scale = 1;  ///< multiplies a reduction (1/n: a mean)
};

/// Steps over tensors of one shape and one floating dtype.
struct FusedProgram {
  Shape shape;
  ScalarType dtype = kFloat32;
  std::vector<FusedStep> steps;
  std::vector<FusedOutput> outputs;
  /// "r3 = Mul(r1, r2)" lines, for reports and test failures.
  std::string str() const;
};

/// Runs `program` on `inputs` (each of the program's shape and dtype, any strides: a broadcast is
/// an expanded view). Outputs: Reduce::None -> program.shape, All -> [], LastDim -> shape
/// without its last dim. CPU tensors; CUDA tensors when the CUDA backend is built.
std::vector<Tensor> run_fused(const FusedProgram& program, const std::vector<Tensor>& inputs);

/// Whether run_fused can run on `device` (CUDA: only when built with the CUDA backend and NVRTC,
/// and a GPU is present); otherwise `why` says why not.
bool fused_supported(const Device& device, std::string* why);

/// Elements per tile of the CPU loop (a tile of every live register fits in L2).
inline constexpr int64_t kFusedTile = 1024;

}  // namespace gradlab::kern

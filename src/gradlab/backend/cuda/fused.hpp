#pragma once
// The CUDA side of fused programs (backend/fused.hpp): one kernel's source per program, generated
// from the same formula text as every other kernel (the X-macros of backend/math/elementwise.hpp,
// stringified), compiled by NVRTC to PTX, loaded and launched through the CUDA runtime. The source
// generation needs no GPU and no CUDA; NVRTC needs the CUDA toolkit but no GPU; launching needs one.

#include <string>

#include "gradlab/backend/fused.hpp"

namespace gradlab::kern {

/// The CUDA C++ source of `program` as kernel `gradlab_fused`, with the shape and the strides
/// of `inputs` (views of the program's shape) baked in. Parameters: one pointer per input, then
/// one per output. One thread per element (grid-stride loop); reductions by atomicAdd.
std::string fused_cuda_source(const FusedProgram& program, const std::vector<Tensor>& inputs);
/// True when this build can call NVRTC.
bool nvrtc_available();
/// Compiles CUDA source to PTX with NVRTC for compute capability `arch` (e.g. 80); throws Error
/// with NVRTC's log when the source does not compile.
std::string nvrtc_compile(const std::string& source, int arch = 80);
/// Whether a GPU is there to launch on (else `why`); run_fused's CUDA branch.
bool cuda_fused_supported(std::string* why);
std::vector<Tensor> run_cuda_fused(const FusedProgram& program, const std::vector<Tensor>& inputs);

}  // namespace gradlab::kern

// run_fused: the CPU loop (backend/cpu/fused.cpp) or the NVRTC kernel (backend/cuda/fused.cpp).

#include "gradlab/backend/cuda/fused.hpp"

namespace gradlab::kern {

std::vector<Tensor> run_cpu_fused(const FusedProgram& program, const std::vector<Tensor>& inputs);

bool fused_supported(const Device& device, std::string* why) {
  if (device.is_cpu()) return true;
  return cuda_fused_supported(why);
}

std::vector<Tensor> run_fused(const FusedProgram& program, const std::vector<Tensor>& inputs) {
  if (!inputs.empty() && inputs[0].device().is_cuda()) return run_cuda_fused(program, inputs);
  return run_cpu_fused(program, inputs);
}

}  // namespace gradlab::kern

#pragma once
// Which instruction-set level gradlab's CPU elementwise kernels run at (PyTorch's
// torch.backends.cpu.get_cpu_capability()).

#include <string>

namespace gradlab {

/// The level in use: "default" (SSE2, any x86-64), "avx2" (AVX2 + FMA + F16C) or "avx512"
/// (AVX-512 F/BW/VL/DQ); the best this CPU runs unless GRADLAB_CPU_CAPABILITY names a lower one.
std::string cpu_capability();

}  // namespace gradlab

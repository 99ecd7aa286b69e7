// LibTorch's <torch/script.h>. gradlab cannot load TorchScript archives (no TorchScript
// interpreter). Choice: including this header compiles, so programs that include it but never
// load still build; a call to torch::jit::load fails at compile time with the message below.
// gradlab's own deployment path is torch::jit::trace / compile, ONNX export and
// torch::save / torch::load (state_dict checkpoints).
#pragma once
#include "torch/torch.h"

namespace gradlab::jit {
namespace compat_detail {
template <class...>
inline constexpr bool kAlwaysFalse = false;
}  // namespace compat_detail

/// Absent: TorchScript loading. Calling it is a compile-time error that says what to use.
template <class... Args>
void load(Args&&...) {
  static_assert(compat_detail::kAlwaysFalse<Args...>,
                "torch::jit::load: gradlab cannot load TorchScript archives (no TorchScript "
                "interpreter); rebuild the model as a torch::nn::Module and load its weights with "
                "torch::load, or use torch::jit::trace / ONNX export for deployment");
}
}  // namespace gradlab::jit

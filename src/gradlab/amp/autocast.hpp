#pragma once
// Automatic mixed precision, as torch.autocast: inside the guard, ops on the lower-precision list
// run in float16 / bfloat16 and ops that need range or accumulation run in float32.
//
//   {
//     amp::autocast ac(kCPU);            // bfloat16 on the CPU (float16 on CUDA)
//     Tensor logits = model->forward(x); // linear / conv / matmul in bfloat16
//     loss = F::cross_entropy(logits, y); // float32
//   }
//   loss.backward();                      // outside: backward uses the dtypes forward chose
//
// The policy (PyTorch's) is each op struct's kAutocast trait (ops/op_traits.hpp: Lower, Float32,
// Promote, None), applied by record() to the op's tensor inputs; composite ops (softmax,
// log_softmax, the losses, layer_norm, matmul, linear, conv2d, the composite reductions) have no
// struct of their own and cast at their entry in the same categories:
//   low type : matmul, mm, bmm, linear, conv2d (inputs, weights and biases are cast)
//   float32  : softmax, log_softmax, cross_entropy, nll_loss, mse_loss, l1_loss, smooth_l1_loss,
//              binary_cross_entropy_with_logits, layer_norm, exp, log, pow, softplus, sum, mean,
//              var, std, logsumexp, norm; batch_norm computes in float32 and returns the input's dtype
//   promote  : cat (every input in the widest floating dtype among them)
//   others   : run in their inputs' dtype (relu, add, ...: promotion as usual)
// checks/amp/autocast_test.cpp holds this list against the traits.
// Only floating tensors other than float64 are cast (PyTorch's "eligible" rule). The state is
// thread-local, like grad mode; ops inside a backward pass are never cast.
// NOTE: PyTorch leaves mean in the input's dtype; gradlab puts every reduction in float32.
// NOTE: PyTorch caches the low-precision copy of each weight inside one autocast region;
// gradlab casts it again at each use (same values, a little more work).

#include <optional>

#include "gradlab/autograd/flags.hpp"
#include "gradlab/core/device.hpp"
#include "gradlab/core/dtype.hpp"

namespace gradlab::amp {

/// Turns autocast on (or, with enabled = false, off) for one device type for its lifetime and
/// restores the previous state after; guards nest. dtype defaults to bfloat16 on the CPU and
/// float16 on CUDA; it must be float16 or bfloat16.
class autocast {
 public:
  explicit autocast(DeviceType device_type, std::optional<ScalarType> dtype = std::nullopt, bool enabled = true);
  ~autocast();
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;

 private:
  DeviceType type_;
  bool prev_enabled_;
  ScalarType prev_dtype_;
};

/// torch.is_autocast_enabled(device_type).
bool is_autocast_enabled(DeviceType device_type);
/// torch.get_autocast_dtype(device_type).
ScalarType get_autocast_dtype(DeviceType device_type);

}  // namespace gradlab::amp

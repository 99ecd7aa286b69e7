#include "gradlab/core/device.hpp"

#include "gradlab/core/dispatch.hpp"
#include "gradlab/core/error.hpp"

namespace gradlab {

std::string Device::str() const {
  if (is_cpu()) return "cpu";
  return index < 0 ? "cuda" : "cuda:" + std::to_string(index);
}

void check_device_available(const Device& d, const char* op) {
  if (d.is_cuda()) (void)dispatch::cuda_memory(op).resolve(d, op);
}

}  // namespace gradlab

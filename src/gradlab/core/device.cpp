#include "gradlab/core/device.hpp"

#include "gradlab/core/error.hpp"

namespace gradlab {

std::string Device::str() const {
  if (is_cpu()) return "cpu";
  return index < 0 ? "cuda" : "cuda:" + std::to_string(index);
}

void check_device_available(const Device& d, const char* op) {
  GRADLAB_CHECK(d.is_cpu(), DeviceError, op, "device " + d.str() + " is not available in this build",
                "cpu", d.str(),
                "this build of gradlab computes on the CPU only; keep tensors on kCPU");
}

}  // namespace gradlab

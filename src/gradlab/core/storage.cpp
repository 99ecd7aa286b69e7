#include "gradlab/core/storage.hpp"

#include <new>
#include <string>

namespace gradlab {

namespace {
constexpr std::align_val_t kAlign{64};
}

Storage::Storage(std::size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  check_device_available(device, "Storage");
  if (nbytes == 0) return;
  try {
    data_ = ::operator new(nbytes, kAlign);
  } catch (const std::bad_alloc&) {
    throw Error(error_message("Storage", "out of memory", std::to_string(nbytes) + " bytes",
                              "allocation failure",
                              "use a smaller batch, gradient accumulation, or no_grad for evaluation"));
  }
}

Storage::~Storage() {
  if (data_) ::operator delete(data_, kAlign);
}

}  // namespace gradlab

#pragma once
// A buffer shared by a tensor and all its views, with the version counter they share.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "gradlab/core/device.hpp"
#include "gradlab/core/error.hpp"

namespace gradlab {

/// Raw bytes on a device, plus the version counter bumped by every in-place write.
class Storage {
 public:
  /// Allocates `nbytes` (64-byte aligned, uninitialized) on `device`.
  Storage(std::size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  std::size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  /// How many in-place writes this buffer has seen (shared by every view of it).
  uint32_t version() const { return version_; }
  /// Records an in-place write made at `site`.
  void bump_version(const Site& site) {
    ++version_;
    last_write_ = site;
  }
  /// Where the last in-place write came from.
  const Site& last_write() const { return last_write_; }

 private:
  void* data_ = nullptr;
  std::size_t nbytes_ = 0;
  Device device_;
  uint32_t version_ = 0;
  Site last_write_ = Site::unknown();
};

/// CPU memory held by tensor storages (the figures lessons print for memory questions).
namespace memory {
/// Bytes held by live storages now.
std::size_t allocated();
/// Highest `allocated()` since start or the last reset_peak().
std::size_t max_allocated();
void reset_peak();
/// Bytes of freed large blocks kept for reuse (see storage.cpp).
std::size_t cached();
/// Returns every cached block to the system.
void empty_cache();
}  // namespace memory

}  // namespace gradlab

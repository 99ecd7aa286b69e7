#pragma once
// Where a tensor's storage lives: the CPU, or a CUDA device (see core/cuda.hpp).

#include <cstdint>
#include <string>

namespace gradlab {

enum class DeviceType : int8_t { CPU, CUDA };

/// A device: a type and, for CUDA, an index (-1 = the current one).
struct Device {
  DeviceType type = DeviceType::CPU;
  int16_t index = -1;
  constexpr Device() = default;
  constexpr Device(DeviceType t, int16_t i = -1) : type(t), index(i) {}
  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  /// "cpu", "cuda", "cuda:1".
  std::string str() const;
  friend bool operator==(const Device& a, const Device& b) { return a.type == b.type && a.index == b.index; }
  friend bool operator!=(const Device& a, const Device& b) { return !(a == b); }
};

inline constexpr DeviceType kCPU = DeviceType::CPU;
inline constexpr DeviceType kCUDA = DeviceType::CUDA;

/// Throws DeviceError unless `d` can hold tensors now (the CPU always; CUDA when a device, or the
/// host emulator, is there), naming `op` and why CUDA is not available.
void check_device_available(const Device& d, const char* op);

}  // namespace gradlab

#pragma once
// A buffer shared by a tensor and all its views, with the version counter they share.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gradlab/core/device.hpp"
#include "gradlab/core/error.hpp"

namespace gradlab {

/// Raw bytes on a device, plus the version counter bumped by every in-place write.
class Storage {
 public:
  /// Allocates `nbytes` (64-byte aligned, uninitialized) on `device`.
  Storage(std::size_t nbytes, Device device);
  /// Wraps CPU memory gradlab does not own (from_blob): never freed here; `deleter(data)` runs
  /// when the last tensor on it goes, when given. Not counted in memory::allocated().
  Storage(void* external, std::size_t nbytes, std::function<void(void*)> deleter);
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
  bool external_ = false;
  std::function<void(void*)> deleter_;
  Device device_;
  uint32_t version_ = 0;
  Site last_write_ = Site::unknown();
};

/// CPU memory held by tensor storages (the figures lessons print for memory questions).
///
/// The allocator keeps freed large blocks (128 KiB and up) for reuse, as the CUDA caching allocator
/// does: "allocated" counts bytes in live storages, "cached" freed blocks kept, and "reserved" both.
/// The cache holds at most 256 MiB + twice the highest allocated() the process has reached
/// (Stats::cache_bound); past it, the least recently freed blocks go back to the system first.
/// Under set_limit(n), reserved bytes stay at most n: an allocation that would pass it first
/// gives the cache back, then throws OutOfMemoryError (the same error the CUDA allocator throws).
namespace memory {
/// Bytes held by live storages now.
std::size_t allocated();
/// Highest `allocated()` since start or the last reset_peak().
std::size_t max_allocated();
void reset_peak();
/// Bytes of freed large blocks kept for reuse (see storage.cpp).
std::size_t cached();
/// allocated() + cached(): what the process holds for tensors.
std::size_t reserved();
/// Returns every cached block to the system.
void empty_cache();

/// Caps reserved() at `bytes` on the CPU (bytes > 0); an allocation past it throws
/// OutOfMemoryError. Tensors already alive are kept even when they exceed a new, lower limit.
void set_limit(std::size_t bytes);
/// Removes the limit set by set_limit().
void clear_limit();
/// The current limit in bytes, 0 when none is set.
std::size_t limit();

/// Counters since start (peaks since the last reset_peak()), as torch.cuda.memory_stats.
struct Stats {
  std::size_t allocated = 0, allocated_peak = 0, allocated_total = 0, freed_total = 0;
  std::size_t reserved = 0, reserved_peak = 0, cached = 0;
  std::size_t allocations = 0, allocations_peak = 0, allocations_total = 0, frees_total = 0;
  std::size_t cache_hits = 0, ooms = 0, limit = 0;
  /// Cached blocks given back to the system to make room for newer ones (see cache_bound).
  std::size_t cache_evictions = 0;
  /// The most bytes the cache may hold: 256 MiB + 2 x the highest allocated() since start
  /// (reset_peak leaves it), and at most limit() when one is set.
  std::size_t cache_bound = 0;
};
Stats stats();
/// A table of stats() in the shape of torch.cuda.memory_summary().
std::string summary();
/// "1.50 GiB", "300.0 MiB", "12.0 KiB", "512 B".
std::string format_bytes(std::size_t n);
/// The fixes an out-of-memory message lists (CPU and CUDA share it).
std::string out_of_memory_hint();

/// Sets a limit for its lifetime and restores the previous one (0: none) after.
class LimitGuard {
 public:
  explicit LimitGuard(std::size_t bytes);
  ~LimitGuard();
  LimitGuard(const LimitGuard&) = delete;
  LimitGuard& operator=(const LimitGuard&) = delete;

 private:
  std::size_t previous_;
};

/// The peak of allocated() while the scope lives, without losing the process-wide peak: it
/// restarts the peak at construction and, at destruction, puts back max(old peak, its peak).
/// Scopes nest (an inner one's peak counts toward the outer one).
class PeakScope {
 public:
  PeakScope();
  ~PeakScope();
  PeakScope(const PeakScope&) = delete;
  PeakScope& operator=(const PeakScope&) = delete;
  /// allocated() when the scope began.
  std::size_t start() const { return start_; }
  /// Highest allocated() since the scope began (so far).
  std::size_t peak() const;
  /// peak() - start(): what the scope added at its highest.
  std::size_t peak_increase() const { return peak() - start_; }

 private:
  std::size_t start_ = 0, outer_peak_ = 0;
};

/// Peaks per named phase of a training step:
///   memory::PhasePeaks phases;
///   { auto s = phases.measure("forward");  loss = model(x) ...; }
///   { auto s = phases.measure("backward"); loss.backward(); }
///   phases.peak("backward")   // highest allocated() seen inside any "backward" scope
class PhasePeaks {
 public:
  class Scope {
   public:
    Scope(PhasePeaks& owner, std::string name);
    ~Scope();
    Scope(Scope&&) = delete;
    Scope& operator=(Scope&&) = delete;

   private:
    PhasePeaks& owner_;
    std::string name_;
    PeakScope peak_;
  };
  /// Measures until the returned scope ends (C++17 guaranteed elision: `auto s = measure(...)`).
  Scope measure(std::string name) { return Scope(*this, std::move(name)); }
  /// Highest allocated() inside the phase's scopes; throws ValueError for a phase never measured.
  std::size_t peak(const std::string& name) const;
  /// Highest increase over the allocated() at each scope's start.
  std::size_t peak_increase(const std::string& name) const;
  /// Phase names in first-measured order.
  std::vector<std::string> phases() const;
  /// One line per phase: "forward  peak 12.0 MiB (+4.0 MiB)".
  std::string str() const;

 private:
  struct Reading {
    std::string name;
    std::size_t peak = 0, increase = 0;
  };
  const Reading& find(const std::string& name) const;
  std::vector<Reading> readings_;
};
}  // namespace memory

}  // namespace gradlab

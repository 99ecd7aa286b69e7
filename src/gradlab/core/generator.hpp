#pragma once
// Seeded random numbers. The same seed gives the same numbers on every run and machine:
// mt19937_64 is fully specified by the C++ standard, and the distributions below are ours
// (std::normal_distribution & co. differ between standard libraries).

#include <cstdint>
#include <random>
#include <string>

namespace gradlab {

/// A seeded random stream (mt19937_64 + gradlab's own distributions).
class Generator {
 public:
  explicit Generator(uint64_t seed = 5489u) { manual_seed(seed); }
  /// Restarts the stream from `seed`.
  void manual_seed(uint64_t seed);
  uint64_t initial_seed() const { return seed_; }
  /// 64 random bits.
  uint64_t next_u64() { return engine_(); }
  /// Uniform in [0, 1) with 53 random bits.
  double uniform();
  /// Standard normal (Box-Muller on two uniforms; no cached second value, so state stays simple).
  double normal();
  /// Uniform integer in [low, high).
  int64_t randint(int64_t low, int64_t high);
  /// The full state as text (for checkpoints); set_state(get_state()) resumes the stream exactly.
  std::string get_state() const;
  void set_state(const std::string& state);

 private:
  uint64_t seed_ = 0;
  std::mt19937_64 engine_;
};

/// The generator factories use when none is passed.
Generator& default_generator();
/// Seeds the default generator (torch::manual_seed).
void manual_seed(uint64_t seed);
/// A well-mixed 64-bit seed derived from several numbers (splitmix64), for independent streams
/// such as "seed + epoch + sample index".
uint64_t derive_seed(uint64_t a, uint64_t b = 0, uint64_t c = 0);

}  // namespace gradlab

#include "gradlab/core/generator.hpp"

#include <cmath>
#include <numbers>
#include <sstream>

#include "gradlab/core/error.hpp"

namespace gradlab {

void Generator::manual_seed(uint64_t seed) {
  seed_ = seed;
  engine_.seed(seed);
}

double Generator::uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

double Generator::normal() {
  // Box-Muller: u1 in (0, 1] so log(u1) is finite.
  double u1 = 1.0 - uniform();
  double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

int64_t Generator::randint(int64_t low, int64_t high) {
  GRADLAB_CHECK(high > low, ValueError, "randint", "empty range", "low < high",
                "low=" + std::to_string(low) + ", high=" + std::to_string(high));
  // Rejection sampling: no modulo bias.
  uint64_t range = static_cast<uint64_t>(high - low);
  uint64_t limit = UINT64_MAX - UINT64_MAX % range;
  uint64_t r;
  do {
    r = engine_();
  } while (r >= limit);
  return low + static_cast<int64_t>(r % range);
}

std::string Generator::get_state() const {
  std::ostringstream os;
  os << seed_ << ' ' << engine_;
  return os.str();
}

void Generator::set_state(const std::string& state) {
  std::istringstream is(state);
  uint64_t seed;
  std::mt19937_64 e;
  is >> seed >> e;
  GRADLAB_CHECK(!is.fail(), ValueError, "Generator::set_state", "state text does not parse",
                "the text of Generator::get_state()", std::to_string(state.size()) + " characters");
  seed_ = seed;
  engine_ = e;
}

Generator& default_generator() {
  static Generator g(0);
  return g;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

uint64_t derive_seed(uint64_t a, uint64_t b, uint64_t c) {
  auto mix = [](uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  return mix(mix(mix(a) ^ b) ^ c);
}

}  // namespace gradlab

// Fuzzing the MNIST IDX reader: random mutations of a small valid image + label pair (bit flips,
// byte writes, truncations, appended and inserted bytes, header fields set to edge values,
// swapped files, consistent recounts) go through data::mnist::parse. Every input must either
// parse into tensors that agree with its header, or throw gradlab::IOError naming the file;
// anything else (another exception, a crash) fails. The mutations come from std::mt19937_64's
// raw output (no std:: distributions), so a seed replays the same inputs everywhere:
//   GRADLAB_FUZZ_SEED=<seed> check_data --gtest_filter='MnistFuzz*'
// The 1,000,000-input run is MnistFuzzSlow (label slow); the unit suite runs 20,000.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gradlab/data/mnist.hpp"
#include "idx_files.hpp"

namespace gl = gradlab;
namespace mnist = gradlab::data::mnist;

namespace {

const char* const kImages = "fuzz-images-idx3-ubyte";
const char* const kLabels = "fuzz-labels-idx1-ubyte";

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}
  uint64_t below(uint64_t n) { return n == 0 ? 0 : rng_() % n; }

  void mutate(std::vector<uint8_t>& images, std::vector<uint8_t>& labels) {
    const uint64_t rounds = 1 + below(4);
    for (uint64_t r = 0; r < rounds; ++r) {
      std::vector<uint8_t>& b = below(3) == 0 ? labels : images;
      switch (below(10)) {
        case 0:  // flip a bit, half the time in the header
          if (!b.empty()) {
            const size_t at = below(2) == 0 ? below(std::min<size_t>(16, b.size())) : below(b.size());
            b[at] ^= static_cast<uint8_t>(1u << below(8));
          }
          break;
        case 1:  // write a byte
          if (!b.empty()) b[below(b.size())] = static_cast<uint8_t>(rng_());
          break;
        case 2:  // truncate
          b.resize(below(b.size() + 1));
          break;
        case 3:  // append
          for (uint64_t n = 1 + below(64); n > 0; --n) b.push_back(static_cast<uint8_t>(rng_()));
          break;
        case 4:
        case 5:  // a header field set to an edge value
          set_field(b, below(4), edge_value());
          break;
        case 6:  // the files swapped
          std::swap(images, labels);
          break;
        case 7: {  // insert or delete a run of bytes
          const size_t at = below(b.size() + 1);
          if (below(2) == 0) {
            b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), 1 + below(32),
                     static_cast<uint8_t>(rng_()));
          } else {
            const size_t n = std::min<size_t>(b.size() - at, 1 + below(32));
            b.erase(b.begin() + static_cast<std::ptrdiff_t>(at),
                    b.begin() + static_cast<std::ptrdiff_t>(at + n));
          }
          break;
        }
        case 8: {  // random garbage
          b.assign(below(100), 0);
          for (uint8_t& x : b) x = static_cast<uint8_t>(rng_());
          break;
        }
        default: {  // a consistent recount: k examples in both files (often parses)
          const auto k = static_cast<uint32_t>(1 + below(4));
          images = idx::images(k);
          labels = idx::labels(k);
          for (uint64_t n = below(50); n > 0; --n)
            images[16 + below(images.size() - 16)] = static_cast<uint8_t>(rng_());
          break;
        }
      }
    }
  }

 private:
  uint32_t edge_value() {
    static const uint32_t kEdges[] = {0,      1,          2,          3,          27,
                                      28,     29,         255,        256,        784,
                                      2049,   2051,       0x7fffffff, 0x80000000, 0xffffffff,
                                      60000,  10000,      0x01000000, 0x00010000};
    const uint64_t pick = below(sizeof(kEdges) / sizeof(kEdges[0]) + 1);
    return pick < sizeof(kEdges) / sizeof(kEdges[0]) ? kEdges[pick] : static_cast<uint32_t>(rng_());
  }
  static void set_field(std::vector<uint8_t>& b, uint64_t field, uint32_t v) {
    const size_t at = 4 * field;
    for (size_t i = 0; i < 4 && at + i < b.size(); ++i)
      b[at + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
  }
  std::mt19937_64 rng_;
};

uint32_t be32(const std::vector<uint8_t>& b, size_t at) {
  return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) | b[at + 3];
}

uint64_t seed_from_env(uint64_t fallback) {
  const char* s = std::getenv("GRADLAB_FUZZ_SEED");
  return s != nullptr ? std::strtoull(s, nullptr, 10) : fallback;
}

// Runs `iterations` mutated inputs; a failure names the seed and the iteration that replays it.
void fuzz(uint64_t seed, size_t iterations) {
  std::cout << "MNIST fuzz: seed " << seed << " (GRADLAB_FUZZ_SEED=" << seed << " replays), "
            << iterations << " inputs" << std::endl;
  const auto start = std::chrono::steady_clock::now();
  Mutator m(seed);
  const std::vector<uint8_t> base_images = idx::images(2), base_labels = idx::labels(2);
  size_t parsed = 0, rejected = 0;
  for (size_t it = 0; it < iterations; ++it) {
    std::vector<uint8_t> images = base_images, labels = base_labels;
    m.mutate(images, labels);
    try {
      auto [x, y] = mnist::parse(images, kImages, labels, kLabels);
      // Accepted: the tensors must be exactly what the header announces.
      const int64_t n = be32(images, 4);
      ASSERT_EQ(x.sizes(), gl::Shape({n, 1, 28, 28})) << "seed " << seed << " input " << it;
      ASSERT_EQ(y.sizes(), gl::Shape({n})) << "seed " << seed << " input " << it;
      ASSERT_EQ(images.size(), size_t(16 + n * 784)) << "seed " << seed << " input " << it;
      const float* px = x.data_ptr<float>();
      for (int64_t i = 0; i < x.numel(); ++i)
        ASSERT_FLOAT_EQ(px[i], static_cast<float>(images[16 + static_cast<size_t>(i)]) / 255.0F)
            << "seed " << seed << " input " << it;
      const int64_t* py = y.data_ptr<int64_t>();
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(py[i], labels[8 + static_cast<size_t>(i)]);
      ++parsed;
    } catch (const gl::IOError& e) {
      const std::string msg = e.what();
      ASSERT_TRUE(msg.find(kImages) != std::string::npos || msg.find(kLabels) != std::string::npos)
          << "the error names no file: " << msg << " (seed " << seed << " input " << it << ")";
      ++rejected;
    } catch (const std::exception& e) {
      FAIL() << "not a gradlab IOError: " << e.what() << " (seed " << seed << " input " << it << ")";
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "MNIST fuzz: " << iterations << " inputs in " << seconds << " s: " << parsed
            << " parsed, " << rejected << " rejected with IOError, 0 crashes" << std::endl;
  // Both outcomes must occur, or the mutations test nothing.
  EXPECT_GT(parsed, iterations / 100);
  EXPECT_GT(rejected, iterations / 10);
}

}  // namespace

TEST(MnistFuzz, TwentyThousandMutatedIdxPairs) { fuzz(seed_from_env(20261203), 20000); }

TEST(MnistFuzzSlow, OneMillionMutatedIdxPairs) {
  fuzz(seed_from_env(std::random_device{}()), 1000000);
}

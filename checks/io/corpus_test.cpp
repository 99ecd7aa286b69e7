// Replays the crafted corpus (checks/io/corpus) through the loader: good_* files load, every
// bad_* file is refused with a CorruptFileError. The fuzz target starts from the same files.

#include <gtest/gtest.h>

#include <filesystem>

#include "gradlab/io/safetensors.hpp"

namespace io = gradlab::io;
namespace fs = std::filesystem;

TEST(CorruptFile, CorpusReplay) {
  const fs::path dir = fs::path(GRADLAB_SOURCE_DIR) / "checks/io/corpus";
  int good = 0, bad = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() != ".safetensors") continue;
    if (name.starts_with("good_")) {
      EXPECT_NO_THROW(io::load_safetensors(e.path())) << name;
      ++good;
    } else {
      try {
        io::load_safetensors(e.path());
        ADD_FAILURE() << name << " loaded";
      } catch (const io::CorruptFileError& err) {
        EXPECT_NE(std::string(err.what()).find(name), std::string::npos) << err.what();
      } catch (const std::exception& err) {
        ADD_FAILURE() << name << ": not a CorruptFileError: " << err.what();
      }
      ++bad;
    }
  }
  EXPECT_GE(good, 2);
  EXPECT_GE(bad, 25);
}

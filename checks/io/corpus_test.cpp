// Replays the crafted corpora through the loaders: good_* files load, every bad_* file is
// refused with a CorruptFileError (IOError for CSV) naming the file. The fuzz targets start from
// the same files: checks/io/corpus (safetensors), corpus_npy, corpus_checkpoint, corpus_csv
// (written by tools/make_fuzz_corpora.py).

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "gradlab/data/csv.hpp"
#include "gradlab/io/checkpoint.hpp"
#include "gradlab/io/npy.hpp"
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

namespace {

// Every file of checks/io/<sub>: good_* must load; bad_* must be refused with an exception of
// type E whose message names the file and says where (`where`: "byte offset", or a line).
template <class E>
void replay(const std::string& sub, const std::function<void(const fs::path&)>& load, int min_good,
            int min_bad) {
  const fs::path dir = fs::path(GRADLAB_SOURCE_DIR) / "checks/io" / sub;
  int good = 0, bad = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("good_")) {
      EXPECT_NO_THROW(load(e.path())) << name;
      ++good;
    } else if (name.starts_with("bad_")) {
      try {
        load(e.path());
        ADD_FAILURE() << name << " loaded";
      } catch (const E& err) {
        const std::string w = err.what();
        EXPECT_NE(w.find(name), std::string::npos) << "names the file: " << w;
        const bool where =
            w.find("byte offset") != std::string::npos || w.find(name + ":") != std::string::npos;
        EXPECT_TRUE(where) << "says where (byte offset or line): " << w;
      } catch (const std::exception& err) {
        ADD_FAILURE() << name << ": not the expected error type: " << err.what();
      }
      ++bad;
    }
  }
  EXPECT_GE(good, min_good) << sub;
  EXPECT_GE(bad, min_bad) << sub;
}

}  // namespace

TEST(CorruptFile, NpyCorpusReplay) {
  replay<io::CorruptFileError>(
      "corpus_npy", [](const fs::path& p) { (void)io::load_npy(p); }, 8, 13);
}

TEST(CorruptFile, CheckpointCorpusReplay) {
  replay<io::CorruptFileError>(
      "corpus_checkpoint", [](const fs::path& p) { (void)io::load_checkpoint(p); }, 2, 8);
}

TEST(CorruptFile, CsvCorpusReplay) {
  replay<gradlab::IOError>(
      "corpus_csv",
      [](const fs::path& p) {
        gradlab::data::CsvOptions o;
        const std::string n = p.filename().string();
        o.header = n.find("header") != std::string::npos;
        o.delimiter = n.find("semicolon") != std::string::npos ? ';' : ',';
        (void)gradlab::data::read_csv(p, o);
      },
      6, 7);
}

#include "gradlab/data/digits.hpp"

#include <dlfcn.h>  // dladdr: where libgradlab.so was loaded from

#include <cstdlib>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/data/csv.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::data {

namespace {
// The data an installed gradlab ships: <prefix>/share/gradlab/data beside <prefix>/lib[/<arch>]/
// libgradlab.so, found from where the library itself was loaded (so a relocated prefix works).
std::filesystem::path installed_data_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&installed_data_dir), &info) == 0 || !info.dli_fname) return {};
  std::filesystem::path dir = std::filesystem::path(info.dli_fname).parent_path();
  for (int up = 0; up < 3 && !dir.empty(); ++up, dir = dir.parent_path()) {
    const auto p = dir / "share" / "gradlab" / "data";
    if (std::filesystem::is_directory(p)) return p;
  }
  return {};
}
}  // namespace

std::filesystem::path data_dir() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("GRADLAB_DATA_DIR"); env && *env) {
    const fs::path p(env);
    GRADLAB_CHECK(fs::is_directory(p), IOError, "data_dir", "GRADLAB_DATA_DIR is not a directory",
                  "a directory", "'" + p.string() + "'");
    return p;
  }
  std::string tried;
  for (const char* c : {"data", "../data", "../../data", "../../../data"}) {
    const fs::path p = fs::current_path() / c;
    if (fs::is_directory(p)) return fs::weakly_canonical(p);
    tried += (tried.empty() ? "" : ", ") + p.string();
  }
  if (const auto p = installed_data_dir(); !p.empty()) return p;
  tried += ", <prefix>/share/gradlab/data beside libgradlab.so";
  throw IOError(error_message("data_dir", "no data directory found", "one of " + tried,
                              "none of them",
                              "set GRADLAB_DATA_DIR to the repository's data/ folder"));
}

std::filesystem::path data_file(const std::string& relative) {
  const auto p = data_dir() / relative;
  GRADLAB_CHECK(std::filesystem::exists(p), IOError, "data_file", "file not found",
                "'" + p.string() + "'", "nothing there",
                "set GRADLAB_DATA_DIR to the repository's data/ folder");
  return p;
}

TensorDataset load_digits(const DigitsOptions& options) {
  const auto path = options.path.empty() ? data_file("digits/digits.csv.gz") : options.path;
  CsvOptions csv;
  csv.target_column = -1;
  csv.dtype = kFloat32;
  csv.target_dtype = kInt64;
  CsvDataset raw(path, csv);
  const Tensor& x = raw.data();
  GRADLAB_CHECK(x.dim() == 2 && x.size(1) == 64, IOError, "load_digits",
                path.string() + ": not the digits file", "64 pixel columns + 1 label",
                std::to_string(x.dim() == 2 ? x.size(1) + 1 : 0) + " columns");
  const Tensor& y = raw.targets();
  GRADLAB_CHECK(
      x.min().item<float>() >= 0 && x.max().item<float>() <= 16, IOError, "load_digits",
      path.string() + ": pixel values out of range", "0..16",
      std::to_string(x.min().item<float>()) + ".." + std::to_string(x.max().item<float>()));
  GRADLAB_CHECK(
      y.min().item<int64_t>() >= 0 && y.max().item<int64_t>() <= 9, IOError, "load_digits",
      path.string() + ": labels out of range", "0..9",
      std::to_string(y.min().item<int64_t>()) + ".." + std::to_string(y.max().item<int64_t>()));
  Tensor images = x / 16.0;
  if (!options.flatten) images = images.reshape({x.size(0), 1, 8, 8});
  return TensorDataset(images.contiguous(), y);
}

DigitsSplit load_digits_split(const DigitsSplitOptions& options) {
  GRADLAB_CHECK(options.correction >= 0, ValueError, "load_digits_split",
                "correction must be non-negative", "correction >= 0",
                std::to_string(options.correction));
  GRADLAB_CHECK(options.eps >= 0, ValueError, "load_digits_split", "eps must be non-negative",
                "eps >= 0", std::to_string(options.eps));
  DigitsOptions digits;
  digits.flatten = options.flatten;
  digits.path = options.path;
  auto [train, test] = train_test_split(load_digits(digits), options.test_size, options.seed);
  NoGradGuard no_grad;
  // mean and std over the training rows only; dim 0 indexes the images.
  const Tensor mu = mean(train.data(), {0});
  const Tensor sd0 = gradlab::std(train.data(), {0}, options.correction);
  // NOTE: std 0 (constant pixels) -> 1, not eps: x - mean is 0 there anyway.
  const Tensor sd = where(sd0 == 0, 1.0, options.eps != 0 ? sd0 + options.eps : sd0);
  if (!options.standardize) return {train, test, mu, sd};
  return {TensorDataset((train.data() - mu) / sd, train.targets()),
          TensorDataset((test.data() - mu) / sd, test.targets()), mu, sd};
}

}  // namespace gradlab::data

#include "gradlab/data/csv.hpp"

#include <zlib.h>

#include <charconv>
#include <cmath>
#include <string_view>

#include "gradlab/core/factories.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::data {

namespace {

// The whole file as text; zlib's gzread passes plain files through unchanged.
std::string read_text(const std::filesystem::path& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  GRADLAB_CHECK(f != nullptr, IOError, "read_csv", "cannot open '" + path.string() + "'",
                "a readable file",
                std::filesystem::exists(path) ? "no read access" : "no such file");
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const int n = gzread(f, buf, sizeof buf);
    if (n < 0 || (n == 0 && !gzeof(f))) {
      int code = 0;
      std::string msg = gzerror(f, &code);
      gzclose(f);
      throw IOError(error_message("read_csv", "cannot read '" + path.string() + "': " + msg, {}, {},
                                  "is the .gz file truncated or corrupt?"));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  // NOTE: a truncated .gz stream ends without error from gzread; gzclose reports it.
  const int rc = gzclose(f);
  GRADLAB_CHECK(
      rc == Z_OK, IOError, "read_csv",
      "cannot read '" + path.string() + "': the compressed stream is truncated or corrupt",
      "a complete gzip stream", "zlib error " + std::to_string(rc));
  return text;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view line, char delim) {
  std::vector<std::string_view> out;
  size_t at = 0;
  for (;;) {
    const size_t p = line.find(delim, at);
    out.push_back(
        trim(line.substr(at, p == std::string_view::npos ? std::string_view::npos : p - at)));
    if (p == std::string_view::npos) break;
    at = p + 1;
  }
  return out;
}

}  // namespace

CsvTable read_csv(const std::filesystem::path& path, const CsvOptions& options) {
  const std::string text = read_text(path);
  CsvTable table;
  std::vector<double> values;
  size_t cols = 0, rows = 0, line_no = 0;
  size_t at = 0;
  while (at < text.size()) {
    size_t eol = text.find('\n', at);
    if (eol == std::string::npos) eol = text.size();
    std::string_view line(text.data() + at, eol - at);
    at = eol + 1;
    ++line_no;
    if (trim(line).empty()) continue;
    auto fields = split(line, options.delimiter);
    const std::string where = path.string() + ":" + std::to_string(line_no);
    if (options.header && table.columns.empty() && rows == 0 && line_no == 1) {
      for (auto f : fields) table.columns.emplace_back(f);
      cols = fields.size();
      continue;
    }
    if (cols == 0) cols = fields.size();
    GRADLAB_CHECK(fields.size() == cols, IOError, "read_csv", where + ": wrong number of fields",
                  std::to_string(cols), std::to_string(fields.size()));
    for (size_t c = 0; c < fields.size(); ++c) {
      double v = 0;
      const auto f = fields[c];
      auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
      GRADLAB_CHECK(ec == std::errc() && end == f.data() + f.size() && !f.empty(), IOError,
                    "read_csv", where + ", column " + std::to_string(c + 1) + ": not a number",
                    "a number", "'" + std::string(f) + "'");
      values.push_back(v);
    }
    ++rows;
  }
  table.values = from_vector(values, {static_cast<int64_t>(rows), static_cast<int64_t>(cols)},
                             dtype(kFloat64));
  return table;
}

namespace {

TensorDataset csv_dataset(const std::filesystem::path& path, const CsvOptions& options) {
  CsvTable t = read_csv(path, options);
  const int64_t rows = t.values.size(0), cols = t.values.size(1);
  GRADLAB_CHECK(cols >= 2 || rows == 0, IOError, "CsvDataset",
                path.string() + ": needs at least two columns (features and a target)", ">= 2",
                std::to_string(cols));
  const int64_t tc =
      options.target_column < 0 ? cols + options.target_column : options.target_column;
  GRADLAB_CHECK(tc >= 0 && tc < cols, ValueError, "CsvDataset", "target_column out of range",
                "-" + std::to_string(cols) + " <= target_column < " + std::to_string(cols),
                std::to_string(options.target_column));
  std::vector<int64_t> feature_cols;
  for (int64_t c = 0; c < cols; ++c)
    if (c != tc) feature_cols.push_back(c);
  Tensor data = t.values.index_select(1, from_vector(feature_cols, {cols - 1})).to(options.dtype);
  Tensor target = t.values.select(1, tc).contiguous();
  if (options.target_dtype == kInt64) {
    const double* p = target.data_ptr<double>();
    for (int64_t r = 0; r < rows; ++r)
      GRADLAB_CHECK(std::floor(p[r]) == p[r], IOError, "CsvDataset",
                    path.string() + ", data row " + std::to_string(r + 1) + ", column " +
                        std::to_string(tc + 1) + ": the target is not a whole number",
                    "a class index", std::to_string(p[r]),
                    "set CsvOptions::target_dtype = kFloat32 for a regression target");
  }
  return TensorDataset(data, target.to(options.target_dtype));
}

}  // namespace

CsvDataset::CsvDataset(const std::filesystem::path& path, const CsvOptions& options)
    : TensorDataset(csv_dataset(path, options)) {}

}  // namespace gradlab::data

#include "gradlab/data/csv.hpp"

#include <cmath>
#include <fstream>
#include <iterator>
#include <vector>

#include "gradlab/core/factories.hpp"
#include "gradlab/data/csv_format.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::data {

namespace {

// The whole file as text: its bytes (the file size bounds that allocation), inflated when they
// are gzip (the text is bounded by csv::max_text_size of the file size).
std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  GRADLAB_CHECK(in.good(), IOError, "read_csv", "cannot open '" + path.string() + "'",
                "a readable file",
                std::filesystem::exists(path) ? "no read access" : "no such file");
  const std::vector<unsigned char> bytes{std::istreambuf_iterator<char>(in),
                                         std::istreambuf_iterator<char>()};
  GRADLAB_CHECK(!in.bad(), IOError, "read_csv", "cannot read '" + path.string() + "'");
  try {
    return csv::decompress(bytes.data(), bytes.size(), csv::max_text_size(bytes.size()));
  } catch (const FormatError& e) {
    throw IOError(error_message("read_csv",
                                "cannot read '" + path.string() + "': " + e.what() +
                                    " (at byte offset " + std::to_string(e.offset()) + ")",
                                {}, {}, "is the .gz file truncated or corrupt?"));
  }
}

}  // namespace

CsvTable read_csv(const std::filesystem::path& path, const CsvOptions& options) {
  const std::string text = read_text(path);
  csv::Table t;
  try {
    t = csv::parse(text, options.delimiter, options.header);
  } catch (const csv::ParseError& e) {
    const std::string where = path.string() + ":" + std::to_string(e.line()) +
                              (e.column() ? ", column " + std::to_string(e.column()) : "");
    throw IOError(error_message("read_csv", where + ": " + e.what(), e.expected(), e.got()));
  }
  CsvTable table;
  table.columns = std::move(t.columns);
  table.values = from_vector(t.values, {static_cast<int64_t>(t.rows), static_cast<int64_t>(t.cols)},
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

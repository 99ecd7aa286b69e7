#pragma once
// CSV files of numbers (plain or gzip-compressed, told apart by their first bytes).

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "gradlab/data/dataset.hpp"

namespace gradlab::data {

/// How to read a CSV file.
struct CsvOptions {
  /// The first line names the columns.
  bool header = false;
  char delimiter = ',';
  /// The target column for CsvDataset (negative counts from the end: -1 = last).
  int64_t target_column = -1;
  /// dtype of the feature columns.
  ScalarType dtype = kFloat32;
  /// dtype of the target column (int64 for class labels: values must then be whole numbers).
  ScalarType target_dtype = kInt64;
};

/// A whole CSV file of numbers: column names (empty without a header) and values [rows, cols]
/// in float64.
struct CsvTable {
  std::vector<std::string> columns;
  Tensor values;
};

/// Reads `path` (.csv or .csv.gz); every row must have the same number of numeric fields.
/// Errors (IOError) name the file, the line and the column.
CsvTable read_csv(const std::filesystem::path& path, const CsvOptions& options = {});

/// A TensorDataset from a CSV file: data [rows, cols - 1] (all columns but the target) and
/// target [rows].
class CsvDataset : public TensorDataset {
 public:
  explicit CsvDataset(const std::filesystem::path& path, const CsvOptions& options = {});
};

}  // namespace gradlab::data

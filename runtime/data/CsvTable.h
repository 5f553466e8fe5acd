//===- CsvTable.h - CSV files of numbers under a header row -----*- C++ -*-===//
//
// Tabular data often arrives as a CSV file exported from pandas or a
// spreadsheet: a header row of column names, then one row of numbers per
// example. The reader takes what `pandas.read_csv(path).to_numpy()` would
// give for numeric columns, and nothing looser: a cell that is empty, not a
// number, NaN or infinite is an error naming its line and column, since
// training on a silently dropped or defaulted value is worse than stopping.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_DATA_CSVTABLE_H
#define RUNTIME_DATA_CSVTABLE_H

#include "runtime/base/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace graph::runtime::data {

/// A CSV file of numbers under one header row (what `pandas.read_csv` then
/// `df.to_numpy()` would give for numeric columns).
struct CsvTable {
  std::string path;
  /// The header's names, unique and non-empty.
  std::vector<std::string> columns;
  int64_t rows = 0;
  /// [rows, columns.size()], row-major.
  std::vector<double> values;

  /// The index of column `name`, or -1.
  int column(const std::string &name) const;
};

/// Reads the CSV file at `path`: comma-separated, a header row of unique,
/// non-empty names, then rows of as many finite numbers each. Fields may be
/// double-quoted ("" is a quote inside one) and are trimmed of surrounding
/// whitespace; CRLF line ends, a missing final newline and blank lines (as
/// pandas' skip_blank_lines) are accepted. Errors are invalidInput (notFound
/// for a missing file) and name the file, the line and the column.
Status readCsv(const std::string &path, CsvTable &out);

} // namespace graph::runtime::data

#endif // RUNTIME_DATA_CSVTABLE_H

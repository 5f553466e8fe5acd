//===- CsvFuzzer.cpp - libFuzzer target for the CSV reader ----------------===//
//
// A user's CSV file (graphrun --data csv:...) must read or give a clean
// Status; a table it reads must keep its contract: unique, non-empty column
// names and rows x columns finite numbers. Built by test/fuzz/CMakeLists.txt,
// run by test/fuzz/csv-reader.test and test/fuzz/run-fuzzer.sh.
//
//===----------------------------------------------------------------------===//

#include "FuzzFile.h"

#include "runtime/data/CsvTable.h"

#include <cmath>
#include <set>

using graph::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  graph::fuzz::FuzzFile file(data, size);
  graph::runtime::data::CsvTable table;
  if (!graph::runtime::data::readCsv(file.path(), table).isOk())
    return 0;
  require(!table.columns.empty());
  std::set<std::string> names(table.columns.begin(), table.columns.end());
  require(names.size() == table.columns.size() && !names.count(""));
  for (size_t i = 0; i < table.columns.size(); ++i)
    require(table.column(table.columns[i]) == static_cast<int>(i));
  require(table.rows >= 0 &&
          table.values.size() ==
              static_cast<size_t>(table.rows) * table.columns.size());
  for (double value : table.values)
    require(std::isfinite(value));
  return 0;
}

//===- NumpyFuzzer.cpp - libFuzzer target for the .npy / .npz reader ------===//
//
// A user's .npy file or .npz archive (graphrun --data arrays:...) must open
// or give a clean Status; an array it opens must convert every element it
// declares without reading outside the file. An input starting with a zip
// signature is an .npz archive, anything else a .npy file. Built by
// test/fuzz/CMakeLists.txt, run by test/fuzz/numpy-reader.test and
// test/fuzz/run-fuzzer.sh.
//
//===----------------------------------------------------------------------===//

#include "FuzzFile.h"

#include "runtime/data/NumpyArray.h"

#include <cstring>
#include <vector>

using graph::runtime::data::NumpyArray;

namespace {

/// Converts every element `array` declares, as the arrays source does, and
/// checks the count it promised. Arrays of more elements than an input of
/// a few kilobytes can hold are only checked for their promise.
void convertAll(const NumpyArray &array) {
  const int64_t rows = array.shape().empty() ? 1 : array.rows();
  const int64_t perRow = array.rowElements();
  graph::fuzz::require(rows >= 0 && perRow >= 0);
  if (rows == 0 || perRow == 0 || rows > (int64_t(1) << 20) / perRow)
    return;
  std::vector<float> floats(static_cast<size_t>(rows * perRow));
  std::vector<double> doubles(floats.size());
  array.rowsToFloat(0, rows, floats.data());
  array.rowsToDouble(0, rows, doubles.data());
  // One row at a time too: the pipeline's parallel map reads so.
  for (int64_t row = 0; row < rows; ++row)
    array.rowsToFloat(row, 1, floats.data() + row * perRow);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  graph::fuzz::FuzzFile file(data, size);
  if (size >= 4 && std::memcmp(data, "PK\x03\x04", 4) == 0) {
    std::vector<NumpyArray> arrays;
    if (graph::runtime::data::openNpz(file.path(), arrays).isOk())
      for (const NumpyArray &array : arrays)
        convertAll(array);
    return 0;
  }
  NumpyArray array;
  if (graph::runtime::data::openNpy(file.path(), array).isOk())
    convertAll(array);
  return 0;
}

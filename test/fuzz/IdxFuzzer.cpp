//===- IdxFuzzer.cpp - libFuzzer target for the IDX reader ----------------===//
//
// An IDX file, gzipped or not (graphrun --data fashion_mnist, or a user's
// MNIST-format files), must read or give a clean Status, without allocating
// for data the file does not hold; a file it reads holds exactly the
// elements its dimensions declare. Built by test/fuzz/CMakeLists.txt, run by
// test/fuzz/idx-reader.test and test/fuzz/run-fuzzer.sh.
//
//===----------------------------------------------------------------------===//

#include "FuzzFile.h"

#include "runtime/data/IdxReader.h"

using graph::fuzz::require;
using namespace graph::runtime::data;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  graph::fuzz::FuzzFile file(data, size);
  IdxArray array;
  if (!readIdxFile(file.path(), array).isOk())
    return 0;
  size_t elements = 1;
  for (int64_t dim : array.dims) {
    require(dim >= 0);
    elements *= static_cast<size_t>(dim);
  }
  require(!array.dims.empty());
  if (array.elementType == kIdxUnsignedByte)
    require(array.data.size() == elements && array.floats.empty());
  else
    require(array.elementType == kIdxFloat32 &&
            array.floats.size() == elements && array.data.empty());
  return 0;
}

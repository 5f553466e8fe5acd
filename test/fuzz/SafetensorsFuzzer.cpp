//===- SafetensorsFuzzer.cpp - libFuzzer target for the safetensors reader ===//
//
// graphrun's checkpoints and --save-weights files are safetensors, and a
// resume or --load-weights reads one back that a crash, a full disk or
// another tool may have written: every input must parse or give a clean
// Status, and a file that parses must keep the reader's contract (each
// tensor holds product(shape) * dtype size bytes, the tensors tile the data).
// Built by test/fuzz/CMakeLists.txt, run by test/fuzz/safetensors-reader.test
// and test/fuzz/run-fuzzer.sh.
//
//===----------------------------------------------------------------------===//

#include "FuzzFile.h"

#include "runtime/checkpoint/Safetensors.h"

#include <string>

using graph::fuzz::require;
using namespace graph::runtime::checkpoint;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  SafetensorsFile file;
  std::string bytes(reinterpret_cast<const char *>(data), size);
  if (!SafetensorsFile::parse(std::move(bytes), "fuzz.safetensors", file)
           .isOk())
    return 0;
  uint64_t at = 0;
  for (const TensorInfo &tensor : file.tensors()) {
    uint64_t elements = 1;
    for (int64_t dim : tensor.shape) {
      require(dim >= 0);
      elements *= static_cast<uint64_t>(dim);
    }
    require(tensor.begin == at && tensor.end >= tensor.begin);
    require(file.data(tensor).size() == tensor.end - tensor.begin);
    require(file.data(tensor).size() ==
            elements * static_cast<uint64_t>(dtypeSize(tensor.dtype)));
    require(file.find(tensor.name) == &tensor);
    at = tensor.end;
  }
  return 0;
}

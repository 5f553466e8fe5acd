//===- CompileModel.h - a Keras model to a plan, in one call ----*- C++ -*-===//
//
// What `graph-import model.keras | graphc -o model.plan` does, in process,
// for the Python module: a Keras model (a .keras or .json file, or the JSON
// a live keras.Model serializes to) becomes a training plan's bytes. The
// header names no MLIR type, so that the module, built with exceptions and
// RTTI, can call it while MLIR and LLVM are built without either.
//
//===----------------------------------------------------------------------===//

#ifndef PYTHON_COMPILEMODEL_H
#define PYTHON_COMPILEMODEL_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace graph::python {

struct CompileOptions {
  /// graph-import's overrides (KerasImporter.h's ImportOptions).
  std::optional<int64_t> batchSize;
  std::optional<std::string> loss, optimizer;
  std::optional<double> learningRate;
  /// graphc's --replicas (empty: its default counts).
  std::vector<int64_t> replicas;
  /// graphc's --precision (empty: the model's own dtype policy).
  std::string precision;
};

/// Compiles `source`: a path to a .keras, .h5 or .json file when `isPath`,
/// else a model's JSON (Keras' serialized model with its compile_config).
/// On failure returns false with the importer's or the compiler's messages
/// in `error`, one per line, as the tools print them.
bool compileKerasModel(const std::string &source, bool isPath,
                       const CompileOptions &options,
                       std::vector<uint8_t> &plan, std::string &error);

} // namespace graph::python

#endif // PYTHON_COMPILEMODEL_H

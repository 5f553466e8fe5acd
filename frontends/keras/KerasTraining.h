//===- KerasTraining.h - compile_config to graph.training -------*- C++ -*-===//
//
// What Keras' compile() said (a Keras 3 config's compile_config), with the
// importer's options laid over it: the loss, optimizer and metrics of
// graph.training.
//
//===----------------------------------------------------------------------===//

#ifndef FRONTENDS_KERAS_KERASTRAINING_H
#define FRONTENDS_KERAS_KERASTRAINING_H

#include "frontends/builder/ModelBuilder.h"
#include "frontends/keras/KerasConfigReader.h"
#include "frontends/keras/KerasImporter.h"

#include <optional>

namespace graph::keras {

/// Checks the options by themselves; errors are reported at `fileLoc`.
mlir::LogicalResult checkImportOptions(const ImportOptions &options,
                                       mlir::Location fileLoc);

/// Reads the compile_config of the model config `root` and applies
/// `options`, for a model whose outputs (Keras' output layers) are
/// `outputs`: a loss, a loss weight and metrics per output, as Keras'
/// compile() takes them (one for all, a list by position, a dict by
/// name). `out` stays empty when no loss is known: the model is imported
/// without a graph.training.
mlir::LogicalResult readTraining(ConfigReader &root,
                                 const ImportOptions &options,
                                 llvm::ArrayRef<std::string> outputs,
                                 std::optional<builder::Training> &out);

} // namespace graph::keras

#endif // FRONTENDS_KERAS_KERASTRAINING_H

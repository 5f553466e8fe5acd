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

/// The model config `config` (a JSON object, as a .keras archive's
/// config.json) with `options` laid over its compile_config as they were
/// over the training: the optimizer (another class by its Keras name, with
/// the flags' values; the same class keeps its config), learning rate,
/// clipping and weight decay, the loss and from_logits. The config graphrun
/// writes back into Keras' files then says what was trained, and Keras'
/// load_model restores the optimizer's variables into the optimizer they
/// belong to. Unchanged without such options.
void applyOptionsToCompileConfig(llvm::json::Object &config,
                                 const ImportOptions &options);

} // namespace graph::keras

#endif // FRONTENDS_KERAS_KERASTRAINING_H

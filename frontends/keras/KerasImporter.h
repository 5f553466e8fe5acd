//===- KerasImporter.h - Keras models to the graph dialect ------*- C++ -*-===//
//
// Reads a Keras model config, as Keras 3 or tf.keras 2 `model.to_json()`
// writes it or as the `config.json` of a Keras 3 `.keras` archive, and
// rebuilds the model through graph::builder::ModelBuilder: the importer only
// parses and checks JSON; the builder decides which ops a layer becomes.
//
// Anything the config asks for that the graph dialect cannot express (a
// regularizer, channels_first, a grouped convolution, ...) is an error, never
// silently dropped: an imported model trains as the Keras one would.
//
//===----------------------------------------------------------------------===//

#ifndef FRONTENDS_KERAS_KERASIMPORTER_H
#define FRONTENDS_KERAS_KERASIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace graph::keras {

/// Training settings that override or supply the model's compile_config.
struct ImportOptions {
  /// "categorical_crossentropy" or "sparse_categorical_crossentropy".
  std::optional<std::string> loss;
  std::optional<bool> fromLogits;
  /// "sgd", "adam", "rmsprop", "adagrad", "adamax" or "nadam".
  std::optional<std::string> optimizer;
  std::optional<double> learningRate;
  /// Keras' optimizer options (0 is off); a clipping option given here
  /// replaces the file's clipping, whichever kind it was.
  std::optional<double> clipnorm, globalClipnorm, clipvalue, weightDecay;
  /// The global batch. When absent: the batch the model fixes (a number,
  /// not null, as dimension 0 of its inputs' batch_shape), else 32 (Keras
  /// fit's default). Given, it must agree with a batch the model fixes.
  std::optional<int64_t> batchSize;
};

/// Reads a Keras model from `path`: a `.json` as written by `to_json`, or a
/// `.keras` zip archive ("-" reads JSON from stdin). Emits MLIR diagnostics
/// through `ctx` and returns null on any error.
mlir::OwningOpRef<mlir::ModuleOp> importKerasFile(llvm::StringRef path,
                                                  mlir::MLIRContext &ctx,
                                                  const ImportOptions &options);

/// Like importKerasFile, from the bytes of such a file; `bufferName` names
/// them in diagnostics. They are read as a `.keras` archive if they look
/// like a zip archive or the name ends in `.keras`, as JSON otherwise.
mlir::OwningOpRef<mlir::ModuleOp>
importKerasBuffer(llvm::StringRef bytes, llvm::StringRef bufferName,
                  mlir::MLIRContext &ctx, const ImportOptions &options);

/// Like importKerasFile, from JSON text; `bufferName` names it in
/// diagnostics.
mlir::OwningOpRef<mlir::ModuleOp> importKerasJson(llvm::StringRef json,
                                                  llvm::StringRef bufferName,
                                                  mlir::MLIRContext &ctx,
                                                  const ImportOptions &options);

} // namespace graph::keras

#endif // FRONTENDS_KERAS_KERASIMPORTER_H

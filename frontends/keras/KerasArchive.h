//===- KerasArchive.h - the config of a .keras archive ----------*- C++ -*-===//
//
// A `.keras` file (Keras 3 `model.save`) is a zip archive holding
// `config.json` (the model, as `to_json` writes it, plus compile_config),
// `metadata.json` and `model.weights.h5`. The importer needs the config.
//
//===----------------------------------------------------------------------===//

#ifndef FRONTENDS_KERAS_KERASARCHIVE_H
#define FRONTENDS_KERAS_KERASARCHIVE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace graph::keras {

/// The member the model config lives in.
inline constexpr llvm::StringLiteral kKerasConfigMember = "config.json";

/// True if `bytes` begin like a zip archive.
bool looksLikeZip(llvm::StringRef bytes);

/// The text of `config.json` in the zip archive `bytes`, or an error that
/// says what is wrong with the archive (no file name: the caller adds it).
llvm::Expected<std::string> readKerasArchiveConfig(llvm::StringRef bytes);

} // namespace graph::keras

#endif // FRONTENDS_KERAS_KERASARCHIVE_H

//===- JsonSourceMap.h - positions of parsed JSON values --------*- C++ -*-===//
//
// llvm::json keeps no source positions, yet an importer's error should point
// at the offending field. A JsonSourceMap walks the text a second time
// alongside the parsed tree and records where each value begins.
//
//===----------------------------------------------------------------------===//

#ifndef FRONTENDS_KERAS_JSONSOURCEMAP_H
#define FRONTENDS_KERAS_JSONSOURCEMAP_H

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace graph::keras {

/// A 1-based line and column.
struct LineColumn {
  unsigned line = 1;
  unsigned column = 1;
};

/// The line and column of byte `offset` of `text` (clamped to its end).
LineColumn lineColumnOf(llvm::StringRef text, size_t offset);

class JsonSourceMap {
public:
  /// `root` must have been parsed from `text`, and both must outlive the map
  /// and stay unmodified: values are identified by their address.
  JsonSourceMap(llvm::StringRef text, const llvm::json::Value &root);

  /// Where `value` begins; the start of the text if it is unknown.
  LineColumn lineColumnOf(const llvm::json::Value *value) const;

private:
  void walk(const llvm::json::Value &value);
  void skipValue();
  void skipString();
  void skipWhitespace();
  /// Reads a string literal at the cursor, decoding its escapes.
  std::string readString();

  llvm::StringRef text;
  size_t pos = 0;
  llvm::DenseMap<const llvm::json::Value *, size_t> offsets;
  /// The offset at which each line begins: every layer's location is looked
  /// up, and counting lines from the start of the text each time made an
  /// import quadratic in the file's size.
  std::vector<size_t> lineStarts;
};

} // namespace graph::keras

#endif // FRONTENDS_KERAS_JSONSOURCEMAP_H

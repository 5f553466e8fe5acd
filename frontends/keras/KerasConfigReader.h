//===- KerasConfigReader.h - reading Keras config objects -------*- C++ -*-===//
//
// A Keras config is JSON objects all the way down: the model, each layer's
// config, initializers, the compile_config. ConfigReader reads the fields of
// one such object, keeps track of which it read (a field nobody read, with a
// value, is an error: it would change what trains), and reports errors as
// "field 'NAME': ..." at the field's position in the file.
//
//===----------------------------------------------------------------------===//

#ifndef FRONTENDS_KERAS_KERASCONFIGREADER_H
#define FRONTENDS_KERAS_KERASCONFIGREADER_H

#include "frontends/keras/JsonSourceMap.h"

#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/JSON.h"

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace graph::keras {

/// Reports one message at a location; who the message is about (a layer,
/// the file) is the sink's business.
using ErrorSink = std::function<void(mlir::Location, const llvm::Twine &)>;

/// A JSON value, short enough for a one-line message: strings quoted, Keras
/// objects by their class, other objects and lists elided past a few dozen
/// characters.
std::string describe(const llvm::json::Value &value);

/// What kind of JSON value `value` is ("a list", "an object", ...).
llvm::StringRef kindName(const llvm::json::Value &value);

/// The shortest decimal that reads back as `value`.
std::string formatNumber(double value);

/// A parsed Keras config with the positions of its values.
class ConfigDocument {
public:
  ConfigDocument(llvm::StringRef bufferName, llvm::StringRef text,
                 llvm::json::Value root, mlir::MLIRContext &ctx)
      : bufferName(bufferName.str()), ctx(ctx), rootValue(std::move(root)),
        sourceMap(text, rootValue) {}
  ConfigDocument(const ConfigDocument &) = delete;
  ConfigDocument &operator=(const ConfigDocument &) = delete;

  const llvm::json::Value &root() const { return rootValue; }

  LineColumn position(const llvm::json::Value *value) const {
    return sourceMap.lineColumnOf(value);
  }
  /// Where `value` begins in the file.
  mlir::Location locate(const llvm::json::Value *value) const {
    LineColumn at = position(value);
    return mlir::FileLineColLoc::get(&ctx, bufferName, at.line, at.column);
  }
  /// The file as a whole (line 0: no position).
  mlir::Location fileLoc() const {
    return mlir::FileLineColLoc::get(&ctx, bufferName, 0, 0);
  }

private:
  std::string bufferName;
  mlir::MLIRContext &ctx;
  // Declared before sourceMap, which records addresses inside it.
  llvm::json::Value rootValue;
  JsonSourceMap sourceMap;
};

/// Reads the fields of one JSON object. Fields absent or null keep the
/// caller's default: Keras writes null for "unset".
class ConfigReader {
public:
  /// `path` prefixes field names in messages ("compile_config.").
  ConfigReader(const ConfigDocument &doc, const llvm::json::Value &value,
               const llvm::json::Object &object, std::string path,
               ErrorSink sink)
      : doc(doc), value(value), object(object), path(std::move(path)),
        sink(std::move(sink)) {}

  const ConfigDocument &document() const { return doc; }
  const ErrorSink &errorSink() const { return sink; }

  /// The field's value, null if absent; marks it read.
  const llvm::json::Value *get(llvm::StringRef key) {
    used.insert(key);
    return object.get(key);
  }
  /// Like get, and null for a JSON null too.
  const llvm::json::Value *getSet(llvm::StringRef key) {
    const llvm::json::Value *field = get(key);
    return field && field->kind() != llvm::json::Value::Null ? field : nullptr;
  }
  /// Marks a field read without reading it: it does not change the result.
  void ignore(llvm::StringRef key) { used.insert(key); }

  /// A reader for the object in field `key`, whose fields are named
  /// `key.<field>`; reports and returns null if it is missing or no object.
  std::unique_ptr<ConfigReader> child(llvm::StringRef key);

  /// An error about field `key`, at its value (at the object if absent).
  mlir::LogicalResult error(llvm::StringRef key,
                            const llvm::Twine &message) const;
  /// An error about field `key` at `at`, a value inside the field.
  mlir::LogicalResult errorAt(const llvm::json::Value *at, llvm::StringRef key,
                              const llvm::Twine &message) const;
  mlir::LogicalResult missing(llvm::StringRef key) const;
  /// "field 'KEY': unsupported value V (EXPECTED)"; the field must be set.
  mlir::LogicalResult unsupportedValue(llvm::StringRef key,
                                       const llvm::Twine &expected) const;

  mlir::LogicalResult readInt(llvm::StringRef key, int64_t &out,
                              bool required = false);
  mlir::LogicalResult readDouble(llvm::StringRef key, double &out,
                                 bool required = false);
  mlir::LogicalResult readBool(llvm::StringRef key, bool &out);
  mlir::LogicalResult readString(llvm::StringRef key, std::string &out,
                                 bool required = false);
  /// A seed: null or an integer.
  mlir::LogicalResult readSeed(llvm::StringRef key,
                               std::optional<int64_t> &out);
  mlir::LogicalResult readInts(llvm::StringRef key, std::vector<int64_t> &out,
                               bool required = false);
  /// Keras' 2-D size arguments: one integer for both axes, or two.
  mlir::LogicalResult readPair(llvm::StringRef key, std::array<int64_t, 2> &out,
                               bool required = false);

  /// A field that must be unset: `why` says what is unsupported.
  mlir::LogicalResult expectUnset(llvm::StringRef key, llvm::StringRef why);
  /// Fields that must be unset or hold the one supported value.
  mlir::LogicalResult expectString(llvm::StringRef key,
                                   llvm::StringRef expected);
  mlir::LogicalResult expectBool(llvm::StringRef key, bool expected);
  mlir::LogicalResult expectNumber(llvm::StringRef key, double expected,
                                   llvm::StringRef why = "");

  /// Reports the first field (in file order) that nobody read and that is
  /// set: a setting the importer does not know must not be dropped.
  mlir::LogicalResult checkNoOtherFields();

  /// "field 'PATH.KEY'", as messages name field `key`.
  std::string fieldName(llvm::StringRef key) const {
    return "field '" + path + key.str() + "'";
  }

private:
  const ConfigDocument &doc;
  const llvm::json::Value &value;
  const llvm::json::Object &object;
  std::string path;
  ErrorSink sink;
  llvm::StringSet<> used;
};

} // namespace graph::keras

#endif // FRONTENDS_KERAS_KERASCONFIGREADER_H

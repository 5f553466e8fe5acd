//===- KerasConfigReader.cpp - reading Keras config objects ---------------===//

#include "frontends/keras/KerasConfigReader.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>
#include <tuple>

namespace json = llvm::json;
using mlir::failed;
using mlir::failure;
using mlir::LogicalResult;
using mlir::success;

namespace graph::keras {

std::string formatNumber(double value) {
  char text[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value)
      break;
  }
  return text;
}

llvm::StringRef kindName(const json::Value &value) {
  switch (value.kind()) {
  case json::Value::Null:
    return "null";
  case json::Value::Boolean:
    return "a boolean";
  case json::Value::Number:
    return "a number";
  case json::Value::String:
    return "a string";
  case json::Value::Array:
    return "a list";
  case json::Value::Object:
    return "an object";
  }
  llvm_unreachable("unknown JSON kind");
}

std::string describe(const json::Value &value) {
  if (std::optional<llvm::StringRef> s = value.getAsString())
    return ("'" + *s + "'").str();
  if (const json::Object *object = value.getAsObject())
    if (std::optional<llvm::StringRef> className =
            object->getString("class_name"))
      return ("{class_name: '" + *className + "', ...}").str();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << value;
  if (text.size() > 60)
    text = text.substr(0, 57) + "...";
  return text;
}

std::unique_ptr<ConfigReader> ConfigReader::child(llvm::StringRef key) {
  const json::Value *field = get(key);
  if (!field) {
    (void)missing(key);
    return nullptr;
  }
  const json::Object *childObject = field->getAsObject();
  if (!childObject) {
    (void)error(key, "expected an object, got " + describe(*field));
    return nullptr;
  }
  return std::make_unique<ConfigReader>(doc, *field, *childObject,
                                        path + key.str() + ".", sink);
}

LogicalResult ConfigReader::error(llvm::StringRef key,
                                  const llvm::Twine &message) const {
  const json::Value *field = object.get(key);
  return errorAt(field ? field : &value, key, message);
}

LogicalResult ConfigReader::errorAt(const json::Value *at, llvm::StringRef key,
                                    const llvm::Twine &message) const {
  sink(doc.locate(at), fieldName(key) + ": " + message);
  return failure();
}

LogicalResult ConfigReader::missing(llvm::StringRef key) const {
  sink(doc.locate(&value), "missing " + fieldName(key));
  return failure();
}

LogicalResult
ConfigReader::unsupportedValue(llvm::StringRef key,
                               const llvm::Twine &expected) const {
  return error(key, "unsupported value " + describe(*object.get(key)) + " (" +
                        expected + ")");
}

LogicalResult ConfigReader::readInt(llvm::StringRef key, int64_t &out,
                                    bool required) {
  const json::Value *field = getSet(key);
  if (!field)
    return required ? missing(key) : success();
  std::optional<int64_t> number = field->getAsInteger();
  if (!number)
    return error(key, "expected an integer, got " + describe(*field));
  out = *number;
  return success();
}

LogicalResult ConfigReader::readDouble(llvm::StringRef key, double &out,
                                       bool required) {
  const json::Value *field = getSet(key);
  if (!field)
    return required ? missing(key) : success();
  std::optional<double> number = field->getAsNumber();
  if (!number)
    return error(key, "expected a number, got " + describe(*field));
  out = *number;
  return success();
}

LogicalResult ConfigReader::readBool(llvm::StringRef key, bool &out) {
  const json::Value *field = getSet(key);
  if (!field)
    return success();
  std::optional<bool> flag = field->getAsBoolean();
  if (!flag)
    return error(key, "expected true or false, got " + describe(*field));
  out = *flag;
  return success();
}

LogicalResult ConfigReader::readString(llvm::StringRef key, std::string &out,
                                       bool required) {
  const json::Value *field = getSet(key);
  if (!field)
    return required ? missing(key) : success();
  std::optional<llvm::StringRef> text = field->getAsString();
  if (!text)
    return error(key, "expected a string, got " + describe(*field));
  out = text->str();
  return success();
}

LogicalResult ConfigReader::readSeed(llvm::StringRef key,
                                     std::optional<int64_t> &out) {
  if (!getSet(key))
    return success();
  int64_t seed = 0;
  if (failed(readInt(key, seed)))
    return failure();
  out = seed;
  return success();
}

LogicalResult ConfigReader::readInts(llvm::StringRef key,
                                     std::vector<int64_t> &out, bool required) {
  const json::Value *field = getSet(key);
  if (!field)
    return required ? missing(key) : success();
  const json::Array *list = field->getAsArray();
  std::vector<int64_t> result;
  for (size_t i = 0; list && i < list->size(); ++i) {
    std::optional<int64_t> number = (*list)[i].getAsInteger();
    if (!number)
      break;
    result.push_back(*number);
  }
  if (!list || result.size() != list->size())
    return error(key, "expected a list of integers, got " + describe(*field));
  out = std::move(result);
  return success();
}

LogicalResult ConfigReader::readPair(llvm::StringRef key,
                                     std::array<int64_t, 2> &out,
                                     bool required) {
  const json::Value *field = getSet(key);
  if (!field)
    return required ? missing(key) : success();
  if (std::optional<int64_t> both = field->getAsInteger()) {
    out = {*both, *both};
    return success();
  }
  const json::Array *list = field->getAsArray();
  std::optional<int64_t> first, second;
  if (list && list->size() == 2) {
    first = (*list)[0].getAsInteger();
    second = (*list)[1].getAsInteger();
  }
  if (!first || !second)
    return error(key, "expected 2 integers (height, width), got " +
                          describe(*field));
  out = {*first, *second};
  return success();
}

LogicalResult ConfigReader::expectUnset(llvm::StringRef key,
                                        llvm::StringRef why) {
  if (!getSet(key))
    return success();
  return unsupportedValue(key, why + "; expected null");
}

LogicalResult ConfigReader::expectString(llvm::StringRef key,
                                         llvm::StringRef expected) {
  const json::Value *field = getSet(key);
  if (!field || field->getAsString() == expected)
    return success();
  return unsupportedValue(key, "expected '" + expected + "'");
}

LogicalResult ConfigReader::expectBool(llvm::StringRef key, bool expected) {
  const json::Value *field = getSet(key);
  if (!field || field->getAsBoolean() == expected)
    return success();
  return unsupportedValue(key, expected ? "expected true" : "expected false");
}

LogicalResult ConfigReader::expectNumber(llvm::StringRef key, double expected,
                                         llvm::StringRef why) {
  const json::Value *field = getSet(key);
  if (!field || field->getAsNumber() == expected)
    return success();
  std::string text = "expected " + formatNumber(expected);
  return unsupportedValue(key, why.empty() ? text : text + ": " + why.str());
}

LogicalResult ConfigReader::checkNoOtherFields() {
  const json::Value *first = nullptr;
  std::string firstKey;
  LineColumn firstAt;
  for (const auto &[key, field] : object) {
    if (used.contains(key) || field.kind() == json::Value::Null)
      continue;
    LineColumn at = doc.position(&field);
    if (!first ||
        std::tie(at.line, at.column) < std::tie(firstAt.line, firstAt.column)) {
      first = &field;
      firstKey = key.str();
      firstAt = at;
    }
  }
  if (!first)
    return success();
  return error(firstKey, "not supported by the importer (value " +
                             describe(*first) + ")");
}

} // namespace graph::keras

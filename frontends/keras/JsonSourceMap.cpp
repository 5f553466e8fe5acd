//===- JsonSourceMap.cpp - positions of parsed JSON values ----------------===//

#include "frontends/keras/JsonSourceMap.h"

#include "llvm/Support/ConvertUTF.h"

#include <algorithm>

namespace graph::keras {

LineColumn lineColumnOf(llvm::StringRef text, size_t offset) {
  offset = std::min(offset, text.size());
  llvm::StringRef before = text.take_front(offset);
  size_t lineStart = before.rfind('\n');
  lineStart = lineStart == llvm::StringRef::npos ? 0 : lineStart + 1;
  return {static_cast<unsigned>(before.count('\n') + 1),
          static_cast<unsigned>(offset - lineStart + 1)};
}

JsonSourceMap::JsonSourceMap(llvm::StringRef text,
                             const llvm::json::Value &root)
    : text(text) {
  walk(root);
  lineStarts.push_back(0);
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n')
      lineStarts.push_back(i + 1);
}

LineColumn JsonSourceMap::lineColumnOf(const llvm::json::Value *value) const {
  auto it = offsets.find(value);
  size_t offset = it == offsets.end() ? 0 : std::min(it->second, text.size());
  // The last line starting at or before `offset`.
  auto line = std::upper_bound(lineStarts.begin(), lineStarts.end(), offset);
  size_t index = line - lineStarts.begin() - 1;
  return {static_cast<unsigned>(index + 1),
          static_cast<unsigned>(offset - lineStarts[index] + 1)};
}

void JsonSourceMap::skipWhitespace() {
  while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                               text[pos] == '\n' || text[pos] == '\r'))
    ++pos;
}

void JsonSourceMap::skipString() {
  ++pos; // the opening quote
  while (pos < text.size() && text[pos] != '"')
    pos += text[pos] == '\\' ? 2 : 1;
  ++pos; // the closing quote
}

std::string JsonSourceMap::readString() {
  std::string result;
  ++pos;
  while (pos < text.size() && text[pos] != '"') {
    char c = text[pos++];
    if (c != '\\' || pos >= text.size()) {
      result.push_back(c);
      continue;
    }
    char escape = text[pos++];
    switch (escape) {
    case 'b':
      result.push_back('\b');
      break;
    case 'f':
      result.push_back('\f');
      break;
    case 'n':
      result.push_back('\n');
      break;
    case 'r':
      result.push_back('\r');
      break;
    case 't':
      result.push_back('\t');
      break;
    case 'u': {
      auto hex4 = [&](unsigned &out) {
        if (pos + 4 > text.size() || text.substr(pos, 4).getAsInteger(16, out))
          return false;
        pos += 4;
        return true;
      };
      unsigned code = 0;
      if (!hex4(code))
        break;
      // A UTF-16 surrogate pair spells one code point in two escapes.
      if (code >= 0xD800 && code < 0xDC00 &&
          text.substr(pos).starts_with("\\u")) {
        size_t save = pos;
        pos += 2;
        unsigned low = 0;
        if (hex4(low) && low >= 0xDC00 && low < 0xE000)
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        else
          pos = save;
      }
      char buffer[UNI_MAX_UTF8_BYTES_PER_CODE_POINT];
      char *end = buffer;
      if (llvm::ConvertCodePointToUTF8(code, end))
        result.append(buffer, end);
      break;
    }
    default: // '"', '\\', '/'
      result.push_back(escape);
    }
  }
  ++pos;
  return result;
}

void JsonSourceMap::skipValue() {
  skipWhitespace();
  if (pos >= text.size())
    return;
  char open = text[pos];
  if (open == '"')
    return skipString();
  if (open != '{' && open != '[') {
    while (pos < text.size() &&
           !llvm::StringRef(",]} \t\r\n").contains(text[pos]))
      ++pos;
    return;
  }
  int depth = 0;
  while (pos < text.size()) {
    char c = text[pos];
    if (c == '"') {
      skipString();
      continue;
    }
    ++pos;
    if (c == '{' || c == '[')
      ++depth;
    else if ((c == '}' || c == ']') && --depth == 0)
      return;
  }
}

void JsonSourceMap::walk(const llvm::json::Value &value) {
  skipWhitespace();
  if (pos >= text.size())
    return;
  offsets[&value] = pos;
  if (const llvm::json::Object *object = value.getAsObject()) {
    ++pos; // '{'
    skipWhitespace();
    while (pos < text.size() && text[pos] != '}') {
      std::string key = readString();
      skipWhitespace();
      ++pos; // ':'
      if (const llvm::json::Value *member = object->get(key))
        walk(*member);
      else
        skipValue();
      skipWhitespace();
      if (pos < text.size() && text[pos] == ',')
        ++pos;
      skipWhitespace();
    }
    ++pos; // '}'
    return;
  }
  if (const llvm::json::Array *array = value.getAsArray()) {
    ++pos; // '['
    skipWhitespace();
    for (const llvm::json::Value &element : *array) {
      walk(element);
      skipWhitespace();
      if (pos < text.size() && text[pos] == ',')
        ++pos;
    }
    skipWhitespace();
    ++pos; // ']'
    return;
  }
  skipValue();
}

} // namespace graph::keras

//===- NumpyArray.cpp - NumPy's .npy files and .npz archives --------------===//
//
// The header is parsed by a small reader of the Python literals NumPy writes
// there (strings, True/False/None, integers, tuples and lists), not by a
// Python parser: nothing in a header is evaluated, and a header that is not a
// dict of those three keys is refused.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/NumpyArray.h"

#include "runtime/base/HostMemory.h"

#include "runtime/base/ZipArchive.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace graph::runtime::data {
namespace {

/// np.save writes headers of a few hundred bytes (NumPy itself refuses
/// headers over 10,000 bytes unless told otherwise); a larger one is corrupt,
/// and the cap bounds the parser's work.
constexpr uint64_t kMaxHeaderBytes = uint64_t(1) << 20;
/// Deeper nesting than any header NumPy writes (a structured dtype's
/// sub-arrays); the cap keeps the recursive parser's stack small.
constexpr int kMaxNesting = 32;
/// Reads of at most this many bytes (a batch's rows) go through pread.
constexpr int64_t kPreadBytes = int64_t(4) << 20;
/// The limit on an .npz member's size where the memory available cannot be
/// read.
constexpr uint64_t kFallbackMemberLimit = uint64_t(64) << 30;

size_t itemSize(ElementType type) {
  switch (type) {
  case ElementType::i8:
  case ElementType::u8:
  case ElementType::boolean:
    return 1;
  case ElementType::f16:
  case ElementType::i16:
  case ElementType::u16:
    return 2;
  case ElementType::f32:
  case ElementType::i32:
  case ElementType::u32:
    return 4;
  case ElementType::f64:
  case ElementType::i64:
  case ElementType::u64:
    return 8;
  }
  return 1;
}

//===----------------------------------------------------------------------===//
// The header: a Python dict literal
//===----------------------------------------------------------------------===//

/// One Python literal of a header.
struct Literal {
  enum class Kind { string, boolean, none, integer, tuple, list };
  Kind kind = Kind::none;
  /// A string's contents, or an integer's digits (with its sign).
  std::string text;
  bool flag = false;
  std::vector<Literal> items;
};

/// A reader of the literals NumPy writes in a header; `fault()` says what is
/// wrong and where when a parse returns false.
class LiteralParser {
public:
  explicit LiteralParser(std::string_view text) : text_(text) {}

  /// The whole header: one dict of string keys, then only whitespace (NumPy
  /// pads with spaces and ends with '\n').
  bool parseDict(std::vector<std::pair<std::string, Literal>> &out) {
    skipSpace();
    if (!consume('{'))
      return expected("'{' (the header is a Python dict)");
    skipSpace();
    while (!consume('}')) {
      Literal key;
      if (peek() != '\'' && peek() != '"')
        return expected("a quoted key or '}'");
      if (!parseString(key))
        return false;
      skipSpace();
      if (!consume(':'))
        return expected("':' after the key '" + key.text + "'");
      skipSpace();
      Literal value;
      if (!parseValue(value, 1))
        return false;
      out.emplace_back(key.text, std::move(value));
      skipSpace();
      if (consume(',')) {
        skipSpace();
        continue;
      }
      if (peek() != '}')
        return expected("',' or '}' after the value of '" + key.text + "'");
    }
    skipSpace();
    if (pos_ != text_.size())
      return expected("only padding after the dict's '}'");
    return true;
  }

  const std::string &fault() const { return fault_; }

private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool consume(char c) {
    if (peek() != c || pos_ >= text_.size())
      return false;
    ++pos_;
    return true;
  }
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool expected(const std::string &what) {
    std::string found = "the header's end";
    if (pos_ < text_.size())
      found = std::string("'").append(1, text_[pos_]).append("'");
    fault_ = "expected " + what + " at character " + std::to_string(pos_) +
             ", found " + found;
    return false;
  }

  bool parseValue(Literal &out, int depth) {
    if (depth > kMaxNesting) {
      fault_ = "nested more than " + std::to_string(kMaxNesting) +
               " deep at character " + std::to_string(pos_);
      return false;
    }
    char c = peek();
    if (c == '\'' || c == '"')
      return parseString(out);
    if (c == '(' || c == '[')
      return parseSequence(out, depth);
    if (c == '-' || c == '+' || (c >= '0' && c <= '9'))
      return parseInteger(out);
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_') {
      size_t start = pos_;
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
              text_[pos_] == '_'))
        ++pos_;
      std::string_view word = text_.substr(start, pos_ - start);
      if (word == "True" || word == "False") {
        out.kind = Literal::Kind::boolean;
        out.flag = word == "True";
        return true;
      }
      if (word == "None") {
        out.kind = Literal::Kind::none;
        return true;
      }
      pos_ = start;
      fault_ = "'" + std::string(word) + "' at character " +
               std::to_string(start) +
               " is not a literal (a header holds only strings, numbers, "
               "True, False, None, tuples and lists)";
      return false;
    }
    return expected("a value");
  }

  bool parseString(Literal &out) {
    char quote = text_[pos_++];
    out.kind = Literal::Kind::string;
    out.text.clear();
    while (pos_ < text_.size() && text_[pos_] != quote) {
      char c = text_[pos_++];
      if (c == '\n')
        return expected("the string's closing quote");
      if (c == '\\' && pos_ < text_.size()) {
        char next = text_[pos_++];
        // Only the escapes of quotes and backslashes mean anything here;
        // others are kept as written.
        if (next != '\\' && next != '\'' && next != '"')
          out.text += c;
        c = next;
      }
      out.text += c;
    }
    if (!consume(quote))
      return expected("the string's closing quote");
    return true;
  }

  bool parseInteger(Literal &out) {
    size_t start = pos_;
    if (peek() == '-' || peek() == '+')
      ++pos_;
    size_t digits = pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9')
      ++pos_;
    if (pos_ == digits)
      return expected("a digit");
    out.kind = Literal::Kind::integer;
    out.text.assign(text_.substr(start, pos_ - start));
    // Python 2's long integers, in the shapes of files NumPy wrote under it.
    if (peek() == 'L' || peek() == 'l')
      ++pos_;
    if (peek() == '.' || peek() == 'e' || peek() == 'E' || peek() == 'j')
      return expected("an integer");
    return true;
  }

  /// A tuple or a list; "(5)" is 5 (a parenthesised value), "(5,)" a tuple.
  bool parseSequence(Literal &out, int depth) {
    char close = text_[pos_] == '(' ? ')' : ']';
    bool tuple = close == ')';
    ++pos_;
    out.kind = tuple ? Literal::Kind::tuple : Literal::Kind::list;
    out.items.clear();
    bool comma = false;
    skipSpace();
    while (!consume(close)) {
      Literal item;
      if (!parseValue(item, depth + 1))
        return false;
      out.items.push_back(std::move(item));
      skipSpace();
      if (consume(',')) {
        comma = true;
        skipSpace();
        continue;
      }
      if (peek() != close)
        return expected(std::string("',' or '") + close + "'");
    }
    if (tuple && out.items.size() == 1 && !comma) {
      Literal inner = std::move(out.items[0]);
      out = std::move(inner);
    }
    return true;
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string fault_;
};

/// "(3, 4)", "(5,)", "()": the shape as NumPy prints it.
std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1)
    s += ',';
  return s + ")";
}

/// The literal as a header would spell it, for messages.
std::string literalString(const Literal &l) {
  switch (l.kind) {
  case Literal::Kind::string:
    return "'" + l.text + "'";
  case Literal::Kind::boolean:
    return l.flag ? "True" : "False";
  case Literal::Kind::none:
    return "None";
  case Literal::Kind::integer:
    return l.text;
  case Literal::Kind::tuple:
  case Literal::Kind::list: {
    bool tuple = l.kind == Literal::Kind::tuple;
    std::string s = tuple ? "(" : "[";
    for (size_t i = 0; i < l.items.size(); ++i) {
      if (i > 0)
        s += ", ";
      s += literalString(l.items[i]);
    }
    if (tuple && l.items.size() == 1)
      s += ',';
    return s + (tuple ? ")" : "]");
  }
  }
  return "?";
}

/// The element type and byte order `descr` names. Every dtype the reader
/// does not take is refused with what it is and what to save instead.
Status parseDescr(const Literal &descr, ElementType &type, bool &swapBytes) {
  if (descr.kind == Literal::Kind::list)
    return Status::invalidInput(
        "holds a structured array (a dtype with named fields, descr " +
        literalString(descr) +
        "), which graphrun does not read: save each field as an array of its "
        "own");
  if (descr.kind != Literal::Kind::string)
    return Status::invalidInput("malformed header: 'descr' is " +
                                literalString(descr) +
                                ", not a dtype string such as '<f4'");
  std::string_view s = descr.text;
  char order = '|';
  if (!s.empty() && (s[0] == '<' || s[0] == '>' || s[0] == '|' || s[0] == '='))
    order = s[0], s.remove_prefix(1);
  if (s.empty())
    return Status::invalidInput("malformed header: 'descr' is '" + descr.text +
                                "', not a dtype string such as '<f4'");
  char kind = s[0];
  std::string_view rest = s.substr(1);
  auto refuse = [&](const std::string &what, const std::string &dtype,
                    const std::string &instead) {
    return Status::invalidInput("holds " + what + " (dtype " + dtype +
                                ", descr '" + descr.text +
                                "'), which graphrun does not read: " + instead);
  };
  auto bits = [&](const char *prefix, int scale) {
    int bytes = 0;
    std::from_chars(rest.data(), rest.data() + rest.size(), bytes);
    return bytes > 0 ? prefix + std::to_string(bytes * scale) : prefix;
  };
  switch (kind) {
  case 'O':
    return Status::invalidInput(
        "holds a pickled object array (dtype object), which graphrun never "
        "unpickles: save a numeric array (for example "
        "np.save(path, a.astype(np.float32)))");
  case 'c':
    return refuse("complex numbers", bits("complex", 8),
                  "save the real and imaginary parts as arrays of their own");
  case 'V':
    return refuse("raw bytes", "void", "save a numeric array");
  case 'S':
  case 'a':
    return refuse("byte strings", "bytes",
                  "save the values as numbers (class names as their indices)");
  case 'U':
    return refuse("unicode strings", "str",
                  "save the values as numbers (class names as their indices)");
  case 'M':
    return refuse("dates", "datetime64",
                  "save them as numbers (for example a.astype(np.int64))");
  case 'm':
    return refuse("time spans", "timedelta64",
                  "save them as numbers (for example a.astype(np.int64))");
  default:
    break;
  }
  int size = 0;
  auto [end, ec] =
      std::from_chars(rest.data(), rest.data() + rest.size(), size);
  bool sized = ec == std::errc() && end == rest.data() + rest.size();
  bool known = false;
  if (sized) {
    known = true;
    if (kind == 'f' && size == 2)
      type = ElementType::f16;
    else if (kind == 'f' && size == 4)
      type = ElementType::f32;
    else if (kind == 'f' && size == 8)
      type = ElementType::f64;
    else if (kind == 'i' && size == 1)
      type = ElementType::i8;
    else if (kind == 'i' && size == 2)
      type = ElementType::i16;
    else if (kind == 'i' && size == 4)
      type = ElementType::i32;
    else if (kind == 'i' && size == 8)
      type = ElementType::i64;
    else if (kind == 'u' && size == 1)
      type = ElementType::u8;
    else if (kind == 'u' && size == 2)
      type = ElementType::u16;
    else if (kind == 'u' && size == 4)
      type = ElementType::u32;
    else if (kind == 'u' && size == 8)
      type = ElementType::u64;
    else if (kind == 'b' && size == 1)
      type = ElementType::boolean;
    else
      known = false;
  }
  if (!known) {
    if (sized && kind == 'f' && (size == 12 || size == 16))
      return refuse("extended-precision floats", "longdouble",
                    "save them as float64");
    return Status::invalidInput(
        "descr '" + descr.text +
        "' is not a dtype graphrun reads (it reads bool, int8 to int64, "
        "uint8 to uint64, float16, float32 and float64)");
  }
  bool bigEndianData = order == '>';
  bool native = order == '|' || order == '=' || itemSize(type) == 1;
  constexpr bool hostBig = std::endian::native == std::endian::big;
  swapBytes = !native && bigEndianData != hostBig;
  return Status::ok();
}

Status parseShape(const Literal &literal, std::vector<int64_t> &shape) {
  if (literal.kind != Literal::Kind::tuple)
    return Status::invalidInput("malformed header: 'shape' is " +
                                literalString(literal) +
                                ", not a tuple of integers such as (3, 4)");
  shape.clear();
  for (const Literal &item : literal.items) {
    if (item.kind != Literal::Kind::integer)
      return Status::invalidInput("malformed header: 'shape' " +
                                  literalString(literal) + " holds " +
                                  literalString(item) + ", not an integer");
    std::string_view digits = item.text;
    if (digits.starts_with('+'))
      digits.remove_prefix(1);
    int64_t dim = 0;
    auto [end, ec] =
        std::from_chars(digits.data(), digits.data() + digits.size(), dim);
    if (ec == std::errc::result_out_of_range)
      return Status::invalidInput("the shape " + literalString(literal) +
                                  " has a dimension, " + item.text +
                                  ", that overflows a 64-bit integer; the "
                                  "header is corrupt");
    if (ec != std::errc() || end != digits.data() + digits.size())
      return Status::invalidInput("malformed header: 'shape' holds " +
                                  item.text + ", not an integer");
    if (dim < 0)
      return Status::invalidInput("the shape " + literalString(literal) +
                                  " has a negative dimension, " +
                                  std::to_string(dim) +
                                  "; the header is corrupt");
    shape.push_back(dim);
  }
  return Status::ok();
}

/// Reads the three keys NumPy's header holds, in any order.
Status parseHeader(std::string_view text, ElementType &type, bool &swapBytes,
                   bool &fortranOrder, std::vector<int64_t> &shape) {
  std::vector<std::pair<std::string, Literal>> entries;
  LiteralParser parser(text);
  if (!parser.parseDict(entries)) {
    std::string shown(text.substr(0, 200));
    while (!shown.empty() && (shown.back() == '\n' || shown.back() == ' '))
      shown.pop_back();
    return Status::invalidInput(
        "malformed header: " + parser.fault() + " in \"" + shown +
        (text.size() > 200 ? "...\"" : "\"") +
        "; the file is corrupt or was not written by np.save");
  }
  const Literal *descr = nullptr, *fortran = nullptr, *shapeLiteral = nullptr;
  for (const auto &[key, value] : entries) {
    const Literal **slot = key == "descr"           ? &descr
                           : key == "fortran_order" ? &fortran
                           : key == "shape"         ? &shapeLiteral
                                                    : nullptr;
    if (!slot)
      return Status::invalidInput(
          "malformed header: unknown key '" + key +
          "' (a .npy header holds 'descr', 'fortran_order' and 'shape')");
    if (*slot)
      return Status::invalidInput("malformed header: the key '" + key +
                                  "' appears twice");
    *slot = &value;
  }
  for (auto [literal, key] :
       {std::pair{descr, "descr"}, std::pair{fortran, "fortran_order"},
        std::pair{shapeLiteral, "shape"}})
    if (!literal)
      return Status::invalidInput(
          std::string("malformed header: the key '") + key +
          "' is missing (a .npy header holds 'descr', 'fortran_order' and "
          "'shape')");
  if (Status s = parseDescr(*descr, type, swapBytes); !s)
    return s;
  if (fortran->kind != Literal::Kind::boolean)
    return Status::invalidInput("malformed header: 'fortran_order' is " +
                                literalString(*fortran) +
                                ", not True or False");
  fortranOrder = fortran->flag;
  return parseShape(*shapeLiteral, shape);
}

uint64_t readLittleEndian(const uint8_t *p, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i)
    v |= uint64_t(p[i]) << (8 * i);
  return v;
}

//===----------------------------------------------------------------------===//
// Conversion
//===----------------------------------------------------------------------===//

/// float16's bit pattern as a float (exact: every half is a float).
inline float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1F)
    return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  if (exponent != 0)
    return std::bit_cast<float>(sign | ((exponent + 112) << 23) |
                                (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24, exact in a float.
  float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
  return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
}

/// The stored type of each ElementType; float16 is its bits.
struct Half {
  uint16_t bits;
};

template <size_t N> struct UnsignedOf;
template <> struct UnsignedOf<2> { using type = uint16_t; };
template <> struct UnsignedOf<4> { using type = uint32_t; };
template <> struct UnsignedOf<8> { using type = uint64_t; };

inline uint16_t byteSwap(uint16_t v) { return __builtin_bswap16(v); }
inline uint32_t byteSwap(uint32_t v) { return __builtin_bswap32(v); }
inline uint64_t byteSwap(uint64_t v) { return __builtin_bswap64(v); }

template <typename Src, typename Dst, bool Swap>
inline Dst loadElement(const uint8_t *p) {
  if constexpr (std::is_same_v<Src, bool>) {
    return *p != 0 ? Dst(1) : Dst(0);
  } else if constexpr (sizeof(Src) == 1) {
    Src v;
    std::memcpy(&v, p, 1);
    return static_cast<Dst>(v);
  } else {
    using U = typename UnsignedOf<sizeof(Src)>::type;
    U bits;
    std::memcpy(&bits, p, sizeof(U));
    if constexpr (Swap)
      bits = byteSwap(bits);
    if constexpr (std::is_same_v<Src, Half>)
      return static_cast<Dst>(halfToFloat(bits));
    else
      return static_cast<Dst>(std::bit_cast<Src>(bits));
  }
}

/// Converts `n` elements `stride` bytes apart; the contiguous, unswapped
/// loops are the ones the compiler vectorises, and a same-type copy is a
/// memcpy.
template <typename Src, typename Dst>
void convertRun(const uint8_t *src, int64_t n, int64_t stride, bool swap,
                Dst *out) {
  constexpr int64_t item = sizeof(Src);
  if (stride == item && !swap) {
    if constexpr (std::is_same_v<Src, Dst>) {
      std::memcpy(out, src, static_cast<size_t>(n) * sizeof(Dst));
    } else {
      for (int64_t i = 0; i < n; ++i)
        out[i] = loadElement<Src, Dst, false>(src + i * item);
    }
  } else if (stride == item) {
    for (int64_t i = 0; i < n; ++i)
      out[i] = loadElement<Src, Dst, true>(src + i * item);
  } else if (!swap) {
    for (int64_t i = 0; i < n; ++i)
      out[i] = loadElement<Src, Dst, false>(src + i * stride);
  } else {
    for (int64_t i = 0; i < n; ++i)
      out[i] = loadElement<Src, Dst, true>(src + i * stride);
  }
}

/// Calls `f.template operator()<Src>()` with the stored type of `type`.
template <typename F> void visitType(ElementType type, F &&f) {
  switch (type) {
  case ElementType::f16:
    return f.template operator()<Half>();
  case ElementType::f32:
    return f.template operator()<float>();
  case ElementType::f64:
    return f.template operator()<double>();
  case ElementType::i8:
    return f.template operator()<int8_t>();
  case ElementType::i16:
    return f.template operator()<int16_t>();
  case ElementType::i32:
    return f.template operator()<int32_t>();
  case ElementType::i64:
    return f.template operator()<int64_t>();
  case ElementType::u8:
    return f.template operator()<uint8_t>();
  case ElementType::u16:
    return f.template operator()<uint16_t>();
  case ElementType::u32:
    return f.template operator()<uint32_t>();
  case ElementType::u64:
    return f.template operator()<uint64_t>();
  case ElementType::boolean:
    return f.template operator()<bool>();
  }
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

/// Checks that `path` names an existing file, not a directory.
Status checkFile(const std::string &path, const char *kind) {
  std::error_code ec;
  std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(st))
    return Status::notFound(path + ": no such file; check the path");
  if (std::filesystem::is_directory(st))
    return Status::invalidInput(path + ": is a directory, not " + kind +
                                "; name the file itself");
  return Status::ok();
}

/// What an .npz member may hold decompressed: the memory this process may
/// still take (MemAvailable, or less where a cgroup's limit leaves less), or a
/// generous fixed cap where neither can be read.
uint64_t memberLimit() {
  int64_t available = availableMemory();
  return available < 0 ? kFallbackMemberLimit
                       : static_cast<uint64_t>(available);
}

} // namespace

const char *elementTypeName(ElementType type) {
  switch (type) {
  case ElementType::f16:
    return "float16";
  case ElementType::f32:
    return "float32";
  case ElementType::f64:
    return "float64";
  case ElementType::i8:
    return "int8";
  case ElementType::i16:
    return "int16";
  case ElementType::i32:
    return "int32";
  case ElementType::i64:
    return "int64";
  case ElementType::u8:
    return "uint8";
  case ElementType::u16:
    return "uint16";
  case ElementType::u32:
    return "uint32";
  case ElementType::u64:
    return "uint64";
  case ElementType::boolean:
    return "bool";
  }
  return "unknown";
}

int64_t NumpyArray::rows() const { return shape_.empty() ? 0 : shape_[0]; }

int64_t NumpyArray::rowElements() const {
  int64_t n = 1;
  for (size_t i = 1; i < shape_.size(); ++i)
    n *= shape_[i];
  return n;
}

template <typename Dst>
void NumpyArray::convertRows(int64_t first, int64_t count, Dst *out) const {
  const int64_t rowElements = this->rowElements();
  if (count <= 0 || rowElements == 0)
    return;
  const int64_t item = static_cast<int64_t>(itemSize(type_));
  const bool swap = swapBytes_;
  if (!fortranOrder_ || shape_.size() <= 1) {
    const uint8_t *src = data_ + first * rowElements * item;
    // A few rows of a file: read, not touched through the mapping (see
    // file_). A whole array converted at once reads the mapping, in order.
    const int64_t bytes = count * rowElements * item;
    thread_local std::vector<uint8_t> rows;
    if (file_ && bytes <= kPreadBytes) {
      rows.resize(static_cast<size_t>(bytes));
      int64_t done = 0;
      while (done < bytes) {
        ssize_t got = ::pread(*file_, rows.data() + done,
                              static_cast<size_t>(bytes - done),
                              fileOffset_ + (src - data_) + done);
        if (got <= 0)
          break; // the file shrank under us: read the mapping instead
        done += got;
      }
      if (done == bytes)
        src = rows.data();
    }
    visitType(type_, [&]<typename Src>() {
      convertRun<Src, Dst>(src, count * rowElements, item, swap, out);
    });
    return;
  }
  // Fortran order: element (i0, i1, ..., ik) lies at i0 + i1 * s1 + ... +
  // ik * sk, s_j the product of the dimensions before j. Each run of the last
  // dimension is one strided gather.
  const size_t rank = shape_.size();
  std::vector<int64_t> strides(rank, 1);
  for (size_t j = 1; j < rank; ++j)
    strides[j] = strides[j - 1] * shape_[j - 1];
  const int64_t inner = shape_.back();
  const int64_t innerStride = strides.back() * item;
  const int64_t runs = rowElements / inner;
  visitType(type_, [&]<typename Src>() {
    std::vector<int64_t> index(rank, 0); // dimensions 1 .. rank-2
    Dst *dst = out;
    for (int64_t r = first; r < first + count; ++r) {
      std::fill(index.begin(), index.end(), 0);
      int64_t offset = r;
      for (int64_t run = 0; run < runs; ++run) {
        convertRun<Src, Dst>(data_ + offset * item, inner, innerStride, swap,
                             dst);
        dst += inner;
        // The next run: the odometer over dimensions rank-2 down to 1.
        for (size_t j = rank - 2; j >= 1; --j) {
          offset += strides[j];
          if (++index[j] < shape_[j])
            break;
          offset -= strides[j] * shape_[j];
          index[j] = 0;
        }
      }
    }
  });
}

void NumpyArray::rowsToFloat(int64_t first, int64_t count, float *out) const {
  convertRows(first, count, out);
}

void NumpyArray::rowsToDouble(int64_t first, int64_t count, double *out) const {
  convertRows(first, count, out);
}

NumpyArray NumpyArray::borrow(std::string name, std::string source,
                              ElementType type, std::vector<int64_t> shape,
                              bool fortranOrder, const void *data,
                              std::shared_ptr<const void> keepAlive) {
  NumpyArray a;
  a.name_ = std::move(name);
  a.source_ = std::move(source);
  a.type_ = type;
  a.shape_ = std::move(shape);
  a.fortranOrder_ = fortranOrder;
  a.storage_ = std::move(keepAlive);
  a.data_ = static_cast<const uint8_t *>(data);
  return a;
}

Status NumpyArray::parse(const uint8_t *bytes, size_t size,
                         std::shared_ptr<const void> storage, std::string name,
                         std::string source, NumpyArray &out) {
  const std::string context = source + ": ";
  auto fail = [&](const std::string &fault) {
    return Status::invalidInput(context + fault);
  };
  if (size == 0)
    return fail("is empty (0 bytes), not a .npy file; save the array again "
                "with np.save");
  static constexpr char kMagic[] = "\x93NUMPY";
  if (size < 6 || std::memcmp(bytes, kMagic, 6) != 0) {
    std::string_view head(reinterpret_cast<const char *>(bytes),
                          std::min<size_t>(size, 4));
    return fail(std::string("not a .npy file: it does not begin with NumPy's "
                            "magic string \\x93NUMPY") +
                (looksLikeZip(head)
                     ? "; it is a zip archive, perhaps an .npz saved under "
                       "another name"
                     : "; save the array with np.save"));
  }
  if (size < 8)
    return fail("truncated: the file ends inside NumPy's format version");
  int major = bytes[6], minor = bytes[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return fail("NumPy format version " + std::to_string(major) + "." +
                std::to_string(minor) +
                " is unknown; graphrun reads versions 1.0, 2.0 and 3.0 (what "
                "np.save writes); save the array again with np.save");
  const size_t lengthBytes = major == 1 ? 2 : 4;
  const size_t headerStart = 8 + lengthBytes;
  if (size < headerStart)
    return fail("truncated: the file ends inside the header's length");
  uint64_t headerLength = readLittleEndian(bytes + 8, lengthBytes);
  if (headerLength > kMaxHeaderBytes)
    return fail("declares a header of " + std::to_string(headerLength) +
                " bytes, more than graphrun's limit of 1 MiB (np.save writes "
                "a few hundred); the file is corrupt");
  if (size - headerStart < headerLength)
    return fail("truncated: the header declares " +
                std::to_string(headerLength) + " bytes but the file holds " +
                std::to_string(size - headerStart) +
                " after the header's length; the file is incomplete, save it "
                "again");
  std::string_view header(reinterpret_cast<const char *>(bytes) + headerStart,
                          headerLength);
  NumpyArray array;
  if (Status s = parseHeader(header, array.type_, array.swapBytes_,
                             array.fortranOrder_, array.shape_);
      !s)
    return s.withContext(context);
  const int64_t item = static_cast<int64_t>(itemSize(array.type_));
  // The non-zero dimensions must multiply within 64 bits even when another
  // is 0 (NumPy refuses such a shape too: "array is too big"), so that
  // rowElements() and every offset computed from the shape stay defined.
  int64_t nonZero = item;
  bool empty = false;
  for (int64_t dim : array.shape_) {
    empty |= dim == 0;
    if (dim != 0 && __builtin_mul_overflow(nonZero, dim, &nonZero))
      return fail("the shape " + shapeString(array.shape_) + " of " +
                  elementTypeName(array.type_) +
                  " overflows: its dimensions multiply past 2^63 bytes; the "
                  "header is corrupt");
  }
  const int64_t declared = empty ? 0 : nonZero;
  const size_t dataStart = headerStart + headerLength;
  const uint64_t held = size - dataStart;
  std::string layout = " (shape " + shapeString(array.shape_) + " of " +
                       elementTypeName(array.type_) + ")";
  if (held < static_cast<uint64_t>(declared))
    return fail("holds " + std::to_string(held) +
                " bytes of data, its header declares " +
                std::to_string(declared) + layout +
                "; the file is truncated, save it again");
  if (held > static_cast<uint64_t>(declared))
    return fail("holds " + std::to_string(held) +
                " bytes of data, its header declares " +
                std::to_string(declared) + layout +
                ": trailing bytes follow the array, so the header and the "
                "data disagree; the file is corrupt");
  array.name_ = std::move(name);
  array.source_ = std::move(source);
  array.storage_ = std::move(storage);
  array.data_ = bytes + dataStart;
  out = std::move(array);
  return Status::ok();
}

Status openNpy(const std::string &path, NumpyArray &out) {
  if (Status s = checkFile(path, "a .npy file"); !s)
    return s;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::error(path + ": cannot open: " + std::strerror(errno) +
                         "; check the file's permissions");
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Status::error(path +
                         ": cannot read its size: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::invalidInput(path +
                                ": is not a regular file, so it cannot be "
                                "mapped; copy the array to a file");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return Status::invalidInput(path + ": is empty (0 bytes), not a .npy "
                                       "file; save the array again with "
                                       "np.save");
  }
  void *mapped = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  int err = errno;
  if (mapped == MAP_FAILED) {
    ::close(fd);
    return Status::error(path + ": cannot map: " + std::strerror(err));
  }
  std::shared_ptr<const void> storage(
      mapped, [size](const void *p) { ::munmap(const_cast<void *>(p), size); });
  auto file = std::shared_ptr<const int>(new int(fd), [](const int *f) {
    ::close(*f);
    delete f;
  });
  if (Status s = NumpyArray::parse(static_cast<const uint8_t *>(mapped), size,
                                   std::move(storage), path, path, out);
      !s)
    return s;
  out.file_ = std::move(file);
  out.fileOffset_ = out.data_ - static_cast<const uint8_t *>(mapped);
  return Status::ok();
}

Status openNpz(const std::string &path, std::vector<NumpyArray> &out,
               const NpzMemberChoice &choose, std::vector<std::string> *names) {
  if (Status s = checkFile(path, "an .npz archive"); !s)
    return s;
  std::error_code ec;
  if (std::filesystem::file_size(path, ec) == 0 && !ec)
    return Status::invalidInput(path + ": is empty (0 bytes), not an .npz "
                                       "archive; save the arrays again with "
                                       "np.savez");
  ZipArchive zip;
  if (Status s = ZipArchive::open(path, zip); !s) {
    if (s.code() == StatusCode::invalidInput)
      return Status::invalidInput(
          path + ": not an .npz archive (" + s.message() +
          "; np.savez writes a zip of .npy files); check the path, and pass "
          "a single array saved with np.save as a .npy file");
    return s.withContext(path + ": ");
  }
  if (zip.members().empty())
    return Status::invalidInput(path +
                                ": holds no arrays (an empty zip archive); "
                                "save at least one array with np.savez");
  const uint64_t limit = memberLimit();
  std::vector<std::string> all;
  for (const ZipArchive::Member &member : zip.members()) {
    if (!member.name.ends_with(".npy") || member.name.size() == 4)
      return Status::invalidInput(
          path + ": member '" + member.name +
          "' is not a .npy file; an .npz archive holds only NAME.npy "
          "members, as np.savez writes them");
    std::string name = member.name.substr(0, member.name.size() - 4);
    // A zip may hold one name twice; np.load would take the last, the
    // reader here the first: neither is safe to guess.
    if (std::find(all.begin(), all.end(), name) != all.end())
      return Status::invalidInput(path + ": holds two members named '" +
                                  member.name + "'; save each array once");
    all.push_back(std::move(name));
  }
  const std::vector<std::string> chosen = choose ? choose(all) : all;
  std::vector<NumpyArray> arrays;
  arrays.reserve(chosen.size());
  for (const ZipArchive::Member &member : zip.members()) {
    std::string name = member.name.substr(0, member.name.size() - 4);
    if (std::find(chosen.begin(), chosen.end(), name) == chosen.end())
      continue;
    auto bytes = std::make_shared<std::string>();
    if (Status s = zip.read(member.name, limit, *bytes); !s) {
      if (s.code() == StatusCode::resourceExhausted)
        return Status::resourceExhausted(
            path + ": " + s.message() + ", more than the " +
            std::to_string(limit) +
            " bytes of memory available to read it into; save the array "
            "with np.save and pass the .npy file, which is mapped, not read");
      return s.withContext(path + ": ");
    }
    std::string source = path + ": " + name;
    const auto *data = reinterpret_cast<const uint8_t *>(bytes->data());
    size_t size = bytes->size();
    NumpyArray array;
    if (Status s = NumpyArray::parse(data, size, std::move(bytes),
                                     std::move(name), std::move(source), array);
        !s)
      return s;
    arrays.push_back(std::move(array));
  }
  out = std::move(arrays);
  if (names)
    *names = std::move(all);
  return Status::ok();
}

} // namespace graph::runtime::data

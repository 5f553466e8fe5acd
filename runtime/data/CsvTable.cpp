//===- CsvTable.cpp - CSV files of numbers under a header row -------------===//
//
// One pass over the file's bytes, a record at a time: a quoted field may hold
// commas and line ends, so records are not lines, and a message's line number
// is the physical line a record starts on, as an editor shows it.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/CsvTable.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string_view>
#include <unordered_map>

namespace graph::runtime::data {
namespace {

bool isBlank(char c) { return c == ' ' || c == '\t'; }

/// A record ends at a line end: "\n", "\r\n" or a lone "\r" (classic Mac
/// OS's), as Python's csv module reads them.
bool isLineEnd(char c) { return c == '\n' || c == '\r'; }

/// Splits a CSV file's text into records of fields.
class RecordReader {
public:
  explicit RecordReader(std::string_view text) : text_(text) {}

  enum class Result { record, end, error };

  /// The next record that is not blank into `fields`, the line it starts on
  /// into `line`; on an error, `fault` says what is wrong ("line 3: ...").
  Result next(std::vector<std::string> &fields, int64_t &line,
              std::string &fault) {
    while (pos_ < text_.size()) {
      line = line_;
      bool quotedAny = false;
      if (!readRecord(fields, quotedAny, fault))
        return Result::error;
      // A blank line (only whitespace) is skipped, as pandas'
      // skip_blank_lines and np.loadtxt skip it.
      if (fields.size() == 1 && fields[0].empty() && !quotedAny)
        continue;
      return Result::record;
    }
    return Result::end;
  }

private:
  bool readRecord(std::vector<std::string> &fields, bool &quotedAny,
                  std::string &fault) {
    fields.clear();
    const int64_t startLine = line_;
    while (true) {
      std::string field;
      while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t'))
        ++pos_;
      if (pos_ < text_.size() && text_[pos_] == '"') {
        quotedAny = true;
        ++pos_;
        while (true) {
          if (pos_ >= text_.size()) {
            fault = "line " + std::to_string(startLine) + ": field " +
                    std::to_string(fields.size() + 1) +
                    " opens a quote that is never closed; close it with '\"' "
                    "(a quote inside a quoted field is written \"\")";
            return false;
          }
          char c = text_[pos_++];
          if (c == '"') {
            if (pos_ < text_.size() && text_[pos_] == '"') {
              field += '"';
              ++pos_;
              continue;
            }
            break;
          }
          if (c == '\n' ||
              (c == '\r' && (pos_ >= text_.size() || text_[pos_] != '\n')))
            ++line_;
          field += c;
        }
        while (pos_ < text_.size() && isBlank(text_[pos_]))
          ++pos_;
        if (pos_ < text_.size() && text_[pos_] != ',' &&
            !isLineEnd(text_[pos_])) {
          fault = "line " + std::to_string(line_) + ": field " +
                  std::to_string(fields.size() + 1) +
                  " has characters after its closing quote; quote the whole "
                  "field";
          return false;
        }
      } else {
        size_t start = pos_;
        while (pos_ < text_.size() && text_[pos_] != ',' &&
               !isLineEnd(text_[pos_]))
          ++pos_;
        size_t end = pos_;
        while (end > start && isBlank(text_[end - 1]))
          --end;
        field.assign(text_.substr(start, end - start));
      }
      fields.push_back(std::move(field));
      if (pos_ >= text_.size())
        return true;
      char end = text_[pos_++];
      if (isLineEnd(end)) {
        if (end == '\r' && pos_ < text_.size() && text_[pos_] == '\n')
          ++pos_;
        ++line_;
        return true;
      }
      // A comma: another field follows, even at the line's end (an empty
      // one).
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  int64_t line_ = 1;
};

enum class CellResult {
  ok,
  empty,
  notNumber,
  outOfRange,
  notFinite,
  beyondFloat32
};

/// Parses a cell as std::from_chars does (the "C" locale, whatever the
/// process's), after an optional '+', which pandas accepts too.
CellResult parseCell(const std::string &cell, double &value) {
  if (cell.empty())
    return CellResult::empty;
  const char *begin = cell.data(), *end = cell.data() + cell.size();
  if (*begin == '+' && end - begin > 1 && begin[1] != '-' && begin[1] != '+')
    ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ptr != end || ec == std::errc::invalid_argument)
    return CellResult::notNumber;
  if (ec == std::errc::result_out_of_range) {
    // Underflow to zero or a subnormal is a number pandas reads; overflow is
    // not.
    double parsed = std::strtod(cell.c_str(), nullptr);
    if (std::isinf(parsed))
      return CellResult::outOfRange;
    value = parsed;
  }
  if (!std::isfinite(value))
    return CellResult::notFinite;
  // The model reads float32: a larger magnitude would become infinity.
  if (std::abs(value) > std::numeric_limits<float>::max())
    return CellResult::beyondFloat32;
  return CellResult::ok;
}

} // namespace

int CsvTable::column(const std::string &name) const {
  for (size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == name)
      return static_cast<int>(i);
  return -1;
}

Status readCsv(const std::string &path, CsvTable &out) {
  std::error_code ec;
  std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(st))
    return Status::notFound(path + ": no such file; check the path");
  if (std::filesystem::is_directory(st))
    return Status::invalidInput(path + ": is a directory, not a CSV file; "
                                       "name the file itself");
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return Status::error(path + ": cannot open: " + std::strerror(errno) +
                         "; check the file's permissions");
  std::string text((std::istreambuf_iterator<char>(file)),
                   std::istreambuf_iterator<char>());
  if (file.bad())
    return Status::error(path + ": read error: " + std::strerror(errno));
  const std::string where = path + ": ";
  // Excel's UTF-8 byte-order mark, which pandas drops too.
  std::string_view body = text;
  if (body.starts_with("\xEF\xBB\xBF"))
    body.remove_prefix(3);

  RecordReader reader(body);
  std::vector<std::string> fields;
  int64_t line = 0;
  std::string fault;
  RecordReader::Result r = reader.next(fields, line, fault);
  if (r == RecordReader::Result::error)
    return Status::invalidInput(where + fault);
  if (r == RecordReader::Result::end)
    return Status::invalidInput(
        where + "is empty; a CSV file needs a header row of column names and "
                "at least one row of numbers");

  CsvTable table;
  table.path = path;
  const std::string headerLine = "line " + std::to_string(line) + ": ";
  std::unordered_map<std::string, size_t> seen;
  bool allNumbers = true;
  for (size_t i = 0; i < fields.size(); ++i) {
    const std::string &name = fields[i];
    if (name.empty())
      return Status::invalidInput(
          where + headerLine + "column " + std::to_string(i + 1) +
          " of the header has no name; name every column");
    auto [it, inserted] = seen.emplace(name, i);
    if (!inserted)
      return Status::invalidInput(
          where + headerLine + "the header names column '" + name +
          "' twice (columns " + std::to_string(it->second + 1) + " and " +
          std::to_string(i + 1) + "); column names must be unique");
    double ignored;
    allNumbers = allNumbers && parseCell(name, ignored) == CellResult::ok;
  }
  if (allNumbers)
    return Status::invalidInput(
        where + headerLine +
        "the first row holds numbers, not column names; a header row is "
        "required: add one (pandas' to_csv writes it; np.savetxt needs "
        "header='a,b,...' and comments='')");
  table.columns = std::move(fields);
  fields = {};

  const size_t width = table.columns.size();
  while (true) {
    r = reader.next(fields, line, fault);
    if (r == RecordReader::Result::error)
      return Status::invalidInput(where + fault);
    if (r == RecordReader::Result::end)
      break;
    if (fields.size() != width)
      return Status::invalidInput(where + "line " + std::to_string(line) +
                                  ": " + std::to_string(fields.size()) +
                                  " field" + (fields.size() == 1 ? "" : "s") +
                                  ", the header has " + std::to_string(width) +
                                  "; every row needs one field per column");
    for (size_t c = 0; c < width; ++c) {
      double value = 0;
      CellResult result = parseCell(fields[c], value);
      if (result == CellResult::ok) {
        table.values.push_back(value);
        continue;
      }
      std::string cell = where + "line " + std::to_string(line) + ", column '" +
                         table.columns[c] + "': ";
      switch (result) {
      case CellResult::empty:
        return Status::invalidInput(
            cell + "the cell is empty; every cell must hold a number");
      case CellResult::notNumber:
        return Status::invalidInput(cell + "'" + fields[c] +
                                    "' is not a number");
      case CellResult::outOfRange:
        return Status::invalidInput(cell + "'" + fields[c] +
                                    "' is out of the range of a double");
      case CellResult::notFinite:
        return Status::invalidInput(
            cell + "'" + fields[c] +
            "' is not a finite number; NaN and infinity are refused, fill "
            "or drop the missing values first");
      case CellResult::beyondFloat32:
        return Status::invalidInput(
            cell + "'" + fields[c] +
            "' is beyond float32's range (magnitude at most 3.4e38), the "
            "type the model reads; it would become infinity");
      case CellResult::ok:
        break;
      }
    }
    ++table.rows;
  }
  if (table.rows == 0)
    return Status::invalidInput(where +
                                "holds no data rows, only the header; a CSV "
                                "file needs at least one row of numbers");
  out = std::move(table);
  return Status::ok();
}

} // namespace graph::runtime::data

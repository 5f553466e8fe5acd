//===- Safetensors.cpp - the safetensors tensor file format ---------------===//

#include "runtime/checkpoint/Safetensors.h"

#include "runtime/base/AtomicFile.h"
#include "runtime/base/Crc32c.h"
#include "runtime/core/Kernel.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace graph::runtime::checkpoint {

// The format stores little-endian data and so does this file's memcpy-based
// code; a big-endian port would byte-swap here.
static_assert(std::endian::native == std::endian::little,
              "safetensors I/O assumes a little-endian host");

namespace {

using Json = nlohmann::json;

struct DTypeRow {
  DType dtype;
  const char *name;
  int64_t size;
};

constexpr std::array<DTypeRow, 15> kDTypes{{
    {DType::BOOL, "BOOL", 1},
    {DType::U8, "U8", 1},
    {DType::I8, "I8", 1},
    {DType::F8_E5M2, "F8_E5M2", 1},
    {DType::F8_E4M3, "F8_E4M3", 1},
    {DType::I16, "I16", 2},
    {DType::U16, "U16", 2},
    {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2},
    {DType::I32, "I32", 4},
    {DType::U32, "U32", 4},
    {DType::F32, "F32", 4},
    {DType::F64, "F64", 8},
    {DType::I64, "I64", 8},
    {DType::U64, "U64", 8},
}};

constexpr const char *kMetadataKey = "__metadata__";

/// product(shape) * elementSize, or nullopt on overflow.
std::optional<uint64_t> byteSize(const std::vector<int64_t> &shape,
                                 int64_t elementSize) {
  uint64_t bytes = static_cast<uint64_t>(elementSize);
  for (int64_t d : shape)
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes))
      return std::nullopt;
  return bytes;
}

/// A JSON value's kind, for messages.
std::string kindOf(const Json &value) { return value.type_name(); }

/// Rejects a key that appears twice in one object: the JSON library keeps
/// the last, which would silently drop a tensor or a field.
class DuplicateKeyCheck {
public:
  bool operator()(int, Json::parse_event_t event, Json &parsed) {
    switch (event) {
    case Json::parse_event_t::object_start:
      keys_.emplace_back();
      break;
    case Json::parse_event_t::object_end:
      keys_.pop_back();
      break;
    case Json::parse_event_t::key:
      if (!keys_.empty() &&
          !keys_.back().insert(parsed.get<std::string>()).second &&
          duplicate_.empty())
        duplicate_ = parsed.get<std::string>();
      break;
    default:
      break;
    }
    return true;
  }
  std::string duplicate_;

private:
  std::vector<std::set<std::string>> keys_;
};

Status parseTensor(const std::string &source, const std::string &name,
                   const Json &entry, TensorInfo &out) {
  auto fault = [&](const std::string &what) {
    return Status::error(source + ": tensor '" + name + "': " + what);
  };
  if (!entry.is_object())
    return fault("its header entry is a " + kindOf(entry) + ", not an object");
  for (const auto &[key, value] : entry.items())
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      return fault("unexpected field '" + key +
                   "' (a tensor has dtype, shape and data_offsets)");
  for (const char *key : {"dtype", "shape", "data_offsets"})
    if (!entry.contains(key))
      return fault(std::string("no '") + key + "' field");
  out.name = name;

  const Json &dtype = entry["dtype"];
  if (!dtype.is_string())
    return fault("dtype is a " + kindOf(dtype) + ", not a string");
  std::optional<DType> parsed = parseDType(dtype.get<std::string>());
  if (!parsed)
    return fault("unknown dtype '" + dtype.get<std::string>() + "'");
  out.dtype = *parsed;

  const Json &shape = entry["shape"];
  if (!shape.is_array())
    return fault("shape is a " + kindOf(shape) + ", not an array");
  out.shape.clear();
  for (const Json &d : shape) {
    if (!d.is_number_unsigned())
      return fault("shape " + shape.dump() +
                   " holds something other than non-negative integers");
    // Shapes are int64 here; a larger dimension (even beside a 0, which
    // keeps the byte count at 0) would turn negative.
    if (d.get<uint64_t>() >
        static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return fault("shape " + shape.dump() + " has a dimension over 2^63 - 1");
    out.shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
  }

  const Json &offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 ||
      !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
    return fault("data_offsets " + offsets.dump() +
                 " is not [begin, end] of non-negative integers");
  out.begin = offsets[0].get<uint64_t>();
  out.end = offsets[1].get<uint64_t>();
  if (out.end < out.begin)
    return fault("data_offsets " + offsets.dump() + " end before they begin");

  std::optional<uint64_t> need = byteSize(out.shape, dtypeSize(out.dtype));
  if (!need)
    return fault("shape " + shapeText(out.shape) + " overflows 64 bits");
  if (out.end - out.begin != *need)
    return fault("data_offsets " + offsets.dump() + " hold " +
                 std::to_string(out.end - out.begin) + " bytes, but " +
                 dtypeName(out.dtype) + " " + shapeText(out.shape) + " needs " +
                 std::to_string(*need));
  return Status::ok();
}

} // namespace

std::optional<DType> parseDType(std::string_view name) {
  for (const DTypeRow &row : kDTypes)
    if (name == row.name)
      return row.dtype;
  return std::nullopt;
}

const char *dtypeName(DType dtype) {
  return kDTypes[static_cast<size_t>(dtype)].name;
}

int64_t dtypeSize(DType dtype) {
  return kDTypes[static_cast<size_t>(dtype)].size;
}

Status SafetensorsFile::parse(std::string bytes, const std::string &source,
                              SafetensorsFile &out) {
  auto fault = [&](const std::string &what) {
    return Status::error(source + ": " + what);
  };
  if (bytes.size() < 8)
    return fault("not a safetensors file: " + std::to_string(bytes.size()) +
                 " bytes, fewer than the 8-byte header length");
  uint64_t headerBytes = 0;
  std::memcpy(&headerBytes, bytes.data(), 8);
  uint64_t rest = bytes.size() - 8;
  if (headerBytes > kMaxHeaderBytes)
    return fault("header length " + std::to_string(headerBytes) +
                 " is over the format's limit of " +
                 std::to_string(kMaxHeaderBytes) +
                 " bytes (not a safetensors file, or a corrupted one)");
  if (headerBytes > rest)
    return fault("header length " + std::to_string(headerBytes) +
                 " exceeds the " + std::to_string(rest) +
                 " bytes that follow it (a truncated file?)");
  std::string_view header(bytes.data() + 8, headerBytes);
  if (header.empty() || header.front() != '{')
    return fault("the header does not start with '{' (not a safetensors "
                 "file, or a corrupted one)");

  DuplicateKeyCheck duplicates;
  Json json = Json::parse(header, std::ref(duplicates),
                          /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    // Parse again for the library's message, which says where it failed.
    std::string why;
    try {
      [[maybe_unused]] Json again = Json::parse(header);
    } catch (const Json::exception &e) {
      // A parse_error, or out_of_range for a number past a double's range.
      why = std::string(": ") + e.what();
    }
    return fault("the header is not valid JSON" + why);
  }
  if (!json.is_object())
    return fault("the header is a JSON " + kindOf(json) + ", not an object");
  if (!duplicates.duplicate_.empty())
    return fault("the header names '" + duplicates.duplicate_ + "' twice");

  SafetensorsFile file;
  file.source_ = source;
  for (const auto &[key, value] : json.items()) {
    if (key == kMetadataKey) {
      if (!value.is_object())
        return fault("__metadata__ is a " + kindOf(value) +
                     ", not an object of strings");
      for (const auto &[mk, mv] : value.items()) {
        if (!mv.is_string())
          return fault("__metadata__ entry '" + mk + "' is a " + kindOf(mv) +
                       ", not a string");
        file.metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    TensorInfo tensor;
    if (Status s = parseTensor(source, key, value, tensor); !s)
      return s;
    file.tensors_.push_back(std::move(tensor));
  }

  // The tensors must tile [0, data size) exactly.
  std::sort(file.tensors_.begin(), file.tensors_.end(),
            [](const TensorInfo &a, const TensorInfo &b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  uint64_t dataBytes = rest - headerBytes, at = 0;
  const TensorInfo *previous = nullptr;
  auto range = [](const TensorInfo &t) {
    return "'" + t.name + "' [" + std::to_string(t.begin) + ", " +
           std::to_string(t.end) + ")";
  };
  for (const TensorInfo &t : file.tensors_) {
    if (t.begin < at)
      return fault("tensor " + range(t) + " overlaps tensor " +
                   range(*previous));
    if (t.begin > at)
      return fault("data bytes [" + std::to_string(at) + ", " +
                   std::to_string(t.begin) + ") belong to no tensor");
    if (t.end > dataBytes)
      return fault("tensor " + range(t) + " ends past the " +
                   std::to_string(dataBytes) +
                   " data bytes of the file (a truncated file?)");
    at = t.end;
    previous = &t;
  }
  if (at != dataBytes)
    return fault(std::to_string(dataBytes - at) +
                 " bytes of trailing data after the last tensor (at byte " +
                 std::to_string(at) + " of the data)");

  file.dataStart_ = 8 + headerBytes;
  file.bytes_ = std::move(bytes);
  out = std::move(file);
  return Status::ok();
}

Status SafetensorsFile::read(const std::string &path, SafetensorsFile &out) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return Status::error(path + ": is a directory, not a safetensors file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad())
    return Status::error(path + ": read failed");
  return parse(std::move(content).str(), path, out);
}

const TensorInfo *SafetensorsFile::find(const std::string &name) const {
  for (const TensorInfo &t : tensors_)
    if (t.name == name)
      return &t;
  return nullptr;
}

std::string_view SafetensorsFile::data(const TensorInfo &tensor) const {
  return std::string_view(bytes_).substr(dataStart_ + tensor.begin,
                                         tensor.end - tensor.begin);
}

const std::string *SafetensorsFile::metadata(const std::string &key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

void SafetensorsWriter::setMetadata(const std::string &key, std::string value) {
  metadata_[key] = std::move(value);
}

Status SafetensorsWriter::add(const std::string &name, DType dtype,
                              std::vector<int64_t> shape, std::string bytes) {
  if (name == kMetadataKey)
    return Status::error("safetensors: a tensor cannot be named " + name);
  for (const Entry &e : entries_)
    if (e.name == name)
      return Status::error("safetensors: tensor '" + name + "' added twice");
  for (int64_t d : shape)
    if (d < 0)
      return Status::error("safetensors: tensor '" + name + "': shape " +
                           shapeText(shape) + " has a negative dimension");
  std::optional<uint64_t> need = byteSize(shape, dtypeSize(dtype));
  if (!need || *need != bytes.size())
    return Status::error("safetensors: tensor '" + name +
                         "': " + std::to_string(bytes.size()) + " bytes for " +
                         dtypeName(dtype) + " " + shapeText(shape));
  entries_.push_back({name, dtype, std::move(shape), std::move(bytes)});
  return Status::ok();
}

std::string SafetensorsWriter::header() const {
  Json json = Json::object();
  if (!metadata_.empty())
    json[kMetadataKey] = metadata_;
  uint64_t at = 0;
  for (const Entry &e : entries_) {
    uint64_t end = at + e.bytes.size();
    json[e.name] = {{"dtype", dtypeName(e.dtype)},
                    {"shape", e.shape},
                    {"data_offsets", {at, end}}};
    at = end;
  }
  std::string text = json.dump();
  // Spaces after the JSON align the data to 8 bytes, as the reference
  // writer does, so a reader that maps the file can view F64/I64 in place.
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  std::string out(8, '\0');
  uint64_t length = text.size();
  std::memcpy(out.data(), &length, 8);
  return out + text;
}

uint32_t SafetensorsWriter::dataCrc32c() const {
  uint32_t crc = 0;
  for (const Entry &e : entries_)
    crc = crc32c(e.bytes.data(), e.bytes.size(), crc);
  return crc;
}

uint32_t SafetensorsFile::dataCrc32c() const {
  return crc32c(bytes_.data() + dataStart_, bytes_.size() - dataStart_);
}

std::string SafetensorsWriter::serialize() const {
  std::string out = header();
  for (const Entry &e : entries_)
    out += e.bytes;
  return out;
}

Status SafetensorsWriter::write(const std::string &path) const {
  // The header first: a name that JSON cannot hold (not UTF-8) fails here,
  // before a temporary file exists.
  std::string head;
  try {
    head = header();
  } catch (const std::exception &e) {
    return Status::error(path +
                         ": cannot write the header: a tensor name or "
                         "metadata value is not valid UTF-8 (" +
                         e.what() + ")");
  }
  AtomicFile file;
  if (Status s = file.open(path); !s)
    return s;
  if (Status s = file.append(head); !s)
    return s;
  for (const Entry &e : entries_)
    if (Status s = file.append(e.bytes); !s)
      return s;
  return file.commit();
}

} // namespace graph::runtime::checkpoint

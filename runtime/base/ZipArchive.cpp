//===- ZipArchive.cpp - bounded, checked reads of zip members -------------===//

#include "runtime/base/ZipArchive.h"

#include <zip.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <new>

namespace graph::runtime {

namespace {

/// Above this size a member must be at most kMaxExpansion times its
/// compressed size: Keras' own zip-bomb rule (saving_lib._reject_zip_bomb).
constexpr uint64_t kExpansionFloor = uint64_t(256) << 20;
constexpr uint64_t kMaxExpansion = 100;
/// Slack over kMaxDeflateExpansion for a tiny member's block headers.
constexpr uint64_t kDeflateSlack = 1024;

std::string errorText(zip_error_t *error) { return zip_error_strerror(error); }

} // namespace

struct ZipArchive::Impl {
  zip_t *archive = nullptr;
  /// The archive's size in bytes (0 if unknown): no member's compressed
  /// bytes can exceed it.
  uint64_t bytes = 0;
  ~Impl() {
    if (archive)
      zip_discard(archive);
  }
};

ZipArchive::ZipArchive() = default;
ZipArchive::~ZipArchive() = default;
ZipArchive::ZipArchive(ZipArchive &&) noexcept = default;
ZipArchive &ZipArchive::operator=(ZipArchive &&) noexcept = default;

bool looksLikeZip(std::string_view head) {
  // A local file header, or the end-of-central-directory record that opens
  // an empty archive.
  return head.starts_with("PK\x03\x04") || head.starts_with("PK\x05\x06");
}

/// Lists the members of an opened archive.
static Status listMembers(zip_t *archive,
                          std::vector<ZipArchive::Member> &out) {
  out.clear();
  zip_int64_t count = zip_get_num_entries(archive, 0);
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t stat;
    zip_stat_init(&stat);
    if (zip_stat_index(archive, static_cast<zip_uint64_t>(i), 0, &stat) != 0 ||
        !(stat.valid & ZIP_STAT_NAME))
      return Status::error("cannot read member " + std::to_string(i) +
                           " of the archive (archive corrupt)");
    ZipArchive::Member m;
    m.name = stat.name;
    m.size = (stat.valid & ZIP_STAT_SIZE) ? stat.size : 0;
    m.compressedSize = (stat.valid & ZIP_STAT_COMP_SIZE) ? stat.comp_size : 0;
    out.push_back(std::move(m));
  }
  return Status::ok();
}

Status ZipArchive::adopt(void *handle, uint64_t bytes, ZipArchive &out) {
  auto *archive = static_cast<zip_t *>(handle);
  ZipArchive opened;
  opened.impl_ = std::make_unique<Impl>();
  opened.impl_->archive = archive; // owned from here, also on failure
  opened.impl_->bytes = bytes;
  if (Status s = listMembers(archive, opened.members_); !s)
    return s;
  out = std::move(opened);
  return Status::ok();
}

Status ZipArchive::open(const std::string &path, ZipArchive &out) {
  int code = 0;
  zip_t *archive = zip_open(path.c_str(), ZIP_RDONLY, &code);
  if (!archive) {
    zip_error_t error;
    zip_error_init_with_code(&error, code);
    std::string message = errorText(&error);
    zip_error_fini(&error);
    if (code == ZIP_ER_NOZIP)
      return Status::invalidInput("not a zip archive");
    if (code == ZIP_ER_NOENT || code == ZIP_ER_OPEN)
      return Status::notFound("cannot open the zip archive: " + message);
    return Status::error("cannot open the zip archive: " + message);
  }
  std::error_code ec;
  uint64_t bytes = std::filesystem::file_size(path, ec);
  return adopt(archive, ec ? 0 : bytes, out);
}

Status ZipArchive::openBuffer(std::string_view bytes, ZipArchive &out) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t *source =
      zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  if (!source) {
    std::string message = errorText(&error);
    zip_error_fini(&error);
    return Status::error("cannot read the archive: " + message);
  }
  zip_t *archive = zip_open_from_source(source, ZIP_RDONLY, &error);
  if (!archive) {
    // The archive did not take ownership of the source.
    zip_source_free(source);
    int code = zip_error_code_zip(&error);
    std::string message = errorText(&error);
    zip_error_fini(&error);
    if (code == ZIP_ER_NOZIP)
      return Status::invalidInput("not a zip archive");
    return Status::error("cannot open the zip archive: " + message);
  }
  zip_error_fini(&error);
  return adopt(archive, bytes.size(), out);
}

const ZipArchive::Member *ZipArchive::find(std::string_view name) const {
  for (const Member &m : members_)
    if (m.name == name)
      return &m;
  return nullptr;
}

Status ZipArchive::read(std::string_view name, uint64_t limit,
                        std::string &out) const {
  std::string member(name);
  std::string where = member + ": ";
  if (!impl_)
    return Status::internal(where + "the archive is not open");
  // By index: the member stat describes is the one read.
  zip_int64_t index = zip_name_locate(impl_->archive, member.c_str(), 0);
  if (index < 0)
    return Status::notFound(where + "the archive holds no such member");
  zip_stat_t stat;
  zip_stat_init(&stat);
  if (zip_stat_index(impl_->archive, static_cast<zip_uint64_t>(index), 0,
                     &stat) != 0 ||
      !(stat.valid & ZIP_STAT_SIZE))
    return Status::invalidInput(where + "cannot read its size in the archive");
  // Headers that contradict the archive or deflate are corrupt: refused
  // before anything is allocated for the size they declare.
  if ((stat.valid & ZIP_STAT_COMP_SIZE) && impl_->bytes > 0 &&
      stat.comp_size > impl_->bytes)
    return Status::invalidInput(
        where + "declares " + std::to_string(stat.comp_size) +
        " compressed bytes in an archive of " + std::to_string(impl_->bytes) +
        " (archive corrupt)");
  if ((stat.valid & ZIP_STAT_COMP_SIZE) &&
      (stat.valid & ZIP_STAT_COMP_METHOD) &&
      stat.comp_method == ZIP_CM_DEFLATE &&
      (stat.size - std::min(stat.size, kDeflateSlack)) / kMaxDeflateExpansion >
          stat.comp_size)
    return Status::invalidInput(
        where + "declares " + std::to_string(stat.size) + " bytes from " +
        std::to_string(stat.comp_size) +
        " deflated, more than deflate expands (" +
        std::to_string(kMaxDeflateExpansion) + "x; archive corrupt)");
  if (stat.size > limit)
    return Status::resourceExhausted(where + "declares " +
                                     std::to_string(stat.size) +
                                     " bytes uncompressed");
  if (stat.size > kExpansionFloor && (stat.valid & ZIP_STAT_COMP_SIZE) &&
      stat.size / kMaxExpansion > stat.comp_size)
    return Status::invalidInput(
        where + "declares " + std::to_string(stat.size) + " bytes from " +
        std::to_string(stat.comp_size) +
        " compressed, more than Keras' limit of " +
        std::to_string(kMaxExpansion) + "x (refused as a zip bomb)");
  zip_file_t *file =
      zip_fopen_index(impl_->archive, static_cast<zip_uint64_t>(index), 0);
  if (!file)
    return Status::error(where + "cannot open it in the archive: " +
                         zip_error_strerror(zip_get_error(impl_->archive)));
  struct Closer {
    zip_file_t *file;
    ~Closer() { zip_fclose(file); }
  } closer{file};

  out.clear();
  try {
    out.reserve(stat.size);
  } catch (const std::bad_alloc &) {
    return Status::resourceExhausted(where + "cannot hold its " +
                                     std::to_string(stat.size) +
                                     " bytes in memory");
  }
  std::vector<char> chunk(1 << 16);
  while (true) {
    zip_int64_t got = zip_fread(file, chunk.data(), chunk.size());
    if (got == 0)
      break;
    if (got < 0) {
      zip_error_t *error = zip_file_get_error(file);
      if (zip_error_code_zip(error) == ZIP_ER_CRC)
        return Status::invalidInput(where + "CRC mismatch (archive corrupt)");
      return Status::error(
          where + "cannot read it from the archive: " + errorText(error));
    }
    out.append(chunk.data(), static_cast<size_t>(got));
    if (out.size() > stat.size)
      return Status::invalidInput(where + "holds more than the " +
                                  std::to_string(stat.size) +
                                  " bytes the archive declares (archive "
                                  "corrupt)");
  }
  if (out.size() != stat.size)
    return Status::invalidInput(where + "holds " + std::to_string(out.size()) +
                                " bytes, not the " + std::to_string(stat.size) +
                                " the archive declares (archive corrupt)");
  if (stat.valid & ZIP_STAT_CRC) {
    uLong crc = crc32(0, nullptr, 0);
    for (size_t at = 0; at < out.size();) {
      // zlib's length is a uInt.
      size_t n = std::min<size_t>(out.size() - at, size_t(1) << 30);
      crc = crc32(crc, reinterpret_cast<const Bytef *>(out.data() + at),
                  static_cast<uInt>(n));
      at += n;
    }
    if (crc != stat.crc)
      return Status::invalidInput(where + "CRC mismatch (archive corrupt)");
  }
  return Status::ok();
}

namespace {

void putLE(std::string &out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

} // namespace

Status storedZipArchive(const std::vector<ZipMember> &members,
                        std::string &out) {
  // APPNOTE.TXT 4.3: local header + data per member, then the central
  // directory and its end record. Version 2.0, no flags, method 0 (stored),
  // DOS time 00:00 on 1980-01-01.
  constexpr uint64_t kLimit = 0xffffffffu;
  constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;
  out.clear();
  std::string central;
  for (const ZipMember &m : members) {
    if (m.bytes.size() >= kLimit || out.size() >= kLimit)
      return Status::error(StatusCode::resourceExhausted,
                           m.name + ": 4 GiB or more; the archive is written "
                                    "without Zip64");
    uLong crc = crc32(0L, Z_NULL, 0);
    for (size_t at = 0; at < m.bytes.size();) {
      uInt chunk = static_cast<uInt>(
          std::min<size_t>(m.bytes.size() - at, size_t(1) << 30));
      crc = crc32(crc, reinterpret_cast<const Bytef *>(m.bytes.data() + at),
                  chunk);
      at += chunk;
    }
    const uint64_t offset = out.size();
    auto common = [&](std::string &h) {
      putLE(h, 20, 2);       // version needed: 2.0
      putLE(h, 0, 2);        // flags
      putLE(h, 0, 2);        // method: stored
      putLE(h, 0, 2);        // time
      putLE(h, kDosDate, 2); // date
      putLE(h, crc, 4);
      putLE(h, m.bytes.size(), 4);
      putLE(h, m.bytes.size(), 4);
      putLE(h, m.name.size(), 2);
      putLE(h, 0, 2); // extra field length
    };
    putLE(out, 0x04034b50, 4);
    common(out);
    out += m.name;
    out.append(m.bytes.data(), m.bytes.size());

    putLE(central, 0x02014b50, 4);
    putLE(central, 20, 2); // version made by
    common(central);
    putLE(central, 0, 2); // comment length
    putLE(central, 0, 2); // disk number
    putLE(central, 0, 2); // internal attributes
    putLE(central, 0, 4); // external attributes
    putLE(central, offset, 4);
    central += m.name;
  }
  const uint64_t centralOffset = out.size();
  if (centralOffset + central.size() >= kLimit)
    return Status::error(StatusCode::resourceExhausted,
                         "the archive is 4 GiB or more; it is written "
                         "without Zip64");
  out += central;
  putLE(out, 0x06054b50, 4);
  putLE(out, 0, 2); // this disk
  putLE(out, 0, 2); // the central directory's disk
  putLE(out, members.size(), 2);
  putLE(out, members.size(), 2);
  putLE(out, central.size(), 4);
  putLE(out, centralOffset, 4);
  putLE(out, 0, 2); // comment length
  return Status::ok();
}

} // namespace graph::runtime

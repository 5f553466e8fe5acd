//===- KerasArchive.cpp - the config of a .keras archive ------------------===//

#include "frontends/keras/KerasArchive.h"

#include <zip.h>
#include <zlib.h>

#include <memory>

namespace graph::keras {

namespace {
struct ZipCloser {
  void operator()(zip_t *archive) const { zip_discard(archive); }
};
struct ZipFileCloser {
  void operator()(zip_file_t *file) const { zip_fclose(file); }
};

llvm::Error archiveError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The most we read of one member. A Keras config is some hundred KiB; the
/// cap keeps a member that declares a terabyte from being allocated.
constexpr zip_uint64_t kMaxMemberSize = zip_uint64_t(64) << 20;

/// The bytes of `name`, checked against the size and CRC-32 the archive
/// declares for it. libzip checks the CRC only when a read reaches the end
/// of the member (one read of the declared size never did); zlib checks it
/// again, whatever libzip's version does.
llvm::Expected<std::string> readMember(zip_t *archive,
                                       llvm::StringLiteral name) {
  // By index: the member stat describes is the one read.
  zip_int64_t index = zip_name_locate(archive, name.data(), 0);
  zip_stat_t stat;
  zip_stat_init(&stat);
  if (index < 0 || zip_stat_index(archive, index, 0, &stat) != 0 ||
      !(stat.valid & ZIP_STAT_SIZE))
    return archiveError("the archive holds no " + name +
                        " (is it a Keras 3 .keras file?)");
  if (stat.size > kMaxMemberSize)
    return archiveError(name + ": declares " + llvm::Twine(stat.size) +
                        " bytes uncompressed; the importer reads at most " +
                        llvm::Twine(kMaxMemberSize >> 20) +
                        " MiB (a Keras config is far smaller)");
  std::unique_ptr<zip_file_t, ZipFileCloser> file(
      zip_fopen_index(archive, index, 0));
  if (!file)
    return archiveError(name + ": cannot open it in the archive: " +
                        zip_error_strerror(zip_get_error(archive)));

  auto corrupt = [&](const llvm::Twine &fault) {
    return archiveError(name + ": " + fault + " (archive corrupt)");
  };
  std::string text;
  text.reserve(stat.size);
  char chunk[1 << 16];
  while (true) {
    zip_int64_t read = zip_fread(file.get(), chunk, sizeof(chunk));
    if (read == 0)
      break;
    if (read < 0) {
      zip_error_t *error = zip_file_get_error(file.get());
      if (zip_error_code_zip(error) == ZIP_ER_CRC)
        return corrupt("CRC mismatch");
      return archiveError(name + ": cannot read it from the archive: " +
                          zip_error_strerror(error));
    }
    text.append(chunk, read);
    if (text.size() > stat.size)
      return corrupt("holds more than the " + llvm::Twine(stat.size) +
                     " bytes the archive declares");
  }
  if (text.size() != stat.size)
    return corrupt("holds " + llvm::Twine(text.size()) + " bytes, not the " +
                   llvm::Twine(stat.size) + " the archive declares");
  if ((stat.valid & ZIP_STAT_CRC) &&
      crc32(0, reinterpret_cast<const Bytef *>(text.data()), text.size()) !=
          stat.crc)
    return corrupt("CRC mismatch");
  return text;
}
} // namespace

bool looksLikeZip(llvm::StringRef bytes) {
  // A local file header, or the end-of-central-directory record that opens
  // an empty archive.
  return bytes.starts_with("PK\x03\x04") || bytes.starts_with("PK\x05\x06");
}

llvm::Expected<std::string> readKerasArchiveConfig(llvm::StringRef bytes) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t *source =
      zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  if (!source) {
    std::string message = zip_error_strerror(&error);
    zip_error_fini(&error);
    return archiveError("cannot read the archive: " + message);
  }
  std::unique_ptr<zip_t, ZipCloser> archive(
      zip_open_from_source(source, ZIP_RDONLY, &error));
  if (!archive) {
    // The archive did not take ownership of the source.
    zip_source_free(source);
    int code = zip_error_code_zip(&error);
    std::string message = zip_error_strerror(&error);
    zip_error_fini(&error);
    if (code == ZIP_ER_NOZIP)
      return archiveError("not a zip archive (a .keras file is a zip archive "
                          "holding " +
                          kKerasConfigMember + ")");
    return archiveError("cannot open the zip archive: " + message);
  }
  zip_error_fini(&error);
  return readMember(archive.get(), kKerasConfigMember);
}

} // namespace graph::keras

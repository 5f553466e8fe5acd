//===- KerasArchive.cpp - the config of a .keras archive ------------------===//

#include "frontends/keras/KerasArchive.h"

#include <zip.h>

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

  zip_stat_t stat;
  zip_stat_init(&stat);
  if (zip_stat(archive.get(), kKerasConfigMember.data(), 0, &stat) != 0 ||
      !(stat.valid & ZIP_STAT_SIZE))
    return archiveError("the archive holds no " + kKerasConfigMember +
                        " (is it a Keras 3 .keras file?)");
  std::unique_ptr<zip_file_t, ZipFileCloser> file(
      zip_fopen(archive.get(), kKerasConfigMember.data(), 0));
  if (!file)
    return archiveError(
        "cannot open " + kKerasConfigMember +
        " in the archive: " + zip_error_strerror(zip_get_error(archive.get())));
  std::string text(stat.size, '\0');
  zip_int64_t read = zip_fread(file.get(), text.data(), stat.size);
  if (read < 0 || static_cast<zip_uint64_t>(read) != stat.size)
    return archiveError("cannot read " + kKerasConfigMember +
                        " from the archive: " +
                        zip_error_strerror(zip_file_get_error(file.get())));
  return text;
}

} // namespace graph::keras

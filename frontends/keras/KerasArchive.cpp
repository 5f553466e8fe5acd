//===- KerasArchive.cpp - the config of a .keras archive ------------------===//
//
// The archive is read by runtime/base's ZipArchive, the reader the weights
// loader uses too, so both check a member's size and CRC-32 alike.
//
//===----------------------------------------------------------------------===//

#include "frontends/keras/KerasArchive.h"

#include "runtime/base/ZipArchive.h"

namespace graph::keras {

namespace {

using ::graph::runtime::Status;
using ::graph::runtime::StatusCode;
using ::graph::runtime::ZipArchive;

llvm::Error archiveError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The most we read of one member. A Keras config is some hundred KiB; the
/// cap keeps a member that declares a terabyte from being allocated.
constexpr uint64_t kMaxMemberSize = uint64_t(64) << 20;

} // namespace

bool looksLikeZip(llvm::StringRef bytes) {
  return ::graph::runtime::looksLikeZip(std::string_view(bytes));
}

llvm::Expected<std::string> readKerasArchiveConfig(llvm::StringRef bytes) {
  ZipArchive archive;
  if (Status s = ZipArchive::openBuffer(std::string_view(bytes), archive); !s) {
    if (s.code() == StatusCode::invalidInput) // not a zip archive
      return archiveError(s.message() +
                          " (a .keras file is a zip archive holding " +
                          kKerasConfigMember + ")");
    return archiveError(s.message());
  }
  if (!archive.find(kKerasConfigMember.str()))
    return archiveError("the archive holds no " + kKerasConfigMember +
                        " (is it a Keras 3 .keras file?)");
  std::string text;
  Status s = archive.read(kKerasConfigMember.str(), kMaxMemberSize, text);
  if (s.code() == StatusCode::resourceExhausted)
    return archiveError(s.message() + "; the importer reads at most " +
                        llvm::Twine(kMaxMemberSize >> 20) +
                        " MiB (a Keras config is far smaller)");
  if (!s)
    return archiveError(s.message());
  return text;
}

} // namespace graph::keras

//===- ZipArchive.h - bounded, checked reads of zip members -----*- C++ -*-===//
//
// Keras' `.keras` files and NumPy's `.npz` files are zip archives. One
// reader serves the importer (config.json), the weights loader
// (model.weights.h5) and the data sources, so every caller gets the same
// checks: a member is read only up to a limit the caller sets, and must hold
// exactly the size and the CRC-32 its headers declare (libzip checks the
// CRC only when a read reaches the member's end; zlib checks it again,
// whatever libzip's version does); a large member that expands more than
// 100 times is refused as a zip bomb (Keras' saving_lib._reject_zip_bomb),
// and headers no real archive has (more compressed bytes than the archive
// holds, more expansion than deflate can give) as corrupt, before anything
// is allocated for the size they declare.
// It lives at the runtime's base so that the frontends, which link MLIR,
// and the runtime, which never does, share it.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BASE_ZIPARCHIVE_H
#define RUNTIME_BASE_ZIPARCHIVE_H

#include "runtime/base/Status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace graph::runtime {

/// The most a deflate stream can expand: a 258-byte match coded in two bits.
/// A zip member or gzip file declaring more than this many times its
/// compressed size is corrupt.
inline constexpr uint64_t kMaxDeflateExpansion = 1032;

/// True if `head` (a file's first bytes) begins like a zip archive.
bool looksLikeZip(std::string_view head);

class ZipArchive {
public:
  /// What one member's headers declare.
  struct Member {
    std::string name;
    uint64_t size = 0;           // uncompressed
    uint64_t compressedSize = 0; // as stored
  };

  ZipArchive();
  ~ZipArchive();
  ZipArchive(ZipArchive &&) noexcept;
  ZipArchive &operator=(ZipArchive &&) noexcept;

  /// Opens the archive file `path`. Errors (no file name: the caller adds
  /// it): invalidInput (only) for "not a zip archive", notFound for a file
  /// that cannot be opened, else "cannot open the zip archive: ...".
  static Status open(const std::string &path, ZipArchive &out);
  /// Opens the archive held in `bytes`, which must outlive it.
  static Status openBuffer(std::string_view bytes, ZipArchive &out);

  /// The members, in the archive's order.
  const std::vector<Member> &members() const { return members_; }
  /// The member named `name`, or null.
  const Member *find(std::string_view name) const;

  /// Member `name`'s bytes into `out`, at most `limit` of them. Errors
  /// begin with the member's name: "config.json: CRC mismatch (archive
  /// corrupt)"; a member that declares more than `limit` bytes is
  /// resourceExhausted "NAME: declares N bytes uncompressed" (the caller
  /// says why its limit is what it is); no such member is notFound.
  Status read(std::string_view name, uint64_t limit, std::string &out) const;

private:
  /// Takes over an opened libzip archive (a zip_t, kept out of this header)
  /// and lists its members.
  /// `bytes` is the archive's size (0 if unknown).
  static Status adopt(void *archive, uint64_t bytes, ZipArchive &out);

  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<Member> members_;
};

/// One member of an archive to write: its name and its bytes.
struct ZipMember {
  std::string name;
  std::string_view bytes;
};

/// The bytes of a zip archive holding `members` in order, stored
/// uncompressed (ZIP_STORED, as Keras' saving_lib writes a .keras) with
/// their CRC-32s and a fixed timestamp, so that equal members give equal
/// archives. No Zip64: a member or an archive of 4 GiB or more is refused
/// (resourceExhausted).
Status storedZipArchive(const std::vector<ZipMember> &members,
                        std::string &out);

} // namespace graph::runtime

#endif // RUNTIME_BASE_ZIPARCHIVE_H

//===- IdxReader.cpp - IDX files (the MNIST format) -----------------------===//

#include "runtime/data/IdxReader.h"

#include "runtime/base/ZipArchive.h"

#include <zlib.h>

#include <bit>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <memory>

namespace graph::runtime::data {
namespace {

/// Larger than any image set a host can hold decoded; a header beyond it is
/// corrupt, and the check keeps the size arithmetic from overflowing.
constexpr int64_t kMaxElements = int64_t(1) << 40;

const char *idxTypeName(uint8_t type) {
  switch (type) {
  case 0x08:
    return "unsigned byte";
  case 0x09:
    return "signed byte";
  case 0x0B:
    return "int16";
  case 0x0C:
    return "int32";
  case 0x0D:
    return "float32";
  case 0x0E:
    return "float64";
  default:
    return "unknown";
  }
}

std::string hex(uint64_t value, int digits) {
  static const char *kDigits = "0123456789abcdef";
  std::string s(digits, '0');
  for (int i = digits - 1; i >= 0; --i, value >>= 4)
    s[i] = kDigits[value & 0xF];
  return "0x" + s;
}

std::string dimsString(const std::vector<int64_t> &dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0)
      s += 'x';
    s += std::to_string(dims[i]);
  }
  return s;
}

struct GzFileCloser {
  void operator()(gzFile_s *f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzFileCloser>;

/// A file read through zlib, which passes a file without the gzip magic
/// through unchanged, so one path reads both forms.
class IdxInput {
public:
  explicit IdxInput(const std::string &path) : path_(path) {}

  Status open() {
    std::error_code ec;
    std::filesystem::file_status st = std::filesystem::status(path_, ec);
    if (!std::filesystem::exists(st))
      return fail("no such file; check the path");
    if (std::filesystem::is_directory(st))
      return fail("is a directory, not an IDX file; name the file itself");
    file_.reset(gzopen(path_.c_str(), "rb"));
    if (!file_)
      return fail(std::string("cannot open: ") + std::strerror(errno) +
                  "; check the file's permissions");
    gzbuffer(file_.get(), 1 << 17);
    return Status::ok();
  }

  /// Reads exactly `size` bytes; `what` says what they are, for a message
  /// about a file that ends early.
  Status read(void *dst, size_t size, const std::string &what) {
    auto *out = static_cast<uint8_t *>(dst);
    size_t done = 0;
    while (done < size) {
      unsigned chunk =
          static_cast<unsigned>(std::min<size_t>(size - done, 1u << 30));
      int n = gzread(file_.get(), out + done, chunk);
      if (n < 0)
        return streamError();
      if (n == 0) {
        Status s = streamError();
        if (!s)
          return s;
        return fail("truncated: " + what + " needs " + std::to_string(size) +
                    " bytes but the file holds only " + std::to_string(done) +
                    "; the download is incomplete, fetch the file again");
      }
      done += static_cast<size_t>(n);
    }
    return Status::ok();
  }

  /// Fails, before anything is allocated for them, when the file cannot
  /// hold the `size` bytes the header declares (after `consumed` bytes of
  /// header): a corrupt 16-byte header may declare a terabyte. A plain file
  /// holds what is left of it; a gzip stream at most kMaxDeflateExpansion
  /// times its size.
  Status checkHolds(uint64_t size, uint64_t consumed, const std::string &what) {
    std::error_code ec;
    const uint64_t fileSize = std::filesystem::file_size(path_, ec);
    if (ec)
      return Status::ok(); // Not a regular file: the reads will tell.
    if (gzdirect(file_.get())) {
      const uint64_t left = fileSize > consumed ? fileSize - consumed : 0;
      if (size > left)
        return fail("truncated: " + what + " needs " + std::to_string(size) +
                    " bytes but the file holds only " + std::to_string(left) +
                    "; the download is incomplete, fetch the file again");
      return Status::ok();
    }
    if (size / kMaxDeflateExpansion > fileSize)
      return fail("the header declares " + what + ", " + std::to_string(size) +
                  " bytes, more than a gzip file of " +
                  std::to_string(fileSize) +
                  " bytes can hold (deflate expands at most " +
                  std::to_string(kMaxDeflateExpansion) +
                  " times); the header is corrupt");
    return Status::ok();
  }

  /// Fails when anything follows the data the header declares.
  Status expectEnd(const std::string &what) {
    uint8_t extra;
    int n = gzread(file_.get(), &extra, 1);
    if (n < 0)
      return streamError();
    if (n > 0)
      return fail("bytes follow " + what +
                  " the header declares; the header and the data disagree, "
                  "so the file is corrupt or not an IDX file");
    return streamError();
  }

  Status fail(const std::string &fault) const {
    return Status::error(path_ + ": " + fault);
  }

private:
  /// zlib's account of a failed read, if there is one; a gzip stream cut
  /// short reports Z_BUF_ERROR.
  Status streamError() {
    int code = Z_OK;
    const char *msg = gzerror(file_.get(), &code);
    if (code == Z_OK || code == Z_STREAM_END)
      return Status::ok();
    if (code == Z_ERRNO)
      return fail(std::string("read error: ") + std::strerror(errno));
    if (code == Z_BUF_ERROR)
      return fail(std::string("truncated gzip stream (") + msg +
                  "); the download is incomplete, fetch the file again");
    return fail(std::string("corrupt gzip stream (") + msg +
                "); fetch the file again");
  }

  std::string path_;
  GzFile file_;
};

} // namespace

Status readIdxFile(const std::string &path, IdxArray &out) {
  IdxInput in(path);
  if (Status s = in.open(); !s)
    return s;
  uint8_t magic[4];
  if (Status s = in.read(magic, 4, "the IDX magic number"); !s)
    return s;
  uint64_t magicValue = (uint64_t(magic[0]) << 24) |
                        (uint64_t(magic[1]) << 16) | (uint64_t(magic[2]) << 8) |
                        magic[3];
  if (magic[0] != 0 || magic[1] != 0 || magic[3] == 0)
    return in.fail("not an IDX file: the magic number is " +
                   hex(magicValue, 8) +
                   ", expected 0x0000TTRR (two zero bytes, an element type, a "
                   "rank of at least 1); check that the path names an IDX "
                   "file");
  const uint8_t type = magic[2];
  if (type != kIdxUnsignedByte && type != kIdxFloat32)
    return in.fail("element type " + hex(type, 2) + " (" + idxTypeName(type) +
                   ") is not supported; only unsigned bytes (0x08), as "
                   "MNIST-format images and labels use, and float32 (0x0d) "
                   "are read; convert the file to one of those");
  int rank = magic[3];
  std::vector<uint8_t> header(4 * rank);
  if (Status s =
          in.read(header.data(), header.size(),
                  "the header's " + std::to_string(rank) + " dimensions");
      !s)
    return s;
  std::vector<int64_t> dims(rank);
  int64_t elements = 1;
  for (int i = 0; i < rank; ++i) {
    const uint8_t *b = &header[4 * i];
    dims[i] = (int64_t(b[0]) << 24) | (int64_t(b[1]) << 16) |
              (int64_t(b[2]) << 8) | b[3];
    if (dims[i] != 0 && elements > kMaxElements / dims[i])
      return in.fail("the header declares " + dimsString(dims) +
                     " elements, more than any dataset this reader takes; "
                     "the header is corrupt");
    elements *= dims[i];
  }
  std::string what = "the " + dimsString(dims) + " data";
  const uint64_t itemBytes = type == kIdxUnsignedByte ? 1 : sizeof(float);
  if (Status s = in.checkHolds(uint64_t(elements) * itemBytes,
                               4 + header.size(), what);
      !s)
    return s;
  std::vector<uint8_t> data;
  std::vector<float> floats;
  if (type == kIdxUnsignedByte) {
    data.resize(static_cast<size_t>(elements));
    if (Status s = in.read(data.data(), data.size(), what); !s)
      return s;
  } else {
    floats.resize(static_cast<size_t>(elements));
    if (Status s = in.read(floats.data(), floats.size() * sizeof(float), what);
        !s)
      return s;
    // The file's floats are big-endian, like its header.
    if constexpr (std::endian::native == std::endian::little) {
      auto *words = reinterpret_cast<uint32_t *>(floats.data());
      for (size_t i = 0, e = floats.size(); i < e; ++i)
        words[i] = __builtin_bswap32(words[i]);
    }
  }
  if (Status s = in.expectEnd(what); !s)
    return s;
  out.dims = std::move(dims);
  out.elementType = type;
  out.data = std::move(data);
  out.floats = std::move(floats);
  return Status::ok();
}

Status loadIdxDataset(const std::string &imagesPath,
                      const std::string &labelsPath, int32_t numClasses,
                      Dataset &out) {
  IdxArray images, labels;
  if (Status s = readIdxFile(imagesPath, images); !s)
    return s;
  if (images.dims.size() != 3 && images.dims.size() != 4)
    return Status::error(imagesPath + ": images of rank " +
                         std::to_string(images.dims.size()) + " (" +
                         dimsString(images.dims) +
                         "); an image file holds [N, H, W] or [N, H, W, C]; "
                         "check that this is the image file of the pair");
  if (Status s = readIdxFile(labelsPath, labels); !s)
    return s;
  if (labels.dims.size() != 1)
    return Status::error(labelsPath + ": labels of rank " +
                         std::to_string(labels.dims.size()) + " (" +
                         dimsString(labels.dims) +
                         "); a label file holds [N]; check that this is the "
                         "label file of the pair");
  if (labels.elementType != kIdxUnsignedByte)
    return Status::error(labelsPath + ": labels of element type " +
                         hex(labels.elementType, 2) + " (" +
                         idxTypeName(labels.elementType) +
                         "); a label file holds unsigned bytes (0x08), one "
                         "class index per example; check that this is the "
                         "label file of the pair");
  if (images.dims[0] != labels.dims[0])
    return Status::error(imagesPath + " holds " +
                         std::to_string(images.dims[0]) + " images but " +
                         labelsPath + " holds " +
                         std::to_string(labels.dims[0]) +
                         " labels; the two files must come from the same "
                         "split (train with train, t10k with t10k)");
  Dataset ds;
  ds.name = imagesPath;
  ds.shape = {images.dims[1], images.dims[2],
              images.dims.size() == 4 ? images.dims[3] : 1};
  ds.numClasses = numClasses;
  for (int64_t i = 0; i < labels.dims[0]; ++i)
    if (labels.data[i] >= numClasses)
      return Status::error(
          labelsPath + ": label " + std::to_string(labels.data[i]) +
          " of example " + std::to_string(i) + " is outside [0, " +
          std::to_string(numClasses) + "); the file does not belong to a " +
          std::to_string(numClasses) + "-class dataset");
  ds.labels.assign(labels.data.begin(), labels.data.end());
  if (images.elementType == kIdxFloat32) {
    // Already scaled by whoever wrote them: taken as they are.
    ds.images = std::move(images.floats);
  } else {
    ds.images.resize(images.data.size());
    const uint8_t *src = images.data.data();
    float *dst = ds.images.data();
    for (size_t i = 0, e = images.data.size(); i < e; ++i)
      dst[i] = static_cast<float>(src[i]) / 255.0f;
  }
  if (Status s = ds.validate(); !s)
    return s;
  out = std::move(ds);
  return Status::ok();
}

} // namespace graph::runtime::data

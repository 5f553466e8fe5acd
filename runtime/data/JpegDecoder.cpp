//===- JpegDecoder.cpp - JPEG files to 8-bit pixels, by TurboJPEG ---------===//

#include "runtime/data/JpegDecoder.h"

#include <turbojpeg.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace graph::runtime::data {
namespace {

/// No image a pipeline decodes comes near it; a larger file is refused
/// before it is read.
constexpr int64_t kMaxFileBytes = int64_t(1) << 30;
/// TurboJPEG takes the row pitch as an int; an image beyond it is refused
/// rather than decoded into an overflowing buffer.
constexpr int64_t kMaxDecodedBytes = (int64_t(1) << 31) - 1;

std::string hexByte(uint8_t b) {
  static const char *kDigits = "0123456789abcdef";
  return std::string("0x") + kDigits[b >> 4] + kDigits[b & 0xF];
}

/// Whether the JPEG carries Adobe's APP14 marker, before its first scan:
/// libjpeg's saw_Adobe_marker, which says a CMYK file stores its values
/// inverted (Photoshop's convention).
bool hasAdobeMarker(const uint8_t *data, size_t size) {
  size_t at = 2; // after SOI
  while (at + 4 <= size && data[at] == 0xFF) {
    uint8_t marker = data[at + 1];
    if (marker == 0xDA || marker == 0xD9) // SOS, EOI
      return false;
    if (marker == 0xFF) { // fill byte
      ++at;
      continue;
    }
    size_t length = (size_t(data[at + 2]) << 8) | data[at + 3];
    if (length < 2)
      return false;
    // libjpeg takes an APP14 of 12 bytes or more for Adobe's.
    if (marker == 0xEE && length >= 14 && at + 4 + 5 <= size &&
        std::memcmp(data + at + 4, "Adobe", 5) == 0)
      return true;
    at += 2 + length;
  }
  return false;
}

/// TensorFlow's CMYK to RGB (core/lib/jpeg/jpeg_mem.cc): with Adobe's
/// marker the values are inverted, r = k c / 255; without it r = (255 - k)
/// (255 - c) / 255; integer division, as TF computes it.
void cmykToRgb(const PixelBuffer &cmyk, bool adobe, uint8_t *rgb) {
  const size_t pixels = cmyk.size() / 4;
  for (size_t i = 0; i < pixels; ++i) {
    const int c = cmyk[4 * i], m = cmyk[4 * i + 1], y = cmyk[4 * i + 2],
              k = cmyk[4 * i + 3];
    if (adobe) {
      rgb[3 * i] = static_cast<uint8_t>(k * c / 255);
      rgb[3 * i + 1] = static_cast<uint8_t>(k * m / 255);
      rgb[3 * i + 2] = static_cast<uint8_t>(k * y / 255);
    } else {
      rgb[3 * i] = static_cast<uint8_t>((255 - k) * (255 - c) / 255);
      rgb[3 * i + 1] = static_cast<uint8_t>((255 - k) * (255 - m) / 255);
      rgb[3 * i + 2] = static_cast<uint8_t>((255 - k) * (255 - y) / 255);
    }
  }
}

/// Closes a file descriptor on every path out.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0)
      ::close(fd);
  }
};

} // namespace

Status readImageFile(const std::string &path, std::vector<uint8_t> &out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return Status::error(path + ": cannot open: " + std::strerror(errno) +
                         "; check that the file exists and is readable");
  FdCloser closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return Status::error(path + ": cannot stat: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode))
    return Status::error(path + ": is a directory named like an image; "
                                "rename it or move it out of the folder");
  if (!S_ISREG(st.st_mode))
    return Status::error(path + ": not a regular file (a device, FIFO or "
                                "socket); remove it");
  if (st.st_size == 0)
    return Status::error(path + ": empty file (0 bytes), not an image; the "
                                "copy is incomplete: copy it again or "
                                "remove it");
  if (st.st_size > kMaxFileBytes)
    return Status::error(path + ": " + std::to_string(st.st_size) +
                         " bytes, more than the 1 GiB an image file may "
                         "hold here; this is not a training image");
  out.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return Status::error(path + ": read error: " + std::strerror(errno));
    if (n == 0) // shrunk since fstat: decode what is there
      break;
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return Status::ok();
}

std::string describeNonJpeg(const uint8_t *data, size_t size) {
  auto startsWith = [&](const char *magic, size_t n, size_t at = 0) {
    return size >= at + n && std::memcmp(data + at, magic, n) == 0;
  };
  if (startsWith("\xFF\xD8\xFF", 3))
    return "";
  if (size == 0)
    return "an empty file";
  if (startsWith("\x89PNG", 4))
    return "a PNG image";
  if (startsWith("GIF8", 4))
    return "a GIF image";
  if (startsWith("BM", 2))
    return "a BMP image";
  if (startsWith("RIFF", 4) && startsWith("WEBP", 4, 8))
    return "a WebP image";
  if (startsWith("II*\0", 4) || startsWith("MM\0*", 4))
    return "a TIFF image";
  if (startsWith("ftyp", 4, 4))
    return "an HEIF/AVIF image or video";
  std::string first;
  for (size_t i = 0; i < size && i < 4; ++i) {
    if (i > 0)
      first += ' ';
    first += hexByte(data[i]);
  }
  return "not an image format we know (first bytes " + first +
         "; a JPEG starts 0xff 0xd8 0xff)";
}

int dctScaleDenominator(int64_t width, int64_t height, int64_t minWidth,
                        int64_t minHeight) {
  for (int denom : {8, 4, 2})
    if ((width + denom - 1) / denom >= minWidth &&
        (height + denom - 1) / denom >= minHeight)
      return denom;
  return 1;
}

JpegDecoder::JpegDecoder() : handle_(tjInitDecompress()) {}

JpegDecoder::~JpegDecoder() {
  if (handle_)
    tjDestroy(static_cast<tjhandle>(handle_));
}

Status JpegDecoder::fault(const std::string &name, const std::string &during) {
  tjhandle h = static_cast<tjhandle>(handle_);
  std::string what = tjGetErrorStr2(h);
  bool warning = tjGetErrorCode(h) == TJERR_WARNING;
  // libjpeg-turbo 2.1 leaves a handle whose header read failed mid-state,
  // and every later file then fails ("Bogus marker length"): a decoder
  // that skips a bad file must start the next one afresh.
  tjDestroy(h);
  handle_ = tjInitDecompress();
  // A warning is libjpeg meeting data it can step over (a truncated scan, a
  // corrupt segment); the image it would give is not the file's.
  if (warning)
    return Status::error(name + ": corrupt or truncated JPEG (libjpeg-turbo, " +
                         during + ": " + what +
                         "); copy the file again, or remove it");
  return Status::error(name + ": cannot decode as JPEG (libjpeg-turbo, " +
                       during + ": " + what +
                       "); copy the file again, or remove it");
}

Status JpegDecoder::decode(const std::string &name, const uint8_t *data,
                           size_t size, int channels, int64_t minWidth,
                           int64_t minHeight, DecodedImage &out,
                           bool fastIdct) {
  if (!handle_)
    return Status::error(name + ": cannot start a TurboJPEG decompressor (" +
                         tjGetErrorStr2(nullptr) +
                         "); the host is likely "
                         "out of memory");
  if (channels != 0 && channels != 1 && channels != 3)
    return Status::error(name + ": " + std::to_string(channels) +
                         " channels asked of a JPEG; decode to 1 (grayscale) "
                         "or 3 (RGB)");
  if (std::string kind = describeNonJpeg(data, size); !kind.empty())
    return Status::error(name + ": named like a JPEG but holds " + kind +
                         "; convert it to JPEG, or remove it");
  tjhandle h = static_cast<tjhandle>(handle_);
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(h, data, static_cast<unsigned long>(size), &width,
                          &height, &subsampling, &colorspace) != 0)
    return fault(name, "reading the header");
  // A CMYK (or YCCK) file decodes to RGB, as TensorFlow's does; like
  // TensorFlow's, not to one channel.
  const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  if (cmyk && channels == 1)
    return Status::error(name +
                         ": a CMYK JPEG decodes to RGB (3 channels), not to "
                         "1 (TensorFlow's decode_jpeg refuses it too); "
                         "convert the file to RGB or grayscale");
  if (channels == 0)
    channels = colorspace == TJCS_GRAY ? 1 : 3;
  int scaleDenominator =
      minWidth > 0 && minHeight > 0
          ? dctScaleDenominator(width, height, minWidth, minHeight)
          : 1;
  // Ask TurboJPEG for exactly the scaled size: it takes the largest of its
  // factors that fits, which is then 1/scaleDenominator (or, on a side of a
  // few pixels, a factor giving the same size).
  tjscalingfactor factor = {1, scaleDenominator};
  int64_t scaledWidth = TJSCALED(width, factor);
  int64_t scaledHeight = TJSCALED(height, factor);
  int64_t bytes = scaledWidth * scaledHeight * channels;
  // A CMYK file decodes through 4 bytes a pixel first.
  if (std::max<int64_t>(bytes, cmyk ? scaledWidth * scaledHeight * 4 : 0) >
      kMaxDecodedBytes)
    return Status::error(name + ": a " + std::to_string(width) + "x" +
                         std::to_string(height) + " JPEG decodes to " +
                         std::to_string(bytes) +
                         " bytes, more than the 2 GiB TurboJPEG takes; "
                         "shrink the file before training on it");
  out.pixels.resize(static_cast<size_t>(bytes));
  int pixelFormat = cmyk ? TJPF_CMYK : channels == 3 ? TJPF_RGB : TJPF_GRAY;
  if (cmyk)
    cmyk_.resize(static_cast<size_t>(scaledWidth * scaledHeight * 4));
  if (tjDecompress2(h, data, static_cast<unsigned long>(size),
                    cmyk ? cmyk_.data() : out.pixels.data(),
                    static_cast<int>(scaledWidth), 0,
                    static_cast<int>(scaledHeight), pixelFormat,
                    (fastIdct ? TJFLAG_FASTDCT : TJFLAG_ACCURATEDCT) |
                        TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS) != 0)
    return fault(name, "decoding");
  if (cmyk)
    cmykToRgb(cmyk_, hasAdobeMarker(data, size), out.pixels.data());
  out.width = scaledWidth;
  out.height = scaledHeight;
  out.channels = channels;
  out.fileWidth = width;
  out.fileHeight = height;
  out.scaleDenominator = scaleDenominator;
  return Status::ok();
}

} // namespace graph::runtime::data

//===- JpegDecoder.h - JPEG files to 8-bit pixels, by TurboJPEG -*- C++ -*-===//
//
// libjpeg-turbo's TurboJPEG API decodes a JPEG to RGB or grayscale with
// fancy upsampling and, by default, the accurate integer inverse DCT: the
// pixels libjpeg-turbo's own tools and PIL give. tf.io.decode_jpeg's
// default (dct_method="") is the fast integer IDCT instead, whose pixels
// differ by a level or so; fastIdct gives those, and graphrun always asks
// for it (bench/image-decode.sh compares both with TF). It can also decode
// at 1/2, 1/4 or 1/8 of the size by scaling the inverse DCT, which saves
// part of the inverse DCT's and upsampling's work (not the entropy
// decoding's); the pixels then differ from a full decode resized
// (ImageFolder.h says when: graphrun --fast-decode).
//
// Every libjpeg warning is an error here: a truncated file draws one
// ("Premature end of JPEG file") yet TurboJPEG still returns an image, its
// missing rows grey, which a model would train on unnoticed. A progressive
// file of more than 500 scans is refused too (TJFLAG_LIMITSCANS, as
// libjpeg-turbo advises for files from elsewhere): each scan is a pass over
// the whole image's coefficients, so a small file can cost thousands of
// passes over a large frame; encoders write about ten scans.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_DATA_JPEGDECODER_H
#define RUNTIME_DATA_JPEGDECODER_H

#include "runtime/base/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace graph::runtime::data {

/// An allocator whose resize leaves new bytes uninitialised, for buffers a
/// decoder then writes whole: a corrupt file declaring a 1 GB image must not
/// cost 1 GB of zeroed pages before its data are found missing (the pages a
/// failed decode never wrote are never touched).
template <typename T> struct UninitializedAllocator : std::allocator<T> {
  template <typename U> struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <typename U>
  UninitializedAllocator(const UninitializedAllocator<U> &) noexcept {}
  // Only construction without a value changes; with one, allocator_traits
  // falls back to std::construct_at.
  template <typename U> void construct(U *p) noexcept {
    ::new (static_cast<void *>(p)) U;
  }
};
using PixelBuffer = std::vector<uint8_t, UninitializedAllocator<uint8_t>>;

/// 8-bit pixels, row-major height x width x channels.
struct DecodedImage {
  int64_t width = 0;
  int64_t height = 0;
  int64_t channels = 0;
  /// The file's own size, before any DCT scaling.
  int64_t fileWidth = 0;
  int64_t fileHeight = 0;
  /// The DCT scaling used: the image is 1/scaleDenominator of the file's
  /// size (rounded up), 1 for a full decode.
  int scaleDenominator = 1;
  PixelBuffer pixels;
};

/// Reads the whole of `path` into `out` (reusing its storage). Fails, naming
/// the file, on a missing or unreadable file, a directory, an empty file,
/// or one over 1 GiB (no image a pipeline decodes is that large).
Status readImageFile(const std::string &path, std::vector<uint8_t> &out);

/// What a file's first bytes say it is: "" for a JPEG (FF D8 FF), else a
/// description for a message ("a PNG image", "not an image format we
/// know").
std::string describeNonJpeg(const uint8_t *data, size_t size);

/// The DCT scaling denominator (1, 2, 4 or 8) that decodes a width x height
/// JPEG as small as it can while still at least minWidth x minHeight: the
/// smallest of the factors 1/8, 1/4, 1/2 whose scaled size (rounded up, as
/// libjpeg does) is at least the minimum in both dimensions, else 1.
int dctScaleDenominator(int64_t width, int64_t height, int64_t minWidth,
                        int64_t minHeight);

/// A TurboJPEG decompressor. Not thread-safe: give each thread its own.
class JpegDecoder {
public:
  JpegDecoder();
  ~JpegDecoder();
  JpegDecoder(const JpegDecoder &) = delete;
  JpegDecoder &operator=(const JpegDecoder &) = delete;

  /// Decodes `size` bytes of JPEG into `out` (reusing its storage) with
  /// `channels` 3 (RGB; a grayscale file is replicated) or 1 (grayscale; a
  /// colour file gives its luma, Y of YCbCr), or 0: the file's own, 1 for a
  /// grayscale file and 3 for any other (out.channels says which), for a
  /// caller that replicates grey itself after the work it would otherwise
  /// do three times (ImageFolder's resize). With a positive minWidth and
  /// minHeight, decodes at the DCT scale dctScaleDenominator picks for
  /// them; with 0, in full. fastIdct takes libjpeg's fast integer inverse
  /// DCT (JDCT_IFAST) for a full-scale decode instead of the accurate one.
  /// A CMYK or YCCK file (Photoshop's) decodes to RGB as TensorFlow's
  /// decode_jpeg converts it (Adobe's inverted values), to 3 channels only.
  /// `name` (the file's path) starts every message. Fails on data that is
  /// not a JPEG, is corrupt, or is truncated.
  Status decode(const std::string &name, const uint8_t *data, size_t size,
                int channels, int64_t minWidth, int64_t minHeight,
                DecodedImage &out, bool fastIdct = false);

private:
  /// The error TurboJPEG reports, as a Status; starts a fresh handle.
  Status fault(const std::string &name, const std::string &during);

  void *handle_ = nullptr;
  /// A CMYK file's pixels before their conversion, reused.
  PixelBuffer cmyk_;
};

} // namespace graph::runtime::data

#endif // RUNTIME_DATA_JPEGDECODER_H

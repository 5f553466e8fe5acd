//===- ImageDecodeTest.cpp - JPEG decoding, TF's resize, preprocessing ----===//
//
// Each rule against an independent reference: the decoded pixels against
// PIL's (libjpeg-turbo's) decode of the committed fixtures byte for byte,
// and with the fast IDCT against TensorFlow's; the resize against
// tf.image.resize's formula written out here; the preprocessing against
// Keras' definitions.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/BilinearResize.h"
#include "runtime/data/ImageFolder.h"
#include "runtime/data/JpegDecoder.h"

#include "ImageFiles.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <tuple>

namespace graph::runtime::data::test {
namespace {

using ::testing::HasSubstr;

struct Fixture {
  const char *name;
  int64_t height, width;
};

void PrintTo(const Fixture &f, std::ostream *os) { *os << f.name; }

/// A decoded image's bytes, to compare with a reference's.
std::vector<uint8_t> bytesOf(const DecodedImage &image) {
  return {image.pixels.begin(), image.pixels.end()};
}

const Fixture kRgb420 = {"rgb420", 29, 37};
const Fixture kRgb444 = {"rgb444", 20, 24};
const Fixture kGray = {"gray", 23, 31};
const Fixture kPhoto = {"photo", 96, 128};

/// Decodes a fixture; `minWidth` x `minHeight` > 0 asks for DCT scaling.
DecodedImage decodeFixture(const Fixture &f, int channels, int64_t minWidth = 0,
                           int64_t minHeight = 0) {
  std::string path = imageFixture(std::string(f.name) + ".jpeg");
  std::vector<uint8_t> bytes = readBytes(path);
  JpegDecoder decoder;
  DecodedImage image;
  Status s = decoder.decode(path, bytes.data(), bytes.size(), channels,
                            minWidth, minHeight, image);
  EXPECT_TRUE(s) << s.message();
  return image;
}

//===-- decoding ----------------------------------------------------------===//

class FullDecodeTest
    : public ::testing::TestWithParam<std::tuple<Fixture, int>> {};

TEST_P(FullDecodeTest, EqualsLibjpegTurbosDecodeExactly) {
  auto [f, channels] = GetParam();
  DecodedImage image = decodeFixture(f, channels);
  EXPECT_EQ(image.height, f.height);
  EXPECT_EQ(image.width, f.width);
  EXPECT_EQ(image.channels, channels);
  EXPECT_EQ(image.scaleDenominator, 1);
  std::vector<uint8_t> expected = readBytes(
      imageFixture(std::string(f.name) + (channels == 3 ? ".rgb" : ".gray")));
  ASSERT_EQ(image.pixels.size(), expected.size());
  // Byte for byte: accurate IDCT and fancy upsampling, as PIL decodes.
  EXPECT_TRUE(bytesOf(image) == expected) << f.name;
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, FullDecodeTest,
    ::testing::Values(std::make_tuple(kRgb420, 3), // 4:2:0 colour
                      std::make_tuple(kRgb444, 3), // 4:4:4 colour
                      std::make_tuple(kGray, 1),   // grayscale
                      std::make_tuple(kPhoto, 3),
                      std::make_tuple(kRgb420, 1), // colour to luma
                      std::make_tuple(kGray, 3))); // grey replicated

TEST(FastIdctTest, EqualsTfDecodeJpegsDefault) {
  // NAME.tf.* is tf.io.decode_jpeg(dct_method="") of the fixture
  // (Inputs/images/generate-tf.py, TensorFlow 2.21).
  for (auto [f, channels] :
       {std::make_tuple(kRgb420, 3), std::make_tuple(kPhoto, 3),
        std::make_tuple(kGray, 1)}) {
    std::string path = imageFixture(std::string(f.name) + ".jpeg");
    std::vector<uint8_t> bytes = readBytes(path);
    JpegDecoder decoder;
    DecodedImage image;
    Status s = decoder.decode(path, bytes.data(), bytes.size(), channels, 0, 0,
                              image, /*fastIdct=*/true);
    ASSERT_TRUE(s) << s.message();
    std::vector<uint8_t> tf = readBytes(imageFixture(
        std::string(f.name) + (channels == 3 ? ".tf.rgb" : ".tf.gray")));
    EXPECT_TRUE(bytesOf(image) == tf) << f.name;
    // ... which the accurate IDCT is not.
    std::vector<uint8_t> accurate = bytesOf(decodeFixture(f, channels));
    EXPECT_FALSE(accurate == tf) << f.name;
  }
}

TEST(DctScalingTest, ScaledDecodeEqualsLibjpegTurbosScaledDecode) {
  // 128x96 asked to stay at least 64x48, 32x24, 16x12: 1/2, 1/4, 1/8.
  for (int denom : {2, 4, 8}) {
    DecodedImage image = decodeFixture(kPhoto, 3, 128 / denom, 96 / denom);
    EXPECT_EQ(image.scaleDenominator, denom);
    EXPECT_EQ(image.width, 128 / denom);
    EXPECT_EQ(image.height, 96 / denom);
    EXPECT_EQ(image.fileWidth, 128);
    EXPECT_EQ(image.fileHeight, 96);
    std::vector<uint8_t> expected =
        readBytes(imageFixture("photo.scale" + std::to_string(denom) + ".rgb"));
    EXPECT_TRUE(bytesOf(image) == expected) << "1/" << denom;
  }
}

TEST(DctScalingTest, PicksTheSmallestScaleStillAtLeastTheTarget) {
  // The OCT2017 case: 512x496 for 224x224 decodes at 1/2 (256x248).
  EXPECT_EQ(dctScaleDenominator(512, 496, 224, 224), 2);
  EXPECT_EQ(dctScaleDenominator(512, 496, 128, 124), 4);
  EXPECT_EQ(dctScaleDenominator(512, 496, 64, 62), 8);
  EXPECT_EQ(dctScaleDenominator(512, 496, 64, 63), 4);
  // Rounded up as libjpeg does: ceil(447 / 2) = 224 is enough.
  EXPECT_EQ(dctScaleDenominator(447, 447, 224, 224), 2);
  EXPECT_EQ(dctScaleDenominator(446, 500, 224, 224), 1);
  // Upscaling, or a target over half the size: no DCT scaling.
  EXPECT_EQ(dctScaleDenominator(28, 28, 224, 224), 1);
  EXPECT_EQ(dctScaleDenominator(512, 496, 300, 224), 1);
}

TEST(DctScalingTest, TargetOverHalfTheSizeDecodesInFull) {
  DecodedImage image = decodeFixture(kPhoto, 3, 65, 48);
  EXPECT_EQ(image.scaleDenominator, 1);
  EXPECT_EQ(image.width, 128);
  EXPECT_TRUE(bytesOf(image) == readBytes(imageFixture("photo.rgb")));
}

TEST(JpegDecoderTest, DecodesCmykToTfsRgb) {
  // cmyk.jpeg: PIL's CMYK JPEG (the Adobe marker, inverted values, as
  // Photoshop writes them); cmyk.tf.rgb: tf.io.decode_jpeg's RGB of it
  // (generate-tf.py, TensorFlow 2.21, its fast IDCT).
  std::string path = imageFixture("cmyk.jpeg");
  std::vector<uint8_t> bytes = readBytes(path);
  std::vector<uint8_t> tf = readBytes(imageFixture("cmyk.tf.rgb"));
  JpegDecoder decoder;
  DecodedImage image;
  for (int channels : {3, 0}) {
    Status s = decoder.decode(path, bytes.data(), bytes.size(), channels, 0, 0,
                              image, /*fastIdct=*/true);
    ASSERT_TRUE(s) << s.message();
    EXPECT_EQ(image.channels, 3);
    EXPECT_EQ(image.width, 56);
    EXPECT_EQ(image.height, 40);
    EXPECT_TRUE(bytesOf(image) == tf) << "channels " << channels;
  }
  // The accurate IDCT (graphrun's default) is within a few levels of it.
  ASSERT_TRUE(decoder.decode(path, bytes.data(), bytes.size(), 3, 0, 0, image));
  ASSERT_EQ(image.pixels.size(), tf.size());
  int worst = 0;
  for (size_t i = 0; i < tf.size(); ++i)
    worst = std::max(worst, std::abs(int(image.pixels[i]) - int(tf[i])));
  EXPECT_LE(worst, 4);
  // TensorFlow decodes a CMYK file to 3 channels only; so do we, saying so.
  Status gray =
      decoder.decode(path, bytes.data(), bytes.size(), 1, 0, 0, image);
  ASSERT_FALSE(gray);
  EXPECT_THAT(gray.message(), HasSubstr("a CMYK JPEG decodes to RGB"));
}

TEST(JpegDecoderTest, RefusesChannelCountsAJpegDoesNotDecodeTo) {
  std::vector<uint8_t> bytes = readBytes(imageFixture("gray.jpeg"));
  JpegDecoder decoder;
  DecodedImage image;
  Status s =
      decoder.decode("x.jpeg", bytes.data(), bytes.size(), 4, 0, 0, image);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("x.jpeg: 4 channels"));
}

TEST(JpegDecoderTest, DecodesAgainAfterABadFile) {
  // libjpeg-turbo 2.1 leaves a handle broken by a failed header read; the
  // decoder of a thread that skips a bad file must still decode the next.
  JpegDecoder decoder;
  DecodedImage image;
  std::vector<uint8_t> bad = bogusHeaderJpeg();
  std::vector<uint8_t> truncated = readBytes(imageFixture("photo.jpeg"));
  truncated.resize(truncated.size() / 2);
  std::vector<uint8_t> good = readBytes(imageFixture("rgb420.jpeg"));
  for (const std::vector<uint8_t> *data : {&bad, &truncated}) {
    EXPECT_FALSE(
        decoder.decode("bad.jpeg", data->data(), data->size(), 3, 0, 0, image));
    Status s =
        decoder.decode("good.jpeg", good.data(), good.size(), 3, 0, 0, image);
    ASSERT_TRUE(s) << s.message();
    EXPECT_TRUE(bytesOf(image) == readBytes(imageFixture("rgb420.rgb")));
  }
}

/// A valid progressive 8x8 grayscale JPEG of all-zero coefficients (every
/// pixel 128) in 1 + 63 * `bitPlanes` scans: the DC scan, then for each AC
/// coefficient its own first scan (Al = bitPlanes - 1) and its successive
/// approximation refinements down to Al = 0, as libjpeg's progression rules
/// allow. Both Huffman tables hold one 1-bit code, symbol 0 (a DC difference
/// of 0; an end of band of one block), so every scan codes one bit.
std::vector<uint8_t> manyScanJpeg(int bitPlanes) {
  std::vector<uint8_t> out = {0xFF, 0xD8};
  auto segment = [&](uint8_t marker, std::vector<uint8_t> body) {
    out.insert(out.end(), {0xFF, marker, uint8_t((body.size() + 2) >> 8),
                           uint8_t((body.size() + 2) & 0xFF)});
    out.insert(out.end(), body.begin(), body.end());
  };
  std::vector<uint8_t> quant(65, 1);
  quant[0] = 0; // 8-bit table 0
  segment(0xDB, quant);
  segment(0xC2, {8, 0, 8, 0, 8, 1, 1, 0x11, 0}); // 8x8, one component
  for (uint8_t table : {0x00, 0x10}) {           // DC 0, AC 0
    // The table's id, 16 code counts (one code of length 1), its symbol 0.
    std::vector<uint8_t> dht(1 + 16 + 1, 0);
    dht[0] = table;
    dht[1] = 1;
    segment(0xC4, dht);
  }
  auto scan = [&](uint8_t ss, uint8_t se, uint8_t ah, uint8_t al) {
    segment(0xDA, {1, 1, 0x00, ss, se, uint8_t(ah << 4 | al)});
    out.push_back(0x7F); // the code '0', padded with ones
  };
  scan(0, 0, 0, 0);
  for (uint8_t k = 1; k < 64; ++k) {
    scan(k, k, 0, uint8_t(bitPlanes - 1));
    for (int al = bitPlanes - 2; al >= 0; --al)
      scan(k, k, uint8_t(al + 1), uint8_t(al));
  }
  out.insert(out.end(), {0xFF, 0xD9});
  return out;
}

TEST(JpegDecoderTest, AProgressiveFileOfOver500ScansIsRefused) {
  // Each scan is a pass over the whole image's coefficients, so a small
  // file can cost thousands of passes over a large frame: TurboJPEG's
  // TJFLAG_LIMITSCANS refuses more than 500, as libjpeg-turbo advises for
  // untrusted files. 442 scans of the same form still decode, and without
  // the flag the 883-scan file decodes too (checked when it was added).
  JpegDecoder decoder;
  DecodedImage image;
  std::vector<uint8_t> fewer = manyScanJpeg(7); // 1 + 63 * 7 = 442 scans
  Status s =
      decoder.decode("442.jpeg", fewer.data(), fewer.size(), 1, 0, 0, image);
  ASSERT_TRUE(s) << s.message();
  EXPECT_TRUE(bytesOf(image) == std::vector<uint8_t>(64, 128));
  std::vector<uint8_t> many = manyScanJpeg(14); // 1 + 63 * 14 = 883 scans
  s = decoder.decode("883.jpeg", many.data(), many.size(), 1, 0, 0, image);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("883.jpeg: "));
  EXPECT_THAT(s.message(), HasSubstr("more than 500 scans"));
}

/// This process's resident memory in bytes (VmRSS).
int64_t residentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stoll(line.substr(6)) * 1024;
  return -1;
}

TEST(JpegDecoderTest, AForgedSizeCostsNoMemoryForPixelsNeverDecoded) {
  // A small file whose frame header declares 20000x20000 (1.2 GB of RGB):
  // the decode fails when the data run out, and the buffer sized for the
  // declared image is never touched beyond the rows decoded (it used to be
  // zero-filled first: 1.2 GB resident for a 2 kB file, per pipeline thread).
  std::vector<uint8_t> bytes = readBytes(imageFixture("rgb420.jpeg"));
  size_t sof = 0;
  while (sof + 9 < bytes.size() &&
         !(bytes[sof] == 0xFF && bytes[sof + 1] == 0xC0))
    ++sof;
  ASSERT_LT(sof + 9, bytes.size()) << "no baseline frame header";
  for (size_t at : {sof + 5, sof + 7}) { // height, then width: 20000
    bytes[at] = 20000 >> 8;
    bytes[at + 1] = 20000 & 0xFF;
  }
  JpegDecoder decoder;
  DecodedImage image;
  const int64_t before = residentBytes();
  Status s =
      decoder.decode("forged.jpeg", bytes.data(), bytes.size(), 3, 0, 0, image);
  const int64_t after = residentBytes();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("forged.jpeg: corrupt or truncated JPEG"));
  EXPECT_GE(image.pixels.capacity(), size_t(20000) * 20000 * 3);
  EXPECT_LT(after - before, int64_t(64) << 20)
      << "resident memory grew by " << (after - before) << " bytes";
}

//===-- resize ------------------------------------------------------------===//

/// tf.image.resize's bilinear (antialias=False), written out from
/// resize_bilinear_op.cc independently of BilinearResize.cpp: the source
/// coordinate in float as TF computes it, the interpolation in double.
std::vector<double> tfResize(const std::vector<uint8_t> &src, int64_t inH,
                             int64_t inW, int64_t c, int64_t outH, int64_t outW,
                             bool halfPixel) {
  auto source = [&](int64_t i, int64_t in, int64_t out) {
    float scale = static_cast<float>(in) / static_cast<float>(out);
    float x = halfPixel ? (static_cast<float>(i) + 0.5f) * scale - 0.5f
                        : static_cast<float>(i) * scale;
    int64_t lo = std::max<int64_t>(static_cast<int64_t>(std::floor(x)), 0);
    int64_t hi = std::min<int64_t>(static_cast<int64_t>(std::ceil(x)), in - 1);
    return std::make_tuple(lo, hi, static_cast<double>(x - std::floor(x)));
  };
  std::vector<double> out(outH * outW * c);
  for (int64_t y = 0; y < outH; ++y) {
    auto [y0, y1, fy] = source(y, inH, outH);
    for (int64_t x = 0; x < outW; ++x) {
      auto [x0, x1, fx] = source(x, inW, outW);
      for (int64_t k = 0; k < c; ++k) {
        auto at = [&](int64_t yy, int64_t xx) {
          return static_cast<double>(src[(yy * inW + xx) * c + k]);
        };
        double top = at(y0, x0) + (at(y0, x1) - at(y0, x0)) * fx;
        double bottom = at(y1, x0) + (at(y1, x1) - at(y1, x0)) * fx;
        out[(y * outW + x) * c + k] = top + (bottom - top) * fy;
      }
    }
  }
  return out;
}

std::vector<uint8_t> noise(int64_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  for (auto &b : v) {
    seed = seed * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(seed >> 24);
  }
  return v;
}

struct ResizeCase {
  int64_t inH, inW, c, outH, outW;
};

void PrintTo(const ResizeCase &r, std::ostream *os) {
  *os << r.inH << "x" << r.inW << "x" << r.c << " to " << r.outH << "x"
      << r.outW;
}

class ResizeTest : public ::testing::TestWithParam<
                       std::tuple<ResizeCase, ResizeConvention>> {};

TEST_P(ResizeTest, MatchesTfImageResizeWithin1e5) {
  auto [rc, convention] = GetParam();
  std::vector<uint8_t> src = noise(rc.inH * rc.inW * rc.c, 7);
  std::vector<float> ours(rc.outH * rc.outW * rc.c);
  resizeBilinear(src.data(), rc.inH, rc.inW, rc.c, ours.data(), rc.outH,
                 rc.outW, convention);
  std::vector<double> ref =
      tfResize(src, rc.inH, rc.inW, rc.c, rc.outH, rc.outW,
               convention == ResizeConvention::halfPixel);
  // In the [0, 1] units a model sees (unitRange preprocessing).
  for (size_t i = 0; i < ref.size(); ++i)
    ASSERT_NEAR(ours[i] / 255.0, ref[i] / 255.0, 1e-5) << "element " << i;
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, ResizeTest,
    ::testing::Combine(
        ::testing::Values(ResizeCase{29, 37, 3, 11, 13},     // down
                          ResizeCase{248, 256, 3, 224, 224}, // OCT at 1/2
                          ResizeCase{7, 5, 3, 23, 17},       // up
                          ResizeCase{28, 28, 1, 224, 224},   // MNIST to VGG
                          ResizeCase{10, 40, 1, 20, 9}),     // up and down
        ::testing::Values(ResizeConvention::halfPixel,
                          ResizeConvention::legacy)));

TEST(ResizeExamplesTest, TwoPixelsToFourAsTfGivesThem) {
  // The values TF 2 and TF 1 print for tf.image.resize([[0, 255]], [1, 4]).
  const uint8_t row[2] = {0, 255};
  float out[4];
  resizeBilinear(row, 1, 2, 1, out, 1, 4, ResizeConvention::halfPixel);
  EXPECT_THAT(out, ::testing::ElementsAre(0.0f, 63.75f, 191.25f, 255.0f));
  resizeBilinear(row, 1, 2, 1, out, 1, 4, ResizeConvention::legacy);
  EXPECT_THAT(out, ::testing::ElementsAre(0.0f, 127.5f, 255.0f, 255.0f));
}

TEST(ResizeExamplesTest, SameSizeCopiesThePixels) {
  std::vector<uint8_t> src = noise(6 * 5 * 3, 3);
  std::vector<float> out(src.size());
  for (auto convention :
       {ResizeConvention::halfPixel, ResizeConvention::legacy}) {
    resizeBilinear(src.data(), 6, 5, 3, out.data(), 6, 5, convention);
    for (size_t i = 0; i < src.size(); ++i)
      ASSERT_EQ(out[i], static_cast<float>(src[i]));
  }
}

//===-- preprocessing -----------------------------------------------------===//

TEST(PreprocessTest, UnitRangeDividesBy255) {
  float px[3] = {0.0f, 51.0f, 255.0f};
  preprocessImage(px, 1, 3, ImagePreprocessing::unitRange);
  EXPECT_FLOAT_EQ(px[0], 0.0f);
  EXPECT_FLOAT_EQ(px[1], 0.2f);
  EXPECT_FLOAT_EQ(px[2], 1.0f);
}

TEST(PreprocessTest, CaffeIsBgrMinusTheImageNetMeans) {
  // keras.applications.vgg16.preprocess_input: x[..., ::-1] - [103.939,
  // 116.779, 123.68]; two pixels, R, G, B each.
  float px[6] = {10, 20, 30, 255, 0, 128};
  preprocessImage(px, 2, 3, ImagePreprocessing::caffe);
  EXPECT_FLOAT_EQ(px[0], 30 - 103.939f);
  EXPECT_FLOAT_EQ(px[1], 20 - 116.779f);
  EXPECT_FLOAT_EQ(px[2], 10 - 123.68f);
  EXPECT_FLOAT_EQ(px[3], 128 - 103.939f);
  EXPECT_FLOAT_EQ(px[4], 0 - 116.779f);
  EXPECT_FLOAT_EQ(px[5], 255 - 123.68f);
}

TEST(PreprocessTest, RawKeepsThePixels) {
  float px[3] = {0.0f, 51.0f, 255.0f};
  preprocessImage(px, 1, 3, ImagePreprocessing::raw);
  EXPECT_THAT(px, ::testing::ElementsAre(0.0f, 51.0f, 255.0f));
}

} // namespace
} // namespace graph::runtime::data::test

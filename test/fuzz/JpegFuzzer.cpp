//===- JpegFuzzer.cpp - libFuzzer target for the JPEG decoder -------------===//
//
// Every file of an image folder (graphrun --data images:DIR) goes through
// JpegDecoder: a corrupt, truncated or hostile file must give a clean Status
// (TurboJPEG parses it; the sizes, the DCT scaling and the CMYK conversion
// around it are ours), and an image it decodes must be as large as it says.
// The first byte picks the request (channels, fast IDCT, a minimum size for
// DCT scaling) as ImageFolder makes them; the rest is the file. Built by
// test/fuzz/CMakeLists.txt, run by test/fuzz/jpeg-decoder.test and
// test/fuzz/run-fuzzer.sh.
//
//===----------------------------------------------------------------------===//

#include "FuzzFile.h"

#include "runtime/data/JpegDecoder.h"

using graph::fuzz::require;
using namespace graph::runtime::data;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const uint8_t request = data[0];
  static constexpr int kChannels[] = {0, 1, 3};
  const int channels = kChannels[request % 3];
  const bool fastIdct = request & 4;
  const int64_t minSide = (request & 8) ? 28 : 0;
  ++data;
  --size;
  (void)describeNonJpeg(data, size);
  // One decoder for every input, as each pipeline thread keeps one: a
  // failed decode must leave it fit for the next.
  static JpegDecoder decoder;
  DecodedImage image;
  if (!decoder
           .decode("fuzz.jpeg", data, size, channels, minSide, minSide, image,
                   fastIdct)
           .isOk())
    return 0;
  require(image.width > 0 && image.height > 0);
  require(channels == 0 ? image.channels == 1 || image.channels == 3
                        : image.channels == channels);
  require(image.pixels.size() ==
          static_cast<size_t>(image.width * image.height * image.channels));
  require(image.scaleDenominator == 1 || image.scaleDenominator == 2 ||
          image.scaleDenominator == 4 || image.scaleDenominator == 8);
  require(image.width == (image.fileWidth + image.scaleDenominator - 1) /
                             image.scaleDenominator &&
          image.height == (image.fileHeight + image.scaleDenominator - 1) /
                              image.scaleDenominator);
  return 0;
}

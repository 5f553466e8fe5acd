//===- image-decode.cpp - an image folder through the input pipeline ------===//
//
// Lists an image folder, then times what graphrun's input does with it:
// decode, resize and preprocess on `threads` map threads, batch, prefetch,
// and prints images per second. The consumer only takes the batches, so the
// figure is the pipeline's ceiling, the rate above which it cannot feed a
// step.
//
//   image-decode --data DIR [--shape 224x224x3] [--threads 2] [--batch 32]
//                [--epochs 1] [--no-dct-scaling] [--fast-idct]
//                [--resize half-pixel]
//                [--preprocess unit] [--max-images N]
//   image-decode --data DIR --compare-dct N   # DCT-scaled vs full decode
//   image-decode --data DIR --dump FILE --max-images N  # float32 pixels
//   image-decode --data DIR --stage-times N   # read/decode/resize, 1 thread
//
// --compare-dct decodes the first N files both ways (raw pixels, 0..255) and
// prints the mean and largest absolute difference. --dump writes the first
// N examples (listing order) as float32 to FILE and their paths to
// FILE.paths, for a peer to compare with (bench/image_decode_peers.py).
//
//===----------------------------------------------------------------------===//

#include "runtime/data/BilinearResize.h"
#include "runtime/data/ImageFolder.h"
#include "runtime/data/JpegDecoder.h"
#include "runtime/data/Pipeline.h"

#include "bench/ProcessClock.h"

#include <CLI/CLI.hpp>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

using namespace graph::runtime;
using namespace graph::runtime::data;
using namespace graph::bench;

namespace {

bool parseShape(const std::string &text, ExampleShape &out) {
  long long h, w, c;
  char x1, x2;
  if (std::sscanf(text.c_str(), "%lld%c%lld%c%lld", &h, &x1, &w, &x2, &c) !=
          5 ||
      x1 != 'x' || x2 != 'x')
    return false;
  out = {h, w, c};
  return true;
}

int fail(const Status &s) {
  std::fprintf(stderr, "image-decode: %s\n", s.message().c_str());
  return 1;
}

/// The first `n` examples decoded by `src`, one after another.
Status decodeFirst(const ImageFolderSource &src, int64_t n,
                   std::vector<std::vector<float>> &out) {
  MapFn decode = src.decoder();
  for (int64_t i = 0; i < n; ++i) {
    Example e;
    e.index = i;
    if (Status s = decode(e); !s)
      return s;
    out.push_back(std::move(e.image));
  }
  return Status::ok();
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"Times an image folder through the input pipeline"};
  std::string data, shapeText = "224x224x3", resize = "half-pixel",
                    preprocess = "unit", dump;
  int threads = 2;
  int64_t batch = 32, epochs = 1, maxImages = 0, compareDct = 0, stageTimes = 0;
  bool noDct = false, fastIdct = false;
  app.add_option("--data", data, "the folder (or DIR/**/*.jpeg)")->required();
  app.add_option("--shape", shapeText, "HxWxC of an example");
  app.add_option("--threads", threads, "map threads that decode");
  app.add_option("--batch", batch, "examples a batch");
  app.add_option("--epochs", epochs, "passes over the folder");
  app.add_option("--max-images", maxImages,
                 "use the first N images of the listing (0: all)");
  app.add_flag("--no-dct-scaling", noDct, "decode every file in full");
  app.add_flag("--fast-idct", fastIdct,
               "libjpeg's fast IDCT (tf.io.decode_jpeg's default)");
  app.add_option("--resize", resize, "half-pixel (TF 2) or legacy (TF 1)");
  app.add_option("--preprocess", preprocess, "unit, caffe or raw");
  app.add_option("--compare-dct", compareDct,
                 "print how DCT scaling changes N images' pixels");
  app.add_option("--dump", dump, "write the first --max-images examples");
  app.add_option("--stage-times", stageTimes,
                 "time N images stage by stage on one thread");
  CLI11_PARSE(app, argc, argv);

  ImageFolderOptions o;
  o.path = data;
  if (!parseShape(shapeText, o.shape))
    return fail(Status::error("--shape " + shapeText + ": give HxWxC"));
  o.dctScaling = !noDct;
  o.fastIdct = fastIdct;
  o.resize = resize == "legacy" ? ResizeConvention::legacy
                                : ResizeConvention::halfPixel;
  o.preprocessing = preprocess == "caffe" ? ImagePreprocessing::caffe
                    : preprocess == "raw" ? ImagePreprocessing::raw
                                          : ImagePreprocessing::unitRange;

  auto start = std::chrono::steady_clock::now();
  ImageFolderSource src;
  if (Status s = openImageFolder(o, src); !s)
    return fail(s);
  std::printf("listing: %s\nlisting: %.3f s (every file opened and its first "
              "bytes read)\n",
              src.summary().c_str(), secondsSince(start));
  int64_t n = maxImages > 0 ? std::min(maxImages, src.size()) : src.size();

  if (stageTimes > 0) {
    // One thread, stage by stage, CPU time: where an image's cost goes.
    int64_t k = std::min(stageTimes, src.size());
    std::vector<std::vector<uint8_t>> files(k);
    double readCpu = cpuSeconds();
    for (int64_t i = 0; i < k; ++i)
      if (Status s = readImageFile(src.files()[i].path, files[i]); !s)
        return fail(s);
    readCpu = cpuSeconds() - readCpu;
    JpegDecoder decoder;
    DecodedImage image;
    std::vector<float> out(o.shape.elements());
    for (bool scaled : {false, true}) {
      double decodeCpu = 0, resizeCpu = 0, preprocessCpu = 0;
      for (int64_t i = 0; i < k; ++i) {
        double t0 = cpuSeconds();
        if (Status s = decoder.decode(
                src.files()[i].path, files[i].data(), files[i].size(),
                static_cast<int>(o.shape.channels()),
                scaled ? o.shape.width() : 0, scaled ? o.shape.height() : 0,
                image, o.fastIdct);
            !s)
          return fail(s);
        double t1 = cpuSeconds();
        resizeBilinear(image.pixels.data(), image.height, image.width,
                       image.channels, out.data(), o.shape.height(),
                       o.shape.width(), o.resize);
        double t2 = cpuSeconds();
        preprocessImage(out.data(), o.shape.height() * o.shape.width(),
                        o.shape.channels(), o.preprocessing);
        decodeCpu += t1 - t0;
        resizeCpu += t2 - t1;
        preprocessCpu += cpuSeconds() - t2;
      }
      std::printf("stages (%s, %lld files, cpu-ms/image): read %.3f, decode "
                  "%.3f (to %lldx%lld), resize %.3f, preprocess %.3f\n",
                  scaled ? "dct scaling" : "full decode",
                  static_cast<long long>(k), 1e3 * readCpu / k,
                  1e3 * decodeCpu / k, static_cast<long long>(image.height),
                  static_cast<long long>(image.width), 1e3 * resizeCpu / k,
                  1e3 * preprocessCpu / k);
    }
    return 0;
  }

  if (compareDct > 0) {
    ImageFolderOptions rawOptions = o;
    rawOptions.preprocessing = ImagePreprocessing::raw;
    ImageFolderSource scaled, full;
    rawOptions.dctScaling = true;
    if (Status s = openImageFolder(rawOptions, scaled); !s)
      return fail(s);
    rawOptions.dctScaling = false;
    if (Status s = openImageFolder(rawOptions, full); !s)
      return fail(s);
    int64_t k = std::min(compareDct, src.size());
    std::vector<std::vector<float>> a, b;
    if (Status s = decodeFirst(scaled, k, a); !s)
      return fail(s);
    if (Status s = decodeFirst(full, k, b); !s)
      return fail(s);
    double sum = 0, largest = 0;
    int64_t count = 0;
    for (int64_t i = 0; i < k; ++i)
      for (size_t j = 0; j < a[i].size(); ++j) {
        double d = std::fabs(double(a[i][j]) - double(b[i][j]));
        sum += d;
        largest = std::max(largest, d);
        ++count;
      }
    std::printf("dct-vs-full: %lld images at %s: mean |difference| %.3f, "
                "largest %.1f (pixel levels, 0..255)\n",
                static_cast<long long>(k), o.shape.str().c_str(), sum / count,
                largest);
    return 0;
  }

  if (!dump.empty()) {
    std::vector<std::vector<float>> images;
    if (Status s = decodeFirst(src, n, images); !s)
      return fail(s);
    std::ofstream f(dump, std::ios::binary), paths(dump + ".paths");
    for (int64_t i = 0; i < n; ++i) {
      f.write(reinterpret_cast<const char *>(images[i].data()),
              static_cast<std::streamsize>(images[i].size() * sizeof(float)));
      paths << src.files()[i].path << "\n";
    }
    if (!f || !paths)
      return fail(Status::error(dump + ": cannot write"));
    std::printf("dump: %lld examples of %s to %s\n", static_cast<long long>(n),
                o.shape.str().c_str(), dump.c_str());
    return 0;
  }

  // The listing's first n examples, as a pipeline of graphrun's form.
  auto list = std::make_shared<ExampleList>(*src.examples());
  list->labels.resize(static_cast<size_t>(n));
  Pipeline p(list);
  p.repeat(epochs)
      .map(src.decoder(), threads, src.shape())
      .batch(batch, LabelFormat::OneHot)
      .prefetch(2);
  std::unique_ptr<BatchIterator> it;
  if (Status s = p.open(it); !s)
    return fail(s);
  // Timed from the first batch on, as the peers are (their start-up, a
  // thread pool or TF's tracing, is not the pipeline's rate).
  int64_t images = 0;
  double checksum = 0;
  bool first = true;
  double cpuStart = 0;
  for (;;) {
    Batch b;
    bool end = false;
    if (Status s = it->next(b, end); !s)
      return fail(s);
    if (end)
      break;
    checksum += b.images[0];
    if (first) {
      start = std::chrono::steady_clock::now();
      cpuStart = cpuSeconds();
    } else {
      images += b.size;
    }
    first = false;
  }
  double seconds = secondsSince(start);
  double cpu = cpuSeconds() - cpuStart;
  std::printf("ours: %lld images at %s, %d threads, batch %lld, dct scaling "
              "%s: %.3f s, %.0f images/s, %.3f cpu-ms/image (first batch "
              "excluded; checksum %.3f)\n",
              static_cast<long long>(images), o.shape.str().c_str(), threads,
              static_cast<long long>(batch), o.dctScaling ? "on" : "off",
              seconds, images / seconds, 1e3 * cpu / images, checksum);
  return 0;
}

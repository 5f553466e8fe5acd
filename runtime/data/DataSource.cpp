//===- DataSource.cpp - the data a flag names, opened ---------------------===//

#include "runtime/data/DataSource.h"

#include "runtime/data/FashionMnist.h"
#include "runtime/data/SyntheticDataset.h"

#include <algorithm>
#include <thread>
#include <utility>

namespace graph::runtime::data {

namespace {

constexpr const char *kImagesPrefix = "images:";

/// An image folder of `spec` (images:DIR), decoded to the model's input
/// `shape` as the flags say, its classes `classNames` (empty: the
/// sub-folders, sorted).
Status openImages(const DataSourceOptions &o, const std::string &spec,
                  const ExampleShape &shape,
                  const std::vector<std::string> &classNames, DataSource &out) {
  ImageFolderOptions io;
  io.path = spec.substr(std::string(kImagesPrefix).size());
  if (io.path.empty())
    return Status::error(spec + ": name the folder, images:DIR or "
                                "images:DIR/**/*.jpeg");
  io.classNames = classNames;
  io.shape = shape;
  if (o.preprocess == "unit")
    io.preprocessing = ImagePreprocessing::unitRange;
  else if (o.preprocess == "caffe")
    io.preprocessing = ImagePreprocessing::caffe;
  else if (o.preprocess == "raw")
    io.preprocessing = ImagePreprocessing::raw;
  else
    return Status::error("--preprocess " + o.preprocess +
                         ": unknown (unit, caffe or raw)");
  if (o.resize == "half-pixel")
    io.resize = ResizeConvention::halfPixel;
  else if (o.resize == "legacy")
    io.resize = ResizeConvention::legacy;
  else
    return Status::error("--resize " + o.resize +
                         ": unknown (half-pixel or legacy)");
  io.skipBadImages = o.skipBadImages;
  io.dctScaling = !o.tfDecode;
  io.fastIdct = o.tfDecode;
  if (shape.channels != 1 && shape.channels != 3)
    return Status::error(
        spec + ": the plan's input is " + shape.str() + ", " +
        std::to_string(shape.channels) +
        " channels; a JPEG decodes to 1 (grayscale) or 3 (RGB): give the "
        "model a 1- or 3-channel input");
  ImageFolderSource folder;
  if (Status s = openImageFolder(io, folder); !s) {
    std::string m = s.message();
    if (m.ends_with("skip bad images"))
      m += " (--skip-bad-images)";
    return Status::error(m);
  }
  out.spec = spec;
  out.images = std::move(folder);
  unsigned cores = std::thread::hardware_concurrency();
  out.decodeThreads = o.decodeThreads > 0
                          ? o.decodeThreads
                          : static_cast<int>(std::max(1u, cores));
  return Status::ok();
}

} // namespace

bool isImageFolder(const std::string &spec) {
  return spec.starts_with(kImagesPrefix);
}

Status openDataSource(const DataSourceOptions &o, const std::string &spec,
                      bool test, const ExampleShape &shape, int32_t classes,
                      const std::vector<std::string> &classNames,
                      DataSource &out) {
  if (isImageFolder(spec))
    return openImages(o, spec, shape, classNames, out);
  auto ds = std::make_shared<Dataset>();
  if (spec == "fashion_mnist") {
    std::string dir = o.dataDir.empty() ? kFashionMnistDefaultDir : o.dataDir;
    if (Status s = loadFashionMnist(
            dir, test ? FashionMnistSplit::Test : FashionMnistSplit::Train,
            *ds);
        !s)
      return Status::error(s.message() + " (or train on --data synthetic)");
  } else if (spec == "synthetic") {
    SyntheticDatasetOptions so;
    // Fashion-MNIST's split sizes, as long as they fit in kSyntheticBytes:
    // 60,000 examples of a 224x224x3 input would be 36 GB.
    constexpr int64_t kSyntheticBytes = int64_t(1) << 30;
    const int64_t exampleBytes =
        std::max<int64_t>(1, shape.elements()) * int64_t(sizeof(float));
    so.numExamples =
        std::max<int64_t>(1, std::min<int64_t>(test ? 10000 : 60000,
                                               kSyntheticBytes / exampleBytes));
    so.shape = shape;
    so.numClasses = classes;
    so.seed = o.seed + (test ? 1 : 0);
    if (Status s = makeSyntheticDataset(so, *ds); !s)
      return s;
    ds->name = test ? "synthetic test" : "synthetic train";
  } else {
    return Status::error(spec + ": unknown data (fashion_mnist, synthetic or "
                                "images:DIR)");
  }
  out.spec = spec;
  out.memory = std::move(ds);
  return Status::ok();
}

} // namespace graph::runtime::data

//===- DataSource.cpp - the data a flag names, opened ---------------------===//

#include "runtime/data/DataSource.h"

#include "runtime/data/FashionMnist.h"
#include "runtime/data/SyntheticDataset.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
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
  else if (o.preprocess == "tf")
    io.preprocessing = ImagePreprocessing::tf;
  else if (o.preprocess == "torch")
    io.preprocessing = ImagePreprocessing::torch;
  else if (o.preprocess == "raw")
    io.preprocessing = ImagePreprocessing::raw;
  else
    return Status::error("--preprocess " + o.preprocess +
                         ": unknown (unit, caffe, tf, torch or raw)");
  if (o.resize == "half-pixel")
    io.resize = ResizeConvention::halfPixel;
  else if (o.resize == "legacy")
    io.resize = ResizeConvention::legacy;
  else
    return Status::error("--resize " + o.resize +
                         ": unknown (half-pixel or legacy)");
  io.skipBadImages = o.skipBadImages;
  // image_dataset_from_directory's pixels (tf.io.decode_jpeg's IDCT, in
  // full) unless asked for speed; a file --fast-decode cannot scale still
  // gets TF's pixels.
  io.dctScaling = o.fastDecode;
  io.fastIdct = true;
  if (!shape.isImage())
    return Status::error(spec + ": the plan's input is " + shape.str() +
                         "; an image folder feeds an image input (height, "
                         "width, channels): use --data arrays:FILE.npz for "
                         "other inputs");
  if (shape.channels() != 1 && shape.channels() != 3)
    return Status::error(
        spec + ": the plan's input is " + shape.str() + ", " +
        std::to_string(shape.channels()) +
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

void DataSource::decode(Pipeline &p) const {
  if (mapped) {
    p.map(mapped->loader(), decodeThreads, mapped->shape);
    return;
  }
  if (!images)
    return;
  MapFn decoder = images->decoder();
  bool skipping = images->options().skipBadImages;
  p.map(
      [decoder, skipping](Example &e) -> Status {
        Status s = decoder(e);
        if (!s && !skipping)
          return Status::error(s.message() +
                               " (or pass --skip-bad-images to skip and "
                               "count the files that cannot be decoded)");
        return s;
      },
      decodeThreads, images->shape());
}

namespace {

/// Examples [first, first + count) of `ds`, a Dataset of their own.
std::shared_ptr<Dataset> sliceOf(const Dataset &ds, int64_t first,
                                 int64_t count, const std::string &name) {
  auto out = std::make_shared<Dataset>();
  out->name = name;
  out->shape = ds.shape;
  out->numClasses = ds.numClasses;
  out->ignoredLabel = ds.ignoredLabel;
  const int64_t e = ds.shape.elements();
  out->images.assign(ds.images.begin() + first * e,
                     ds.images.begin() + (first + count) * e);
  out->labels.assign(ds.labels.begin() + first,
                     ds.labels.begin() + first + count);
  if (!ds.targets.empty())
    out->targets.assign(ds.targets.begin() + first * ds.numClasses,
                        ds.targets.begin() + (first + count) * ds.numClasses);
  return out;
}

/// Examples [first, first + count) of `list`.
std::shared_ptr<ExampleList> sliceOf(const ExampleList &list, int64_t first,
                                     int64_t count, const std::string &name) {
  auto out = std::make_shared<ExampleList>();
  out->name = name;
  out->numClasses = list.numClasses;
  out->ignoredLabel = list.ignoredLabel;
  out->labels.assign(list.labels.begin() + first,
                     list.labels.begin() + first + count);
  if (!list.targets.empty())
    out->targets.assign(list.targets.begin() + first * list.numClasses,
                        list.targets.begin() +
                            (first + count) * list.numClasses);
  return out;
}

} // namespace

Status splitValidation(DataSource &train, double fraction,
                       DataSource &validation) {
  char text[32]; // As given: 0.999999999 is not rounded to 1.
  std::snprintf(text, sizeof text, "%.15g", fraction);
  if (!(fraction > 0 && fraction < 1))
    return Status::invalidInput(
        std::string("--validation-split ") + text +
        ": the fraction held out must lie strictly between 0 and 1");
  if (!isArraysSpec(train.spec) || train.images)
    return Status::invalidInput(
        "--validation-split takes its examples from arrays, as Keras' "
        "validation_split does; " +
        train.spec + " is not arrays: give --validation-data");
  const int64_t n = train.size();
  // keras/src/trainers/data_adapters/array_slicing.py,
  // train_validation_split: split_at = floor(N * (1 - validation_split)).
  const int64_t splitAt =
      static_cast<int64_t>(std::floor(static_cast<double>(n) * (1 - fraction)));
  if (splitAt <= 0 || splitAt >= n)
    return Status::invalidInput(
        std::string("--validation-split ") + text + " of " + std::to_string(n) +
        " examples leaves " + (splitAt <= 0 ? "no training" : "no validation") +
        " example");
  const std::string name = train.name();
  validation = DataSource();
  validation.spec = train.spec;
  validation.decodeThreads = train.decodeThreads;
  std::string trainName = name + " [0, " + std::to_string(splitAt) + ")";
  std::string valName =
      name + " [" + std::to_string(splitAt) + ", " + std::to_string(n) + ")";
  if (train.memory) {
    validation.memory = sliceOf(*train.memory, splitAt, n - splitAt, valName);
    train.memory = sliceOf(*train.memory, 0, splitAt, trainName);
  } else {
    MappedExamples v = *train.mapped;
    v.list = sliceOf(*train.mapped->list, splitAt, n - splitAt, valName);
    v.firstRow = train.mapped->firstRow + splitAt;
    validation.mapped = std::move(v);
    train.mapped->list = sliceOf(*train.mapped->list, 0, splitAt, trainName);
  }
  // The weights split with their examples.
  if (train.weights) {
    const std::vector<float> &w = *train.weights;
    validation.weights =
        std::make_shared<std::vector<float>>(w.begin() + splitAt, w.end());
    train.weights =
        std::make_shared<std::vector<float>>(w.begin(), w.begin() + splitAt);
  }
  return Status::ok();
}

bool isImageFolder(const std::string &spec) {
  return spec.starts_with(kImagesPrefix);
}

Status openDataSource(const DataSourceOptions &o, const std::string &spec,
                      bool test, const ExampleShape &shape, int32_t classes,
                      const std::vector<std::string> &classNames,
                      DataSource &out) {
  if (o.arrays.targetShape.rank() > 0 && !isArraysSpec(spec))
    return Status::invalidInput(
        spec + ": holds class labels; the model's loss compares its output (" +
        o.arrays.targetShape.str() +
        " an example) with targets of that shape: give them as arrays, "
        "--data arrays:FILE.npz (x and y) or csv:FILE");
  if (isImageFolder(spec))
    return openImages(o, spec, shape, classNames, out);
  if (isArraysSpec(spec)) {
    ArraysOptions ao = o.arrays;
    ao.shape = shape;
    out = DataSource();
    if (Status s = openArrays(spec, ao, out.memory, out.mapped, out.weights);
        !s)
      return s;
    out.spec = spec;
    // One map thread unless asked: converting a row costs less than
    // handing an example between threads (measured 8x faster with one,
    // bench/arrays-input.sh).
    out.decodeThreads = o.decodeThreads > 0 ? o.decodeThreads : 1;
    return Status::ok();
  }
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
    return Status::error(spec + ": unknown data (fashion_mnist, synthetic, "
                                "images:DIR, arrays:FILE.npz, "
                                "arrays:X.npy,Y.npy or csv:FILE)");
  }
  out.spec = spec;
  out.memory = std::move(ds);
  return Status::ok();
}

} // namespace graph::runtime::data

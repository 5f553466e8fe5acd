//===- ImageFolder.h - JPEG folders, one sub-folder a class -----*- C++ -*-===//
//
// The layout of Keras' image_dataset_from_directory and of most published
// image sets (OCT2017/train/{CNV,DME,DRUSEN,NORMAL}/*.jpeg): every immediate
// sub-folder of DIR is a class, its JPEGs (at any depth) the class's
// examples. openImageFolder lists the files and checks what a listing can
// see; nothing is decoded until the pipeline asks for an example:
//
//   ImageFolderOptions o;
//   o.path = "OCT2017/train/**/*.jpeg";
//   o.shape = {224, 224, 3};              // the model's input
//   o.preprocessing = ImagePreprocessing::caffe;
//   ImageFolderSource folder;
//   if (Status s = openImageFolder(o, folder); !s) ...
//   print(folder.summary());              // classes and counts, once
//   Pipeline p(folder.examples());        // labels only, 4 bytes an example
//   p.shard(workers, worker)
//    .shuffle(folder.size(), seed)        // a buffer of labels, not pixels
//    .repeat(epochs)
//    .map(folder.decoder(), 2, folder.shape())  // decodes on 2 threads
//    .batch(32, LabelFormat::OneHot)
//    .prefetch(2);                        // ... ahead of the step
//   ... train ...
//   print(folder.skippedImages());        // with skipBadImages, at the end
//
// To decode each image once and replay it (data that fit in memory), put
// cache() right after the decoder: map(...).cache().shuffle(...).repeat(...).
// decodedBytes() says what that cache would hold; compare it with the host's
// memory before asking for it.
//
// Listing. Classes are the sub-folders' names in byte order (labels 0, 1,
// ...), or the explicit classNames in their order: then a sub-folder not in
// the list, and a listed class without a folder, are errors, never silently
// dropped or empty. Images are the files ending .jpg, .jpeg, .JPG or .JPEG;
// every other file (.DS_Store, Thumbs.db, notes) is ignored and counted.
// Hidden files and folders (a leading '.') are not looked at, as a shell's
// glob skips them; linked folders are followed. Files are ordered by class,
// then by path in byte order, so a listing, and with it a seed's shuffle, is
// the same on every machine. A class folder without images, and an image
// outside any class folder, are errors naming them.
//
// Decoding. libjpeg-turbo's TurboJPEG decodes to RGB or grayscale as
// shape.channels asks; then a bilinear resize to shape's height and width
// with TF's conventions (BilinearResize.h), then the preprocessing. A
// grayscale file for an RGB input is resized as one channel and then
// copied to three (the same floats, a third of the resize).
//
// With dctScaling false and fastIdct (TF's default IDCT), the pixels are
// tf.io.decode_jpeg's resized by tf.image.resize, to float rounding: what
// keras.utils.image_dataset_from_directory gives a model. graphrun decodes
// so by default. With dctScaling (graphrun --fast-decode), a file at least
// twice the target in both dimensions is decoded at 1/2, 1/4 or 1/8 scale
// by libjpeg's DCT scaling first (the smallest scale still at least the
// target): a 512x496 OCT scan for a 224x224 input is decoded at 256x248.
// That saves the inverse DCT's and the upsampling's work, not the entropy
// decoding, which dominates a noisy file: measured here
// (bench/image-decode --fast-idct --stage-times), 1.06 instead of 1.17
// CPU-ms to decode a generated 512x496 speckle scan (quality 90), 0.43
// instead of 0.55 a smooth colour photo of that size. The pixels then differ
// from TF's: a scaled inverse DCT averages each 2x2 (4x4, 8x8) where a full
// decode resized without antialiasing samples one pixel, so the result is
// smoother (README.md, --fast-decode, has the difference measured). A
// file too small to scale is decoded as without dctScaling.
//
// Bad files. Listing opens every image and reads its first bytes: an empty
// file, one that cannot be opened, and one that is not a JPEG (a PNG named
// .jpeg) are found there, before the first step. A corrupt or truncated
// JPEG is found by the decoder, on the step that reads it. By default
// either is an error naming the file (listing reports every bad file it
// found, the decoder the first). With skipBadImages, the files listing finds
// bad are left out of the listing, and a file the decoder finds bad is
// replaced, wherever it would appear, by the next good file of its class
// (in listing order, wrapping around): the batch stays full and its label
// right, at the cost of that file appearing twice in the epoch. Decoding
// every file at listing would have found them all up front, but costs a
// full epoch of decoding before the first step (OCT2017: 84,000 files); a
// header check (tjDecompressHeader3) would find little more than the first
// bytes do, since a truncated or corrupt file mostly has a whole header.
// skippedImages() has every file skipped so far, each with its reason,
// once.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_DATA_IMAGEFOLDER_H
#define RUNTIME_DATA_IMAGEFOLDER_H

#include "runtime/base/Status.h"
#include "runtime/data/BilinearResize.h"
#include "runtime/data/Dataset.h"
#include "runtime/data/Pipeline.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace graph::runtime::data {

/// What the pixels become after the resize, as the model's input expects.
enum class ImagePreprocessing {
  /// x / 255 in [0, 1]: tf.image.convert_image_dtype(image, tf.float32).
  unitRange,
  /// keras.applications.vgg16.preprocess_input ("caffe" mode): RGB to BGR,
  /// then minus the ImageNet means 103.939, 116.779, 123.68 of B, G, R; no
  /// scaling. Three channels only. (ResNet50, VGG16/19.)
  caffe,
  /// Keras' imagenet_utils "tf" mode: x / 127.5 - 1, in [-1, 1].
  /// (MobileNet, MobileNetV2, InceptionV3, Xception, ResNetV2.)
  tf,
  /// Keras' imagenet_utils "torch" mode: x / 255, minus the ImageNet means
  /// 0.485, 0.456, 0.406, divided by the deviations 0.229, 0.224, 0.225,
  /// per R, G, B. Three channels only. (DenseNet.)
  torch,
  /// The pixels as they are, in [0, 255]: a model that rescales itself.
  raw,
};

struct ImageFolderOptions {
  /// A directory with one sub-folder per class, or a glob under one:
  /// DIR/**/*.jpeg (PathGlob.h: `**` any depth, `*` and `?` in a name).
  std::string path;
  /// Class names in label order; empty: DIR's sub-folders, sorted.
  std::vector<std::string> classNames;
  /// The model's input: every image is resized to height x width, decoded
  /// to channels 3 (RGB) or 1 (grayscale).
  ExampleShape shape;
  /// TF 2's tf.image.resize (half-pixel centres) or TF 1's legacy one.
  ResizeConvention resize = ResizeConvention::halfPixel;
  /// Decode at 1/2, 1/4 or 1/8 scale where the target allows (see above);
  /// false: decode in full, for TF's pixels exactly. graphrun sets it only
  /// with --fast-decode.
  bool dctScaling = true;
  /// The fast integer inverse DCT, tf.io.decode_jpeg's default, instead of
  /// the accurate one (PIL's, libjpeg's default): with dctScaling false, the
  /// pixels of a TF pipeline that decodes with dct_method="". graphrun
  /// always sets it. (A DCT-scaled decode has one inverse DCT per scale,
  /// whichever this asks.)
  bool fastIdct = false;
  ImagePreprocessing preprocessing = ImagePreprocessing::unitRange;
  /// Leave out or replace bad files, counting them, instead of failing.
  bool skipBadImages = false;
};

/// One image of the listing.
struct ImageFile {
  std::string path;
  int32_t label = 0;
};

/// A file left out of the listing or replaced in the pipeline, and why
/// (the message an error would have given).
struct SkippedImage {
  std::string path;
  std::string reason;
};

/// State shared by a source and its decoders (ImageFolder.cpp).
struct ImageFolderState;

/// A listed image folder. Copies share one listing and one record of
/// skipped images; every method is safe to call while decoders run.
class ImageFolderSource {
public:
  /// The class names, in label order.
  const std::vector<std::string> &classNames() const;
  /// Images per class, in label order (bad files left out at listing are
  /// not counted).
  const std::vector<int64_t> &classCounts() const;
  /// Images in all.
  int64_t size() const;
  /// The images in example order: example i is files()[i].
  const std::vector<ImageFile> &files() const;
  /// Files in the class folders that are not images (.DS_Store, ...).
  int64_t ignoredFiles() const;
  /// The shape of a decoded example: ImageFolderOptions::shape.
  ExampleShape shape() const;
  const ImageFolderOptions &options() const;
  /// The directory the classes are in (the path before any wildcard).
  const std::string &root() const;

  /// The pipeline's source: one label per example, no pixels.
  std::shared_ptr<const ExampleList> examples() const;
  /// The map that turns an example of examples() into its pixels: add it
  /// with Pipeline::map(decoder(), threads, shape()). Safe on any number
  /// of threads (each keeps its own TurboJPEG handle and buffers).
  MapFn decoder() const;

  /// The bytes cache() after the decoder holds for `examples` examples (the
  /// whole folder by default; pass a shard's count for a shard).
  int64_t decodedBytes(int64_t examples = -1) const;

  /// Files skipped so far (with skipBadImages): those left out at listing,
  /// then those the decoders replaced, each once.
  std::vector<SkippedImage> skippedImages() const;
  int64_t skippedCount() const;

  /// "OCT2017/train: 4 classes, 83484 images (CNV 37205, DME 11348, ...)",
  /// then ", 3 non-image files ignored" and ", 2 bad images skipped" when
  /// there are any: for graphrun to print once at the start (and, for the
  /// skipped, again at the end).
  std::string summary() const;

private:
  friend Status openImageFolder(const ImageFolderOptions &,
                                ImageFolderSource &);
  std::shared_ptr<ImageFolderState> state_;
};

/// Lists the folder `options.path` names, checks the options and every
/// image's first bytes, and fills `out`. Errors name the folder or file and
/// say what to do.
Status openImageFolder(const ImageFolderOptions &options,
                       ImageFolderSource &out);

/// Applies `mode` in place to `pixels` pixels of `channels` floats in
/// [0, 255], in float32 operations in Keras' order (imagenet_utils.py,
/// _preprocess_numpy_input), so the results are preprocess_input's
/// exactly. caffe and torch take 3 channels (openImageFolder checks it).
void preprocessImage(float *data, int64_t pixels, int64_t channels,
                     ImagePreprocessing mode);

} // namespace graph::runtime::data

#endif // RUNTIME_DATA_IMAGEFOLDER_H

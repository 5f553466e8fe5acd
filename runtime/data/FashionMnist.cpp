//===- FashionMnist.cpp - the Fashion-MNIST dataset -----------------------===//

#include "runtime/data/FashionMnist.h"

#include "runtime/data/IdxReader.h"

#include <filesystem>

namespace graph::runtime::data {
namespace {

const char *kInstallHint = "install Debian's dataset-fashion-mnist (apt-get "
                           "install dataset-fashion-mnist) or pass --data-dir "
                           "with the directory that holds the four IDX files";

/// The path of `<dir>/<file>.gz`, else of `<dir>/<file>`, else an error.
Status findIdxFile(const std::filesystem::path &dir, const std::string &file,
                   std::string &out) {
  std::error_code ec;
  for (const std::string &candidate : {file + ".gz", file}) {
    std::filesystem::path p = dir / candidate;
    if (std::filesystem::is_regular_file(p, ec)) {
      out = p.string();
      return Status::ok();
    }
    if (std::filesystem::exists(p, ec))
      return Status::error(p.string() +
                           ": not a regular file (a directory?); it should "
                           "be the IDX file itself");
  }
  return Status::error(dir.string() + ": neither " + file + ".gz nor " + file +
                       " is there; " + kInstallHint);
}

} // namespace

const std::array<const char *, kFashionMnistClasses> &fashionMnistClassNames() {
  static const std::array<const char *, kFashionMnistClasses> kNames = {
      "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
      "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return kNames;
}

Status loadFashionMnist(const std::string &directory, FashionMnistSplit split,
                        Dataset &out) {
  std::error_code ec;
  if (std::filesystem::exists(directory, ec) &&
      !std::filesystem::is_directory(directory, ec))
    return Status::error(directory +
                         ": not a directory; --data-dir names the directory "
                         "that holds the four IDX files");
  if (!std::filesystem::is_directory(directory, ec))
    return Status::error(directory +
                         ": no such directory, so no "
                         "Fashion-MNIST to load; " +
                         kInstallHint);
  std::string prefix = split == FashionMnistSplit::Train ? "train" : "t10k";
  std::string imagesPath, labelsPath;
  if (Status s =
          findIdxFile(directory, prefix + "-images-idx3-ubyte", imagesPath);
      !s)
    return s;
  if (Status s =
          findIdxFile(directory, prefix + "-labels-idx1-ubyte", labelsPath);
      !s)
    return s;
  return loadIdxDataset(imagesPath, labelsPath, kFashionMnistClasses, out);
}

} // namespace graph::runtime::data

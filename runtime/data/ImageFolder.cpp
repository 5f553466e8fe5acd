//===- ImageFolder.cpp - a folder of JPEGs, one sub-folder a class --------===//
//
// The listing walks the class folders once and keeps paths and labels; the
// decoder is a MapFn over the shared state, so every map thread decodes with
// its own TurboJPEG handle and buffers (thread_local) and nothing is held
// per example but the pipeline's own Example.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/ImageFolder.h"

#include "runtime/data/JpegDecoder.h"
#include "runtime/data/PathGlob.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <system_error>

namespace graph::runtime::data {

namespace fs = std::filesystem;

struct ImageFolderState {
  ImageFolderOptions options;
  std::string root;
  std::vector<std::string> classNames;
  std::vector<int64_t> classCounts;
  /// The index of each class's first file: a class's files are contiguous.
  std::vector<int64_t> classFirst;
  std::vector<ImageFile> files;
  int64_t ignored = 0;
  /// Links to folders walked already (a loop, a second way to a folder):
  /// not followed, and said so in the summary.
  std::vector<std::string> linksNotFollowed;
  std::shared_ptr<const ExampleList> examples;
  /// Per file: a decoder found it bad (skipBadImages), so later epochs go
  /// straight to its replacement.
  std::unique_ptr<std::atomic<bool>[]> bad;

  std::mutex mutex;
  /// Guarded by mutex: listing's skips, then the decoders' in the order
  /// they were found.
  std::vector<SkippedImage> skipped;
};

namespace {

/// Images are named so; everything else in a class folder is ignored.
bool isImageName(const std::string &name) {
  for (const char *ext : {".jpg", ".jpeg", ".JPG", ".JPEG"})
    if (name.ends_with(ext))
      return true;
  return false;
}

bool isHidden(const std::string &name) { return name.starts_with('.'); }

/// "a, b, c" of the first few names, and how many more: for a message that
/// names what is wrong without printing thousands of lines.
std::string someOf(const std::vector<std::string> &names, size_t most = 5) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < most; ++i)
    s += (i ? ", " : "") + names[i];
  if (names.size() > most)
    s += " and " + std::to_string(names.size() - most) + " more";
  return s;
}

/// What listing can see of a file: that it is a file, opens, is not empty
/// and starts like a JPEG. "" when it does.
std::string checkFileHead(const std::string &path) {
  // O_NONBLOCK: a FIFO named .jpeg must not hang the listing.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return std::string("cannot open: ") + std::strerror(errno) +
           "; check that the file exists and is readable";
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return "not a regular file (a device, FIFO or socket); remove it";
  }
  uint8_t head[16];
  ssize_t n;
  do
    n = ::read(fd, head, sizeof head);
  while (n < 0 && errno == EINTR);
  int readErrno = errno;
  ::close(fd);
  if (n < 0)
    return std::string("read error: ") + std::strerror(readErrno) +
           "; check the file and the disk";
  if (n == 0)
    return "empty file (0 bytes), not an image; the copy is incomplete: "
           "copy it again or remove it";
  if (std::string kind = describeNonJpeg(head, static_cast<size_t>(n));
      !kind.empty())
    return "named like a JPEG but holds " + kind +
           "; convert it to JPEG, or remove it";
  return "";
}

Status checkOptions(const ImageFolderOptions &o) {
  const ExampleShape &s = o.shape;
  if (!s.isImage())
    return Status::error(o.path +
                         ": images decode to an input of rank 3 "
                         "(height, width, channels); the model's "
                         "input is " +
                         s.str());
  if (s.height() <= 0 || s.width() <= 0 || s.height() > 65535 ||
      s.width() > 65535)
    return Status::error(o.path + ": images resized to " + s.str() +
                         "; give a height and a width in [1, 65535], the "
                         "model's input size");
  if (s.channels() != 1 && s.channels() != 3)
    return Status::error(o.path + ": images of " +
                         std::to_string(s.channels()) +
                         " channels asked; a JPEG decodes to 1 (grayscale) "
                         "or 3 (RGB)");
  if (o.preprocessing == ImagePreprocessing::caffe && s.channels() != 3)
    return Status::error(o.path +
                         ": VGG's caffe preprocessing (RGB to BGR, "
                         "minus the ImageNet means) takes 3 "
                         "channels, not " +
                         std::to_string(s.channels()) +
                         "; decode to RGB or use [0, 1] scaling");
  if (o.preprocessing == ImagePreprocessing::torch && s.channels() != 3)
    return Status::error(o.path +
                         ": torch preprocessing (the ImageNet mean and "
                         "deviation of R, G and B) takes 3 channels, not " +
                         std::to_string(s.channels()) +
                         "; decode to RGB or use [0, 1] or [-1, 1] scaling");
  std::set<std::string> seen;
  for (const std::string &name : o.classNames) {
    if (name.empty() || name.find('/') != std::string::npos || name == "." ||
        name == "..")
      return Status::error(o.path + ": class name '" + name +
                           "' cannot be a folder's name; give each class "
                           "its folder's name");
    if (!seen.insert(name).second)
      return Status::error(o.path + ": class '" + name +
                           "' is listed twice; list each class once");
  }
  return Status::ok();
}

/// Whether a sub-folder of the root is a class folder under the pattern:
/// any, for a directory or a glob starting with `**`; else those whose name
/// the glob's first component matches, when files lie below it.
bool isClassFolder(const PathGlob &glob, const std::string &name) {
  if (isHidden(name))
    return false;
  if (!glob.isGlob())
    return true;
  if (glob.pattern.size() < 2)
    return false;
  return glob.pattern[0] == "**" || matchesComponent(glob.pattern[0], name);
}

/// The image files of one class folder (any depth), sorted; counts the
/// other files in `ignored`. Folders linked in are followed, each real
/// folder once (`walked`: PathGlob.h); the links to folders walked already
/// go to `notFollowed`.
Status listClass(const PathGlob &glob, const std::string &className,
                 WalkedFolders &walked, std::vector<std::string> &images,
                 int64_t &ignored, std::vector<std::string> &notFollowed) {
  std::string dir = (fs::path(glob.root) / className).string();
  FolderWalk walk;
  walk.skip = isHidden;
  walk.file = [&](const std::string &path,
                  const std::vector<std::string> &under) {
    std::vector<std::string> relative = {className};
    relative.insert(relative.end(), under.begin(), under.end());
    if (glob.isGlob() && !glob.matches(relative))
      return;
    if (!isImageName(under.back())) {
      ++ignored;
      return;
    }
    images.push_back(path);
  };
  if (Status s = walkFolder(dir, walked, walk, notFollowed); !s)
    return Status::error(s.message());
  std::sort(images.begin(), images.end());
  return Status::ok();
}

// The decoder's scratch, one per thread: TurboJPEG handles are not
// thread-safe, and reusing buffers saves two allocations an image.
struct DecodeScratch {
  JpegDecoder jpeg;
  std::vector<uint8_t> bytes;
  DecodedImage image;
  std::vector<float> grey; // a grey file's resize, before it becomes RGB

  /// A giant image's buffers are not kept for the thread's life.
  void trim() {
    constexpr size_t kKeep = size_t(64) << 20;
    if (bytes.capacity() > kKeep)
      std::vector<uint8_t>().swap(bytes);
    if (image.pixels.capacity() > kKeep)
      PixelBuffer().swap(image.pixels);
    if (grey.capacity() * sizeof(float) > kKeep)
      std::vector<float>().swap(grey);
  }
};

/// Decodes, resizes and preprocesses file `index` into `out`.
Status decodeFile(const ImageFolderState &st, int64_t index,
                  std::vector<float> &out) {
  thread_local DecodeScratch scratch;
  const ImageFolderOptions &o = st.options;
  const std::string &path = st.files[index].path;
  Status s = readImageFile(path, scratch.bytes);
  if (s) {
    int64_t minWidth = o.dctScaling ? o.shape.width() : 0;
    int64_t minHeight = o.dctScaling ? o.shape.height() : 0;
    // RGB asked of a grayscale file (an OCT scan, an X-ray): decoded and
    // resized as one channel, then copied to three, which is what libjpeg's
    // grey-to-RGB conversion and a 3-channel resize would give, at a third
    // of the resize's cost.
    s = scratch.jpeg.decode(path, scratch.bytes.data(), scratch.bytes.size(),
                            o.shape.channels() == 3 ? 0 : 1, minWidth,
                            minHeight, scratch.image, o.fastIdct);
  }
  if (s) {
    out.resize(static_cast<size_t>(o.shape.elements()));
    const DecodedImage &im = scratch.image;
    const int64_t pixels = o.shape.height() * o.shape.width();
    if (im.channels == o.shape.channels()) {
      resizeBilinear(im.pixels.data(), im.height, im.width, im.channels,
                     out.data(), o.shape.height(), o.shape.width(), o.resize);
    } else {
      scratch.grey.resize(static_cast<size_t>(pixels));
      resizeBilinear(im.pixels.data(), im.height, im.width, 1,
                     scratch.grey.data(), o.shape.height(), o.shape.width(),
                     o.resize);
      float *rgb = out.data();
      for (int64_t p = 0; p < pixels; ++p)
        rgb[3 * p] = rgb[3 * p + 1] = rgb[3 * p + 2] = scratch.grey[p];
    }
    preprocessImage(out.data(), pixels, o.shape.channels(), o.preprocessing);
  }
  scratch.trim();
  return s;
}

void recordSkip(ImageFolderState &st, int64_t index, const Status &why) {
  if (st.bad[index].exchange(true))
    return; // another thread, or an earlier epoch, has it
  std::lock_guard<std::mutex> lock(st.mutex);
  st.skipped.push_back({st.files[index].path, why.message()});
}

Status decodeExample(ImageFolderState &st, Example &example) {
  const int64_t n = static_cast<int64_t>(st.files.size());
  if (example.index < 0 || example.index >= n)
    return Status::error(st.root + ": example " +
                         std::to_string(example.index) + " is not one of " +
                         "the folder's " + std::to_string(n) +
                         " images; give the decoder the examples of its own "
                         "folder's examples()");
  const int64_t i = example.index;
  if (!st.options.skipBadImages)
    return decodeFile(st, i, example.image);
  // The file, or the next good one of its class: the label stays right.
  const int32_t label = st.files[i].label;
  const int64_t first = st.classFirst[label];
  const int64_t count = st.classCounts[label];
  for (int64_t k = 0; k < count; ++k) {
    int64_t j = first + (i - first + k) % count;
    if (st.bad[j].load())
      continue;
    Status s = decodeFile(st, j, example.image);
    if (s)
      return s;
    recordSkip(st, j, s);
  }
  return Status::error(st.root + ": every image of class '" +
                       st.classNames[label] + "' (" + std::to_string(count) +
                       ") is bad, so none can stand in for another; the "
                       "messages of skippedImages() say why");
}

} // namespace

void preprocessImage(float *data, int64_t pixels, int64_t channels,
                     ImagePreprocessing mode) {
  switch (mode) {
  case ImagePreprocessing::raw:
    return;
  case ImagePreprocessing::unitRange:
    for (int64_t i = 0, n = pixels * channels; i < n; ++i)
      data[i] /= 255.0f;
    return;
  case ImagePreprocessing::caffe:
    // Keras: x = x[..., ::-1]; x[..., c] -= mean[c], with the means of B,
    // G, R in that order.
    for (int64_t p = 0; p < pixels; ++p) {
      float *px = data + p * 3;
      float r = px[0], g = px[1], b = px[2];
      px[0] = b - 103.939f;
      px[1] = g - 116.779f;
      px[2] = r - 123.68f;
    }
    return;
  case ImagePreprocessing::tf:
    // Keras: x /= 127.5; x -= 1.0 (a division, not a multiplication by
    // 1 / 127.5, whose rounding differs).
    for (int64_t i = 0, n = pixels * channels; i < n; ++i)
      data[i] = data[i] / 127.5f - 1.0f;
    return;
  case ImagePreprocessing::torch: {
    // Keras: x /= 255.0; x[..., c] -= mean[c]; x[..., c] /= std[c], the
    // constants rounded to float32 as NumPy does a Python float against a
    // float32 array.
    const float mean[3] = {0.485f, 0.456f, 0.406f};
    const float deviation[3] = {0.229f, 0.224f, 0.225f};
    for (int64_t p = 0; p < pixels; ++p) {
      float *px = data + p * 3;
      for (int c = 0; c < 3; ++c)
        px[c] = (px[c] / 255.0f - mean[c]) / deviation[c];
    }
    return;
  }
  }
}

Status openImageFolder(const ImageFolderOptions &options,
                       ImageFolderSource &out) {
  if (Status s = checkOptions(options); !s)
    return s;
  PathGlob glob;
  if (Status s = parsePathGlob(options.path, glob); !s)
    return s;
  auto st = std::make_shared<ImageFolderState>();
  st->options = options;
  st->root = glob.root;
  const std::string &root = glob.root;

  std::error_code ec;
  fs::file_status rootStatus = fs::status(root, ec);
  if (!fs::exists(rootStatus))
    return Status::error(root + ": no such directory; check the image "
                                "folder's path");
  if (!fs::is_directory(rootStatus))
    return Status::error(root + ": not a directory; name the folder that "
                                "holds one sub-folder per class");

  // The root's entries: class folders, and files that belong to no class.
  std::vector<std::string> folders, stray;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::error_code typeEc;
    if (it->is_directory(typeEc)) {
      if (isClassFolder(glob, name))
        folders.push_back(name);
    } else if (!isHidden(name) && (!glob.isGlob() || glob.matches({name}))) {
      if (isImageName(name))
        stray.push_back(it->path().string());
      else
        ++st->ignored;
    }
  }
  if (ec)
    return Status::error(root + ": cannot list the folder: " + ec.message() +
                         "; check its permissions");
  std::sort(folders.begin(), folders.end());
  std::sort(stray.begin(), stray.end());
  if (!stray.empty())
    return Status::error(root + ": " + std::to_string(stray.size()) +
                         " image(s) outside any class folder (" +
                         someOf(stray) +
                         "); an image's folder is its class: move them into "
                         "their class's folder, or remove them");

  if (options.classNames.empty()) {
    if (folders.empty())
      return Status::error(root + ": no class folders" +
                           (glob.isGlob()
                                ? " the glob " + options.path + " can reach"
                                : std::string()) +
                           "; an image folder holds one sub-folder of "
                           "images per class");
    st->classNames = folders;
  } else {
    std::set<std::string> listed(options.classNames.begin(),
                                 options.classNames.end());
    std::set<std::string> present(folders.begin(), folders.end());
    std::vector<std::string> unknown, missing;
    for (const std::string &f : folders)
      if (!listed.count(f))
        unknown.push_back(f);
    for (const std::string &c : options.classNames)
      if (!present.count(c))
        missing.push_back(c);
    if (!unknown.empty())
      return Status::error(
          root + ": folder(s) " + someOf(unknown) + " are not among the " +
          std::to_string(options.classNames.size()) + " classes given (" +
          someOf(options.classNames, 20) +
          "); name them in the class list, or move them out of " + root);
    if (!missing.empty())
      return Status::error(root + ": class(es) " + someOf(missing) +
                           " have no folder here; every class listed needs "
                           "a sub-folder of that name, holding its images");
    st->classNames = options.classNames;
  }

  // Each class's images, then what listing can see of each file. Every
  // real folder is walked once, the root and the class folders first: a
  // link back to them from inside a class would list the same images again
  // (under another label), and so would a class folder that is another's
  // under a second name.
  WalkedFolders walked;
  bool isNew = false;
  if (Status s = walked.firstVisit(root, isNew); !s)
    return s;
  for (size_t c = 0; c < st->classNames.size(); ++c) {
    const std::string &name = st->classNames[c];
    std::string dir = (fs::path(root) / name).string();
    if (Status s = walked.firstVisit(dir, isNew); !s)
      return s;
    if (isNew)
      continue;
    std::error_code realEc;
    fs::path real = fs::canonical(dir, realEc);
    std::string other;
    for (size_t k = 0; k < c && other.empty(); ++k) {
      std::error_code kEc;
      if (!realEc &&
          fs::canonical(fs::path(root) / st->classNames[k], kEc) == real)
        other = st->classNames[k];
    }
    return Status::error(
        dir + ": class folder '" + name + "' is " +
        (other.empty()
             ? std::string("the image folder itself (through a "
                           "link)")
             : "the same folder as class '" + other + "' (through a link)") +
        ": its images would be listed twice, under two labels; make it a "
        "folder of its own, or remove the link");
  }
  std::vector<std::string> bad;
  for (size_t c = 0; c < st->classNames.size(); ++c) {
    const std::string &name = st->classNames[c];
    std::vector<std::string> images;
    if (Status s = listClass(glob, name, walked, images, st->ignored,
                             st->linksNotFollowed);
        !s)
      return s;
    int64_t first = static_cast<int64_t>(st->files.size());
    int64_t badHere = 0;
    for (std::string &path : images) {
      if (std::string fault = checkFileHead(path); !fault.empty()) {
        bad.push_back(path + " (" + fault + ")");
        st->skipped.push_back({path, path + ": " + fault});
        ++badHere;
        continue;
      }
      st->files.push_back({std::move(path), static_cast<int32_t>(c)});
    }
    int64_t count = static_cast<int64_t>(st->files.size()) - first;
    if (count == 0 && badHere == 0)
      return Status::error(
          (fs::path(root) / name).string() + ": class folder '" + name +
          "' holds no images (.jpg, .jpeg, .JPG, .JPEG" +
          (glob.isGlob() ? " matching " + options.path : std::string()) +
          "); add its images, or remove the folder");
    if (count == 0 && options.skipBadImages)
      return Status::error((fs::path(root) / name).string() +
                           ": every image of class '" + name + "' (" +
                           std::to_string(badHere) + ") is bad, the first: " +
                           st->skipped[st->skipped.size() - badHere].reason);
    st->classFirst.push_back(first);
    st->classCounts.push_back(count);
  }
  if (!bad.empty() && !options.skipBadImages)
    return Status::error(
        root + ": " + std::to_string(bad.size()) +
        " image file(s) cannot be read as JPEG: " + someOf(bad) +
        "; replace or remove them, or skip bad images");

  auto examples = std::make_shared<ExampleList>();
  examples->name = root;
  examples->numClasses = static_cast<int32_t>(st->classNames.size());
  examples->labels.reserve(st->files.size());
  for (const ImageFile &f : st->files)
    examples->labels.push_back(f.label);
  st->examples = std::move(examples);
  st->bad = std::make_unique<std::atomic<bool>[]>(st->files.size());
  out.state_ = std::move(st);
  return Status::ok();
}

const std::vector<std::string> &ImageFolderSource::classNames() const {
  return state_->classNames;
}
const std::vector<int64_t> &ImageFolderSource::classCounts() const {
  return state_->classCounts;
}
int64_t ImageFolderSource::size() const {
  return static_cast<int64_t>(state_->files.size());
}
const std::vector<ImageFile> &ImageFolderSource::files() const {
  return state_->files;
}
int64_t ImageFolderSource::ignoredFiles() const { return state_->ignored; }
ExampleShape ImageFolderSource::shape() const { return state_->options.shape; }
const ImageFolderOptions &ImageFolderSource::options() const {
  return state_->options;
}
const std::string &ImageFolderSource::root() const { return state_->root; }

std::shared_ptr<const ExampleList> ImageFolderSource::examples() const {
  return state_->examples;
}

MapFn ImageFolderSource::decoder() const {
  std::shared_ptr<ImageFolderState> st = state_;
  return [st](Example &example) { return decodeExample(*st, example); };
}

int64_t ImageFolderSource::decodedBytes(int64_t examples) const {
  if (examples < 0)
    examples = size();
  // cache() keeps whole Examples: the pixels and the struct around them.
  int64_t perExample =
      shape().elements() * static_cast<int64_t>(sizeof(float)) +
      static_cast<int64_t>(sizeof(Example));
  return examples * perExample;
}

std::vector<SkippedImage> ImageFolderSource::skippedImages() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->skipped;
}

int64_t ImageFolderSource::skippedCount() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return static_cast<int64_t>(state_->skipped.size());
}

std::string ImageFolderSource::summary() const {
  const ImageFolderState &st = *state_;
  std::string s = st.root + ": " + std::to_string(st.classNames.size()) +
                  (st.classNames.size() == 1 ? " class, " : " classes, ") +
                  std::to_string(st.files.size()) + " images (";
  for (size_t c = 0; c < st.classNames.size(); ++c)
    s += (c ? ", " : "") + st.classNames[c] + " " +
         std::to_string(st.classCounts[c]);
  s += ")";
  if (st.ignored > 0)
    s += ", " + std::to_string(st.ignored) +
         (st.ignored == 1 ? " non-image file" : " non-image files") +
         " ignored";
  if (int64_t skipped = skippedCount(); skipped > 0)
    s += ", " + std::to_string(skipped) +
         (skipped == 1 ? " bad image" : " bad images") + " skipped";
  if (size_t links = st.linksNotFollowed.size(); links > 0) {
    std::vector<std::string> under;
    for (const std::string &path : st.linksNotFollowed)
      under.push_back(fs::path(path).lexically_relative(st.root).string());
    s += ", " + std::to_string(links) +
         (links == 1 ? " folder link" : " folder links") +
         " not followed (each folder is listed once; a loop, or a folder "
         "reached twice: " +
         someOf(under) + ")";
  }
  return s;
}

} // namespace graph::runtime::data

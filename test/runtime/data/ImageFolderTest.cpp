//===- ImageFolderTest.cpp - listing, bad files, the pipeline over JPEGs --===//
//
// Folders the tests build in a temporary directory: flat JPEGs whose grey
// level names the file (so a decoded example says which file it came from),
// and bad files of every kind, made from the committed photo fixture.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/ImageFolder.h"
#include "runtime/data/PathGlob.h"
#include "runtime/data/Pipeline.h"

#include "IdxFileWriter.h"
#include "ImageFiles.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <set>
#include <thread>

namespace graph::runtime::data::test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

/// The grey level of the k-th flat image a test writes.
uint8_t levelOf(int k) { return static_cast<uint8_t>(20 + 10 * k); }

/// Which flat image an example's pixels come from (raw preprocessing).
int fileOf(const float *pixels, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += pixels[i];
  return static_cast<int>(std::lround((sum / n - 20) / 10));
}

/// A JPEG whose scan stops at 60% of the file.
std::vector<uint8_t> truncatedJpeg() {
  std::vector<uint8_t> b = readBytes(imageFixture("photo.jpeg"));
  b.resize(b.size() * 6 / 10);
  return b;
}

/// A JPEG with 64 bytes of its scan overwritten.
std::vector<uint8_t> corruptJpeg() {
  std::vector<uint8_t> b = readBytes(imageFixture("photo.jpeg"));
  std::fill(b.begin() + b.size() / 2, b.begin() + b.size() / 2 + 64, 0xFF);
  return b;
}

class ImageFolderTest : public TempDirTest {
protected:
  /// Writes the k-th flat image at `relative`.
  void image(const std::string &relative, int k) {
    writeBytes(path(relative), flatJpeg(levelOf(k)));
  }
  void file(const std::string &relative, const std::vector<uint8_t> &bytes) {
    writeBytes(path(relative), bytes);
  }
  /// Classes a (4 images), b (3), c (3): file k of the listing is level k.
  void threeClasses() {
    int k = 0;
    for (auto [name, count] : {std::pair{"a", 4}, {"b", 3}, {"c", 3}})
      for (int i = 0; i < count; ++i)
        image(std::string(name) + "/img" + std::to_string(i) + ".jpeg", k++);
  }
  /// The flat images' own size, decoded as they are.
  ImageFolderOptions options() const {
    ImageFolderOptions o;
    o.path = dir_.string();
    o.shape = {12, 16, 3};
    o.preprocessing = ImagePreprocessing::raw;
    return o;
  }
  ImageFolderSource open(const ImageFolderOptions &o) {
    ImageFolderSource src;
    Status s = openImageFolder(o, src);
    EXPECT_TRUE(s) << s.message();
    return src;
  }
  Status openError(const ImageFolderOptions &o) {
    ImageFolderSource src;
    Status s = openImageFolder(o, src);
    EXPECT_FALSE(s) << "opened";
    return s;
  }
  std::vector<std::string> relativePaths(const ImageFolderSource &src) const {
    std::vector<std::string> out;
    for (const ImageFile &f : src.files())
      out.push_back(fs::path(f.path).lexically_relative(dir_).string());
    return out;
  }
};

/// Every batch, failing the test on an error.
std::vector<Batch> collect(const Pipeline &p) {
  std::vector<Batch> batches;
  std::unique_ptr<BatchIterator> it;
  Status s = p.open(it);
  EXPECT_TRUE(s) << s.message();
  if (!s)
    return batches;
  for (;;) {
    Batch b;
    bool end = false;
    s = it->next(b, end);
    EXPECT_TRUE(s) << s.message();
    if (!s || end)
      return batches;
    batches.push_back(std::move(b));
  }
}

/// Which file each row of each batch came from, by its pixels.
std::vector<int> filesOfRows(const std::vector<Batch> &batches) {
  std::vector<int> out;
  for (const Batch &b : batches) {
    int64_t n = b.shape.elements();
    for (int64_t r = 0; r < b.size; ++r)
      out.push_back(fileOf(b.images.data() + r * n, n));
  }
  return out;
}

std::vector<int> sortedCopy(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<int> iotaInts(int n) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i)
    v[i] = i;
  return v;
}

//===-- listing -----------------------------------------------------------===//

TEST_F(ImageFolderTest, ClassesAreTheSubFoldersInByteOrder) {
  image("b/x.jpeg", 0);
  image("a/x.jpeg", 1);
  image("C/x.jpeg", 2);
  ImageFolderSource src = open(options());
  // 'C' (0x43) sorts before 'a' (0x61): byte order, not a locale's.
  EXPECT_THAT(src.classNames(), ElementsAre("C", "a", "b"));
  EXPECT_THAT(src.classCounts(), ElementsAre(1, 1, 1));
  EXPECT_EQ(src.size(), 3);
  EXPECT_THAT(src.examples()->labels, ElementsAre(0, 1, 2));
  EXPECT_EQ(src.examples()->numClasses, 3);
}

TEST_F(ImageFolderTest, FilesAreOrderedByClassThenPathBytes) {
  image("b/1.jpeg", 0);
  image("a/9.jpeg", 0);
  image("a/10.jpeg", 0);
  image("a/sub/deeper/0.jpeg", 0);
  image("a/B.jpg", 0);
  ImageFolderSource src = open(options());
  EXPECT_THAT(relativePaths(src),
              ElementsAre("a/10.jpeg", "a/9.jpeg", "a/B.jpg",
                          "a/sub/deeper/0.jpeg", "b/1.jpeg"));
  EXPECT_THAT(src.classCounts(), ElementsAre(4, 1));
  for (const ImageFile &f : src.files())
    EXPECT_EQ(f.label, f.path.find("/b/") == std::string::npos ? 0 : 1);
}

TEST_F(ImageFolderTest, AnExplicitClassListGivesTheLabels) {
  image("NORMAL/x.jpeg", 0);
  image("CNV/x.jpeg", 1);
  ImageFolderOptions o = options();
  o.classNames = {"NORMAL", "CNV"};
  ImageFolderSource src = open(o);
  EXPECT_THAT(src.classNames(), ElementsAre("NORMAL", "CNV"));
  EXPECT_THAT(relativePaths(src), ElementsAre("NORMAL/x.jpeg", "CNV/x.jpeg"));
  EXPECT_THAT(src.examples()->labels, ElementsAre(0, 1));
}

TEST_F(ImageFolderTest, AFolderNotInTheClassListIsAnError) {
  image("CNV/x.jpeg", 0);
  image("DME/x.jpeg", 0);
  image("extra/x.jpeg", 0);
  ImageFolderOptions o = options();
  o.classNames = {"CNV", "DME"};
  Status s = openError(o);
  EXPECT_THAT(s.message(), HasSubstr("folder(s) extra are not among the 2 "
                                     "classes given (CNV, DME)"));
}

TEST_F(ImageFolderTest, AListedClassWithoutAFolderIsAnError) {
  image("CNV/x.jpeg", 0);
  ImageFolderOptions o = options();
  o.classNames = {"CNV", "DRUSEN"};
  EXPECT_THAT(openError(o).message(),
              HasSubstr("class(es) DRUSEN have no folder here"));
}

TEST_F(ImageFolderTest, AClassListNamingAClassTwiceIsAnError) {
  image("CNV/x.jpeg", 0);
  ImageFolderOptions o = options();
  o.classNames = {"CNV", "CNV"};
  EXPECT_THAT(openError(o).message(), HasSubstr("'CNV' is listed twice"));
}

TEST_F(ImageFolderTest, AnEmptyClassFolderIsAnError) {
  image("a/x.jpeg", 0);
  file("b/.DS_Store", {1, 2, 3});
  file("b/notes.txt", {'h', 'i'});
  Status s = openError(options());
  EXPECT_THAT(s.message(), HasSubstr(path("b") + ": class folder 'b' holds no "
                                                 "images"));
}

TEST_F(ImageFolderTest, NoClassFoldersIsAnError) {
  EXPECT_THAT(openError(options()).message(), HasSubstr("no class folders"));
}

TEST_F(ImageFolderTest, AMissingDirectoryIsAnError) {
  ImageFolderOptions o = options();
  o.path = path("nowhere");
  EXPECT_THAT(openError(o).message(),
              HasSubstr(path("nowhere") + ": no such directory"));
}

TEST_F(ImageFolderTest, AnImageOutsideAnyClassFolderIsAnError) {
  image("a/x.jpeg", 0);
  image("stray.jpg", 0);
  EXPECT_THAT(openError(options()).message(),
              HasSubstr("1 image(s) outside any class folder (" +
                        path("stray.jpg") + ")"));
}

TEST_F(ImageFolderTest, NonImageAndHiddenFilesAreIgnored) {
  image("a/x.jpeg", 0);
  image("a/y.JPEG", 1);
  image("a/z.JPG", 2);
  file("a/.DS_Store", {0});
  file("a/Thumbs.db", {0});
  file("a/label.txt", {'a'});
  file("a/scan.png", tinyPng());
  file("a/mixed.Jpeg", flatJpeg(0)); // not one of the four spellings
  file("a/._x.jpeg", {0, 5, 22, 7}); // macOS metadata: hidden
  image("a/.ipynb_checkpoints/x.jpeg", 3);
  image(".cache/x.jpeg", 3); // a hidden folder is no class
  file("README.md", {'#'});
  ImageFolderSource src = open(options());
  EXPECT_THAT(src.classNames(), ElementsAre("a"));
  EXPECT_THAT(relativePaths(src),
              ElementsAre("a/x.jpeg", "a/y.JPEG", "a/z.JPG"));
  // Thumbs.db, label.txt, scan.png, mixed.Jpeg and README.md.
  EXPECT_EQ(src.ignoredFiles(), 5);
}

TEST_F(ImageFolderTest, LinkedFoldersAreFollowed) {
  image("data/a/1.jpeg", 0);
  image("more/2.jpeg", 1);
  image("b/3.jpeg", 2);
  fs::create_directory_symlink(path("more"), path("data/a/linked"));
  fs::create_directory_symlink(path("b"), path("data/b"));
  ImageFolderOptions o = options();
  o.path = path("data");
  ImageFolderSource src = open(o);
  EXPECT_THAT(src.classNames(), ElementsAre("a", "b"));
  EXPECT_EQ(src.files()[1].path, path("data/a/linked/2.jpeg"));
  EXPECT_EQ(src.files()[2].path, path("data/b/3.jpeg"));
}

TEST_F(ImageFolderTest, EveryRealFolderIsWalkedOnce) {
  image("data/a/1.jpeg", 0);
  image("data/a/sub/2.jpeg", 1);
  image("data/b/3.jpeg", 2);
  image("shared/4.jpeg", 3);
  // Loops (to the root, to the folder itself, up from a sub-folder), a
  // link into another class, and two links to one folder outside.
  fs::create_directory_symlink("..", path("data/a/up"));
  fs::create_directory_symlink(".", path("data/a/self"));
  fs::create_directory_symlink("..", path("data/a/sub/back"));
  fs::create_directory_symlink("../b", path("data/a/other"));
  fs::create_directory_symlink(path("shared"), path("data/b/s1"));
  fs::create_directory_symlink(path("shared"), path("data/b/s2"));
  for (const char *glob : {"", "/**/*.jpeg"}) {
    ImageFolderOptions o = options();
    o.path = path("data") + glob;
    ImageFolderSource src = open(o);
    EXPECT_THAT(src.classNames(), ElementsAre("a", "b"));
    EXPECT_THAT(relativePaths(src),
                ElementsAre("data/a/1.jpeg", "data/a/sub/2.jpeg",
                            "data/b/3.jpeg", "data/b/s1/4.jpeg"));
    EXPECT_THAT(src.summary(),
                HasSubstr("5 folder links not followed (each folder is "
                          "listed once; a loop, or a folder reached twice: "
                          "a/other, a/self, a/sub/back, a/up, b/s2)"));
  }
}

TEST_F(ImageFolderTest, AClassFolderThatIsAnothersIsRefused) {
  image("a/1.jpeg", 0);
  fs::create_directory_symlink(path("a"), path("b"));
  EXPECT_THAT(openError(options()).message(),
              HasSubstr(path("b") + ": class folder 'b' is the same folder "
                                    "as class 'a' (through a link)"));
}

TEST_F(ImageFolderTest, AGlobReachesAnyDepth) {
  image("a/1.jpeg", 0);
  image("a/deep/er/2.jpeg", 1);
  image("a/3.jpg", 2); // not *.jpeg
  image("b/4.jpeg", 3);
  ImageFolderOptions o = options();
  o.path = dir_.string() + "/**/*.jpeg";
  ImageFolderSource src = open(o);
  EXPECT_EQ(src.root(), dir_.string());
  EXPECT_THAT(src.classNames(), ElementsAre("a", "b"));
  EXPECT_THAT(relativePaths(src),
              ElementsAre("a/1.jpeg", "a/deep/er/2.jpeg", "b/4.jpeg"));
}

TEST_F(ImageFolderTest, AGlobsWildcardsSelectClassesAndFiles) {
  image("CNV/img_1.jpeg", 0);
  image("CNV/img_22.jpeg", 0);
  image("CNV/x/img_3.jpeg", 0);
  image("DME/img_4.jpeg", 0);
  image("other/img_5.jpeg", 0);
  ImageFolderOptions o = options();
  // One level down, in folders of three letters, one character after '_'.
  o.path = dir_.string() + "/\?\?\?/img_?.jpeg"; // \? keeps "??/" no trigraph
  ImageFolderSource src = open(o);
  EXPECT_THAT(src.classNames(), ElementsAre("CNV", "DME"));
  EXPECT_THAT(relativePaths(src),
              ElementsAre("CNV/img_1.jpeg", "DME/img_4.jpeg"));
}

TEST_F(ImageFolderTest, SummaryGivesClassesAndCounts) {
  threeClasses();
  file("a/.DS_Store", {0});
  file("a/Thumbs.db", {0});
  ImageFolderSource src = open(options());
  EXPECT_EQ(src.summary(), dir_.string() + ": 3 classes, 10 images (a 4, b "
                                           "3, c 3), 1 non-image file ignored");
}

TEST_F(ImageFolderTest, OptionsAreChecked) {
  image("a/x.jpeg", 0);
  ImageFolderOptions o = options();
  o.shape = {224, 224, 1};
  o.preprocessing = ImagePreprocessing::caffe;
  EXPECT_THAT(openError(o).message(),
              HasSubstr("caffe preprocessing (RGB to BGR, minus the ImageNet "
                        "means) takes 3 channels, not 1"));
  o.shape = {224, 224, 4};
  EXPECT_THAT(openError(o).message(), HasSubstr("images of 4 channels"));
  o.shape = {0, 224, 3};
  EXPECT_THAT(openError(o).message(), HasSubstr("resized to 0x224x3"));
}

//===-- path globs --------------------------------------------------------===//

TEST(PathGlobTest, ComponentsMatchAsInAShell) {
  EXPECT_TRUE(matchesComponent("*.jpeg", "a.jpeg"));
  EXPECT_FALSE(matchesComponent("*.jpeg", ".jpeg.jpeg"));
  EXPECT_FALSE(matchesComponent("*.jpeg", "a.jpg"));
  EXPECT_TRUE(matchesComponent("img_?.jp*g", "img_1.jpeg"));
  EXPECT_FALSE(matchesComponent("img_?.jpeg", "img_12.jpeg"));
  EXPECT_TRUE(matchesComponent("*a*b*", "xxaxxbxx"));
  EXPECT_FALSE(matchesComponent("*a*b", "xxaxxbxx"));
  EXPECT_TRUE(matchesComponent("*", "x"));
  EXPECT_FALSE(matchesComponent("*", ".hidden"));
  EXPECT_TRUE(matchesComponent(".*", ".hidden"));
  EXPECT_TRUE(matchesComponent("a[1]", "a[1]"));
}

TEST(PathGlobTest, RootIsThePathBeforeTheFirstWildcard) {
  PathGlob g;
  ASSERT_TRUE(parsePathGlob("/data/OCT2017/train/**/*.jpeg", g));
  EXPECT_EQ(g.root, "/data/OCT2017/train");
  EXPECT_THAT(g.pattern, ElementsAre("**", "*.jpeg"));
  EXPECT_TRUE(g.matches({"CNV", "a.jpeg"}));
  EXPECT_TRUE(g.matches({"CNV", "x", "y", "a.jpeg"}));
  EXPECT_TRUE(g.matches({"a.jpeg"}));
  EXPECT_FALSE(g.matches({"CNV", ".x", "a.jpeg"}));
  EXPECT_FALSE(g.matches({"CNV", "a.png"}));

  ASSERT_TRUE(parsePathGlob("/data/train/", g));
  EXPECT_EQ(g.root, "/data/train");
  EXPECT_FALSE(g.isGlob());
  ASSERT_TRUE(parsePathGlob("train//*/x?.jpeg", g));
  EXPECT_EQ(g.root, "train");
  EXPECT_THAT(g.pattern, ElementsAre("*", "x?.jpeg"));
  EXPECT_FALSE(g.matches({"a", "b", "x1.jpeg"}));
  ASSERT_TRUE(parsePathGlob("*/*.jpeg", g));
  EXPECT_EQ(g.root, ".");
}

TEST(PathGlobTest, MalformedGlobsAreRefused) {
  PathGlob g;
  EXPECT_THAT(parsePathGlob("", g).message(), HasSubstr("path is empty"));
  EXPECT_THAT(parsePathGlob("d/a**b/*.jpeg", g).message(),
              HasSubstr("'**' inside 'a**b'"));
  EXPECT_THAT(parsePathGlob("d/**", g).message(),
              HasSubstr("the glob ends in '**'"));
}

//===-- bad files ---------------------------------------------------------===//

/// The error open() or a next() returns, and how many batches came first.
Status firstError(const Pipeline &p, int *batchesBefore = nullptr) {
  std::unique_ptr<BatchIterator> it;
  if (Status s = p.open(it); !s)
    return s;
  for (int k = 0;; ++k) {
    Batch b;
    bool end = false;
    Status s = it->next(b, end);
    if (!s || end) {
      if (batchesBefore)
        *batchesBefore = k;
      return s;
    }
  }
}

TEST_F(ImageFolderTest, AnEmptyFileFailsAtListing) {
  image("a/good.jpeg", 0);
  file("a/empty.jpeg", {});
  Status s = openError(options());
  EXPECT_THAT(s.message(), HasSubstr(path("a/empty.jpeg") +
                                     " (empty file (0 bytes), not an image"));
  EXPECT_THAT(s.message(), HasSubstr("or skip bad images"));
}

TEST_F(ImageFolderTest, APngNamedJpegFailsAtListing) {
  image("a/good.jpeg", 0);
  file("a/scan.jpeg", tinyPng());
  EXPECT_THAT(openError(options()).message(),
              HasSubstr(path("a/scan.jpeg") +
                        " (named like a JPEG but holds a PNG image"));
}

TEST_F(ImageFolderTest, AnUnreadableFileFailsAtListing) {
  if (::geteuid() == 0)
    GTEST_SKIP() << "root reads a file whatever its mode; "
                    "ADanglingLinkFailsAtListing covers unreadable files";
  image("a/good.jpeg", 0);
  image("a/locked.jpeg", 1);
  fs::permissions(path("a/locked.jpeg"), fs::perms::none);
  EXPECT_THAT(
      openError(options()).message(),
      HasSubstr(path("a/locked.jpeg") + " (cannot open: Permission denied"));
}

TEST_F(ImageFolderTest, ADanglingLinkFailsAtListing) {
  image("a/good.jpeg", 0);
  fs::create_symlink(path("gone.jpeg"), path("a/link.jpeg"));
  EXPECT_THAT(openError(options()).message(),
              HasSubstr(path("a/link.jpeg") +
                        " (cannot open: No such file or directory"));
}

TEST_F(ImageFolderTest, AFifoNamedJpegFailsAtListingWithoutHanging) {
  image("a/good.jpeg", 0);
  ASSERT_EQ(::mkfifo(path("a/pipe.jpeg").c_str(), 0600), 0);
  EXPECT_THAT(openError(options()).message(),
              HasSubstr(path("a/pipe.jpeg") + " (not a regular file"));
}

TEST_F(ImageFolderTest, ListingReportsEveryBadFile) {
  image("a/good.jpeg", 0);
  file("a/e1.jpeg", {});
  file("b/e2.jpeg", tinyPng());
  image("b/good.jpeg", 0);
  Status s = openError(options());
  EXPECT_THAT(s.message(),
              HasSubstr("2 image file(s) cannot be read as JPEG: " +
                        path("a/e1.jpeg")));
  EXPECT_THAT(s.message(), HasSubstr(path("b/e2.jpeg")));
}

TEST_F(ImageFolderTest, ATruncatedJpegFailsAtTheStepThatReadsIt) {
  // Examples 0-3 of class a decode; the truncated file is example 4, in the
  // third batch of two.
  image("a/0.jpeg", 0);
  image("a/1.jpeg", 1);
  image("a/2.jpeg", 2);
  image("a/3.jpeg", 3);
  file("a/4.jpeg", truncatedJpeg());
  image("a/5.jpeg", 5);
  ImageFolderSource src = open(options()); // listing sees a whole header
  Pipeline p(src.examples());
  p.map(src.decoder(), 2, src.shape()).batch(2, LabelFormat::Sparse);
  int before = -1;
  Status s = firstError(p, &before);
  ASSERT_FALSE(s);
  EXPECT_EQ(before, 2);
  EXPECT_THAT(s.message(),
              HasSubstr(path("a/4.jpeg") +
                        ": corrupt or truncated JPEG (libjpeg-turbo, "
                        "decoding: Premature end of JPEG file)"));
}

TEST_F(ImageFolderTest, ACorruptJpegFailsAtTheStepThatReadsIt) {
  image("a/0.jpeg", 0);
  file("a/1.jpeg", corruptJpeg());
  ImageFolderSource src = open(options());
  Pipeline p(src.examples());
  p.map(src.decoder(), 1, src.shape()).batch(1, LabelFormat::Sparse);
  int before = -1;
  Status s = firstError(p, &before);
  ASSERT_FALSE(s);
  EXPECT_EQ(before, 1);
  EXPECT_THAT(s.message(),
              HasSubstr(path("a/1.jpeg") +
                        ": corrupt or truncated JPEG (libjpeg-turbo, "
                        "decoding: Corrupt JPEG data"));
}

TEST_F(ImageFolderTest, ACorruptHeaderFailsAtTheStepThatReadsIt) {
  image("a/0.jpeg", 0);
  file("a/1.jpeg", bogusHeaderJpeg());
  ImageFolderSource src = open(options());
  Pipeline p(src.examples());
  p.map(src.decoder(), 1, src.shape()).batch(1, LabelFormat::Sparse);
  Status s = firstError(p);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(),
              HasSubstr(path("a/1.jpeg") + ": cannot decode as JPEG "
                                           "(libjpeg-turbo, reading the "
                                           "header: Bogus marker "
                                           "length)"));
}

TEST_F(ImageFolderTest, AFileGoneAfterListingFailsAtTheStepThatReadsIt) {
  image("a/0.jpeg", 0);
  ImageFolderSource src = open(options());
  fs::remove(path("a/0.jpeg"));
  Pipeline p(src.examples());
  p.map(src.decoder(), 1, src.shape()).batch(1, LabelFormat::Sparse);
  EXPECT_THAT(
      firstError(p).message(),
      HasSubstr(path("a/0.jpeg") + ": cannot open: No such file or directory"));
}

TEST_F(ImageFolderTest, SkippingLeavesOutWhatListingFindsAndCountsIt) {
  image("a/0.jpeg", 0);
  file("a/1.jpeg", {});
  file("a/2.jpeg", tinyPng());
  fs::create_symlink(path("gone.jpeg"), path("a/3.jpeg"));
  image("b/4.jpeg", 4);
  ImageFolderOptions o = options();
  o.skipBadImages = true;
  ImageFolderSource src = open(o);
  EXPECT_EQ(src.size(), 2);
  EXPECT_THAT(src.classCounts(), ElementsAre(1, 1));
  EXPECT_EQ(src.skippedCount(), 3);
  std::vector<SkippedImage> skipped = src.skippedImages();
  ASSERT_EQ(skipped.size(), 3u);
  EXPECT_EQ(skipped[0].path, path("a/1.jpeg"));
  EXPECT_THAT(skipped[0].reason, HasSubstr("empty file (0 bytes)"));
  EXPECT_THAT(skipped[1].reason, HasSubstr("holds a PNG image"));
  EXPECT_THAT(skipped[2].reason, HasSubstr("cannot open"));
  EXPECT_THAT(src.summary(), HasSubstr("2 images (a 1, b 1), 3 bad images "
                                       "skipped"));
}

TEST_F(ImageFolderTest, SkippingReplacesABadFileByTheNextGoodOneOfItsClass) {
  image("a/0.jpeg", 0);
  file("a/1.jpeg", truncatedJpeg());
  file("a/2.jpeg", corruptJpeg());
  image("a/3.jpeg", 3);
  image("b/4.jpeg", 4);
  image("b/5.jpeg", 5);
  ImageFolderOptions o = options();
  o.skipBadImages = true;
  ImageFolderSource src = open(o);
  ASSERT_EQ(src.size(), 6); // listing cannot tell: the headers are whole
  Pipeline p(src.examples());
  p.repeat(2).map(src.decoder(), 2, src.shape()).batch(3, LabelFormat::Sparse);
  std::vector<Batch> batches = collect(p);
  ASSERT_EQ(batches.size(), 4u); // full batches: 12 examples
  // Examples 1 and 2 (both bad) show file 3, the next good one of class a.
  EXPECT_THAT(filesOfRows(batches),
              ElementsAre(0, 3, 3, 3, 4, 5, 0, 3, 3, 3, 4, 5));
  for (const Batch &b : batches)
    for (int64_t r = 0; r < b.size; ++r)
      EXPECT_EQ(b.sparseLabels[r], b.sourceIndices[r] < 4 ? 0 : 1);
  // Two files, counted once each over the two epochs.
  std::vector<SkippedImage> skipped = src.skippedImages();
  ASSERT_EQ(skipped.size(), 2u);
  std::set<std::string> paths = {skipped[0].path, skipped[1].path};
  EXPECT_EQ(paths, (std::set<std::string>{path("a/1.jpeg"), path("a/2.jpeg")}));
  for (const SkippedImage &s : skipped)
    EXPECT_THAT(s.reason, HasSubstr("corrupt or truncated JPEG"));
}

TEST_F(ImageFolderTest, SkippingFailsWhenEveryImageOfAClassIsBad) {
  image("a/0.jpeg", 0);
  file("b/1.jpeg", truncatedJpeg());
  file("b/2.jpeg", corruptJpeg());
  ImageFolderOptions o = options();
  o.skipBadImages = true;
  ImageFolderSource src = open(o);
  Pipeline p(src.examples());
  p.map(src.decoder(), 1, src.shape()).batch(1, LabelFormat::Sparse);
  EXPECT_THAT(firstError(p).message(),
              HasSubstr(dir_.string() + ": every image of class 'b' (2) is "
                                        "bad"));

  file("c/3.jpeg", {});
  EXPECT_THAT(openError(o).message(),
              HasSubstr(path("c") +
                        ": every image of class 'c' (1) is bad, "
                        "the first: " +
                        path("c/3.jpeg") + ": empty file"));
}

//===-- in the pipeline ---------------------------------------------------===//

TEST_F(ImageFolderTest, DecodedExamplesAreTheFilesPixelsAndLabels) {
  threeClasses();
  ImageFolderSource src = open(options());
  Pipeline p(src.examples());
  p.map(src.decoder(), 2, src.shape()).batch(10, LabelFormat::Sparse);
  std::vector<Batch> batches = collect(p);
  ASSERT_EQ(batches.size(), 1u);
  const Batch &b = batches[0];
  EXPECT_EQ(b.shape, (ExampleShape{12, 16, 3}));
  EXPECT_THAT(b.sparseLabels, ElementsAre(0, 0, 0, 0, 1, 1, 1, 2, 2, 2));
  for (int64_t r = 0; r < 10; ++r) {
    const float *px = b.images.data() + r * b.shape.elements();
    for (int64_t i = 0; i < b.shape.elements(); ++i)
      ASSERT_NEAR(px[i], levelOf(static_cast<int>(r)), 2.0) << r;
  }
}

TEST_F(ImageFolderTest, EveryFileOncePerEpochUnderShuffleAndRepeat) {
  threeClasses();
  ImageFolderSource src = open(options());
  Pipeline p(src.examples());
  p.shuffle(10, 3)
      .repeat(3)
      .map(src.decoder(), 2, src.shape())
      .batch(5, LabelFormat::OneHot)
      .prefetch(2);
  std::vector<Batch> batches = collect(p);
  ASSERT_EQ(batches.size(), 6u);
  std::vector<int> files = filesOfRows(batches);
  std::vector<std::vector<int>> epochs;
  for (int e = 0; e < 3; ++e) {
    epochs.emplace_back(files.begin() + 10 * e, files.begin() + 10 * (e + 1));
    EXPECT_EQ(sortedCopy(epochs.back()), iotaInts(10)) << "epoch " << e;
  }
  EXPECT_NE(epochs[0], epochs[1]); // each epoch its own order
  // Rows keep their source index and label through the shuffle.
  int row = 0;
  for (const Batch &b : batches)
    for (int64_t r = 0; r < b.size; ++r, ++row) {
      EXPECT_EQ(b.sourceIndices[r], files[row]);
      int32_t label = src.files()[files[row]].label;
      EXPECT_EQ(b.oneHotLabels[r * 3 + label], 1.0f);
    }
}

TEST_F(ImageFolderTest, ShardsPartitionTheFiles) {
  threeClasses();
  ImageFolderSource src = open(options());
  std::vector<int> all;
  for (int worker = 0; worker < 3; ++worker) {
    Pipeline p(src.examples());
    p.shard(3, worker)
        .shuffle(10, 1)
        .map(src.decoder(), 2, src.shape())
        .batch(1, LabelFormat::Sparse);
    std::vector<int> mine = filesOfRows(collect(p));
    for (int f : mine)
      EXPECT_EQ(f % 3, worker);
    all.insert(all.end(), mine.begin(), mine.end());
  }
  EXPECT_EQ(sortedCopy(all), iotaInts(10));
}

TEST_F(ImageFolderTest, CacheKeepsTheDecodedImages) {
  threeClasses();
  ImageFolderSource src = open(options());
  auto decodes = std::make_shared<std::atomic<int>>(0);
  MapFn decode = src.decoder();
  Pipeline p(src.examples());
  p.map(
       [decode, decodes](Example &e) {
         ++*decodes;
         return decode(e);
       },
       2, src.shape())
      .cache()
      .shuffle(10, 5)
      .repeat(3)
      .batch(5, LabelFormat::Sparse)
      .prefetch(1);
  std::vector<int> files = filesOfRows(collect(p));
  ASSERT_EQ(files.size(), 30u);
  EXPECT_EQ(decodes->load(), 10); // the first epoch's decodes only
  for (int e = 0; e < 3; ++e)
    EXPECT_EQ(sortedCopy(std::vector<int>(files.begin() + 10 * e,
                                          files.begin() + 10 * (e + 1))),
              iotaInts(10));
  // What that cache holds: the pixels and the Example around them.
  EXPECT_EQ(src.decodedBytes(),
            10 * (12 * 16 * 3 * 4 + static_cast<int64_t>(sizeof(Example))));
  EXPECT_EQ(src.decodedBytes(4), 4 * src.decodedBytes() / 10);
}

TEST_F(ImageFolderTest, DecodingRunsOnTheMapThreads) {
  threeClasses();
  ImageFolderSource src = open(options());
  std::mutex mutex;
  std::set<std::thread::id> decoders;
  MapFn decode = src.decoder();
  Pipeline p(src.examples());
  p.repeat(4)
      .map(
          [&](Example &e) {
            {
              std::lock_guard<std::mutex> lock(mutex);
              decoders.insert(std::this_thread::get_id());
            }
            // Long enough that both threads take examples.
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            return decode(e);
          },
          2, src.shape())
      .batch(4, LabelFormat::Sparse)
      .prefetch(2);
  std::vector<Batch> batches = collect(p);
  EXPECT_EQ(batches.size(), 10u);
  EXPECT_EQ(decoders.count(std::this_thread::get_id()), 0u)
      << "the consumer (the step's thread) decoded";
  EXPECT_EQ(decoders.size(), 2u);
}

TEST_F(ImageFolderTest, PreprocessingAppliesToTheDecodedPixels) {
  // One folder of the 4:4:4 fixture decoded raw, as [0, 1] and as caffe.
  file("a/x.jpeg", readBytes(imageFixture("rgb444.jpeg")));
  ImageFolderOptions o = options();
  o.shape = {20, 24, 3};
  auto decodeWith = [&](ImagePreprocessing mode) {
    o.preprocessing = mode;
    ImageFolderSource src = open(o);
    Example e;
    e.index = 0;
    Status s = src.decoder()(e);
    EXPECT_TRUE(s) << s.message();
    return e.image;
  };
  std::vector<float> raw = decodeWith(ImagePreprocessing::raw);
  std::vector<float> unit = decodeWith(ImagePreprocessing::unitRange);
  std::vector<float> caffe = decodeWith(ImagePreprocessing::caffe);
  std::vector<uint8_t> pil = readBytes(imageFixture("rgb444.rgb"));
  ASSERT_EQ(raw.size(), pil.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    ASSERT_EQ(raw[i], pil[i]);
    ASSERT_FLOAT_EQ(unit[i], pil[i] / 255.0f);
  }
  const float means[3] = {103.939f, 116.779f, 123.68f}; // B, G, R
  for (size_t p = 0; p < raw.size() / 3; ++p)
    for (int c = 0; c < 3; ++c)
      ASSERT_FLOAT_EQ(caffe[p * 3 + c], raw[p * 3 + 2 - c] - means[c]);
}

TEST_F(ImageFolderTest, TheDecoderResizesToTheShapeAsTfDoes) {
  // The 128x96 photo for a 48x64 input: DCT scaling decodes at 1/2 (64x48),
  // exactly the target, which is then libjpeg-turbo's scaled decode; without
  // DCT scaling, the full decode resized.
  file("a/x.jpeg", readBytes(imageFixture("photo.jpeg")));
  ImageFolderOptions o = options();
  o.shape = {48, 64, 3};
  Example e;
  e.index = 0;
  ImageFolderSource scaled = open(o);
  ASSERT_TRUE(scaled.decoder()(e));
  std::vector<uint8_t> half = readBytes(imageFixture("photo.scale2.rgb"));
  ASSERT_EQ(e.image.size(), half.size());
  for (size_t i = 0; i < half.size(); ++i)
    ASSERT_EQ(e.image[i], half[i]);

  o.dctScaling = false;
  ImageFolderSource full = open(o);
  ASSERT_TRUE(full.decoder()(e));
  std::vector<uint8_t> photo = readBytes(imageFixture("photo.rgb"));
  std::vector<float> expected(48 * 64 * 3);
  resizeBilinear(photo.data(), 96, 128, 3, expected.data(), 48, 64,
                 ResizeConvention::halfPixel);
  EXPECT_EQ(e.image, expected);
}

TEST_F(ImageFolderTest, AGreyFileForAnRgbInputIsItsGreyResizedAndCopied) {
  // The decoder resizes a grayscale file as one channel and copies it to
  // three: the same floats as libjpeg's grey-to-RGB decode resized on three
  // channels, down (with caffe's preprocessing, whose channels differ) and
  // up.
  file("a/x.jpeg", readBytes(imageFixture("gray.jpeg")));
  std::vector<uint8_t> rgb = readBytes(imageFixture("gray.rgb")); // 23x31x3
  for (auto [shape, mode] :
       {std::pair{ExampleShape{11, 15, 3}, ImagePreprocessing::caffe},
        std::pair{ExampleShape{40, 50, 3}, ImagePreprocessing::unitRange}}) {
    ImageFolderOptions o = options();
    o.shape = shape;
    o.preprocessing = mode;
    o.dctScaling = false;
    Example e;
    e.index = 0;
    ASSERT_TRUE(open(o).decoder()(e));
    std::vector<float> expected(static_cast<size_t>(shape.elements()));
    resizeBilinear(rgb.data(), 23, 31, 3, expected.data(), shape.height(),
                   shape.width(), ResizeConvention::halfPixel);
    preprocessImage(expected.data(), shape.height() * shape.width(), 3, mode);
    EXPECT_EQ(e.image, expected) << shape.str();
  }
}

TEST_F(ImageFolderTest, AnExampleOfAnotherSourceIsRefused) {
  image("a/x.jpeg", 0);
  ImageFolderSource src = open(options());
  Example e;
  e.index = 7;
  EXPECT_THAT(src.decoder()(e).message(),
              HasSubstr("example 7 is not one of the folder's 1 images"));
}

} // namespace
} // namespace graph::runtime::data::test

//===- IdxReaderTest.cpp - IDX files, raw and gzipped, and their faults ---===//

#include "runtime/data/IdxReader.h"

#include "IdxFileWriter.h"
#include "PythonFixture.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>

namespace graph::runtime::data::test {
namespace {

using ::testing::HasSubstr;

std::vector<float> readFloats(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)),
                    std::istreambuf_iterator<char>());
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

/// Three 2x2 float32 images, big-endian as the format wants, raw and
/// gzipped, with the values also written little-endian (the expectation) and
/// a label file of unsigned bytes and one of floats.
const char *kFloatIdxScript = R"PY(
values = [0.0, -1.5, 3.25, 1e-3, 255.0, -0.0, 1e30, 0.1,
          -7.0, 2.0 ** -140, 65504.5, 1.0 / 3]
header = struct.pack('>BBBB', 0, 0, 0x0d, 3) + struct.pack('>III', 3, 2, 2)
body = struct.pack('>12f', *values)
with open(d + '/images', 'wb') as f:
    f.write(header + body)
with gzip.open(d + '/images.gz', 'wb') as f:
    f.write(header + body)
with open(d + '/images-short', 'wb') as f:
    f.write(header + body[:-3])
with open(d + '/expected.f32', 'wb') as f:
    f.write(struct.pack('<12f', *values))
with open(d + '/labels', 'wb') as f:
    f.write(struct.pack('>BBBBI', 0, 0, 0x08, 1, 3) + bytes([2, 0, 1]))
with open(d + '/float-labels', 'wb') as f:
    f.write(struct.pack('>BBBBI', 0, 0, 0x0d, 1, 3) + struct.pack('>3f', 2, 0, 1))
)PY";

class IdxReaderTest : public TempDirTest {
protected:
  /// Three 2x3 images with pixels 0, 1, ..., 17 except the last one, 255.
  std::vector<uint8_t> imageData() const {
    std::vector<uint8_t> d(18);
    for (int i = 0; i < 18; ++i)
      d[i] = static_cast<uint8_t>(i);
    d[17] = 255;
    return d;
  }
  std::vector<uint8_t> images() const {
    return idxBytes({3, 2, 3}, imageData());
  }
  std::vector<uint8_t> labels() const { return idxBytes({3}, {7, 0, 9}); }
};

TEST_F(IdxReaderTest, ReadsRawFile) {
  writeRaw(path("images"), images());
  IdxArray a;
  Status s = readIdxFile(path("images"), a);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(a.dims, (std::vector<int64_t>{3, 2, 3}));
  EXPECT_EQ(a.data, imageData());
}

TEST_F(IdxReaderTest, ReadsGzippedFile) {
  // The name says nothing: the reader goes by the gzip magic.
  writeGzip(path("images"), images());
  IdxArray a;
  Status s = readIdxFile(path("images"), a);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(a.dims, (std::vector<int64_t>{3, 2, 3}));
  EXPECT_EQ(a.data, imageData());
}

TEST_F(IdxReaderTest, LoadsDatasetScaledToUnitRange) {
  writeGzip(path("images.gz"), images());
  writeRaw(path("labels"), labels());
  Dataset ds;
  Status s = loadIdxDataset(path("images.gz"), path("labels"), 10, ds);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(ds.size(), 3);
  EXPECT_EQ(ds.shape, (ExampleShape{2, 3, 1}));
  EXPECT_EQ(ds.numClasses, 10);
  EXPECT_EQ(ds.labels, (std::vector<int32_t>{7, 0, 9}));
  ASSERT_EQ(ds.images.size(), 18u);
  EXPECT_FLOAT_EQ(ds.images[0], 0.0f);
  EXPECT_FLOAT_EQ(ds.images[5], 5.0f / 255.0f);
  EXPECT_EQ(ds.images[17], 1.0f);
  EXPECT_FLOAT_EQ(ds.image(1)[0], 6.0f / 255.0f);
}

TEST_F(IdxReaderTest, LoadsRank4ImagesAsChannels) {
  writeRaw(path("images"),
           idxBytes({2, 1, 2, 3}, std::vector<uint8_t>(12, 51)));
  writeRaw(path("labels"), idxBytes({2}, {1, 2}));
  Dataset ds;
  Status s = loadIdxDataset(path("images"), path("labels"), 3, ds);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(ds.shape, (ExampleShape{1, 2, 3}));
  EXPECT_FLOAT_EQ(ds.images[11], 0.2f);
}

TEST_F(IdxReaderTest, MissingFile) {
  IdxArray a;
  Status s = readIdxFile(path("nothing-here"), a);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr(path("nothing-here") + ": no such file"));
}

TEST_F(IdxReaderTest, DirectoryInsteadOfFile) {
  IdxArray a;
  Status s = readIdxFile(dir_.string(), a);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr(dir_.string() + ": is a directory"));
}

TEST_F(IdxReaderTest, WrongMagic) {
  std::vector<uint8_t> bytes = images();
  bytes[0] = 0x1f; // neither IDX nor, with this second byte, gzip
  writeRaw(path("bad-magic"), bytes);
  IdxArray a;
  Status s = readIdxFile(path("bad-magic"), a);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr(path("bad-magic") + ": not an IDX file"));
  EXPECT_THAT(s.message(), HasSubstr("magic number is 0x1f000803"));
}

TEST_F(IdxReaderTest, UnsupportedElementType) {
  struct Case {
    uint8_t type;
    const char *name;
  };
  for (const Case &c :
       {Case{0x09, "0x09 (signed byte)"}, Case{0x0B, "0x0b (int16)"},
        Case{0x0C, "0x0c (int32)"}, Case{0x0E, "0x0e (float64)"}}) {
    SCOPED_TRACE(c.name);
    writeRaw(path("other"), idxBytes({1}, std::vector<uint8_t>(8), c.type));
    IdxArray a;
    Status s = readIdxFile(path("other"), a);
    ASSERT_FALSE(s);
    EXPECT_THAT(s.message(), HasSubstr(path("other") + ": element type " +
                                       c.name + " is not supported"));
    EXPECT_THAT(s.message(), HasSubstr("float32 (0x0d)"));
  }
}

TEST_F(IdxReaderTest, ReadsFloat32File) {
  ASSERT_TRUE(runPython(dir_.string(), kFloatIdxScript));
  std::vector<float> want = readFloats(path("expected.f32"));
  ASSERT_EQ(want.size(), 12u);
  for (const char *name : {"images", "images.gz"}) {
    SCOPED_TRACE(name);
    IdxArray a;
    Status s = readIdxFile(path(name), a);
    ASSERT_TRUE(s) << s.message();
    EXPECT_EQ(a.elementType, kIdxFloat32);
    EXPECT_EQ(a.dims, (std::vector<int64_t>{3, 2, 2}));
    EXPECT_TRUE(a.data.empty());
    ASSERT_EQ(a.floats.size(), want.size());
    EXPECT_EQ(std::memcmp(a.floats.data(), want.data(), 12 * sizeof(float)), 0);
    EXPECT_TRUE(std::signbit(a.floats[5]));
  }
  // The unsigned-byte path says what it read too.
  writeRaw(path("bytes"), images());
  IdxArray b;
  ASSERT_TRUE(readIdxFile(path("bytes"), b));
  EXPECT_EQ(b.elementType, kIdxUnsignedByte);
  EXPECT_TRUE(b.floats.empty());
}

TEST_F(IdxReaderTest, LoadsFloat32ImagesAsTheyAre) {
  ASSERT_TRUE(runPython(dir_.string(), kFloatIdxScript));
  std::vector<float> want = readFloats(path("expected.f32"));
  for (const char *name : {"images", "images.gz"}) {
    SCOPED_TRACE(name);
    Dataset ds;
    Status s = loadIdxDataset(path(name), path("labels"), 3, ds);
    ASSERT_TRUE(s) << s.message();
    EXPECT_EQ(ds.size(), 3);
    EXPECT_EQ(ds.shape, (ExampleShape{2, 2, 1}));
    EXPECT_EQ(ds.labels, (std::vector<int32_t>{2, 0, 1}));
    ASSERT_EQ(ds.images.size(), 12u);
    // Not divided by 255.
    EXPECT_EQ(std::memcmp(ds.images.data(), want.data(), 12 * sizeof(float)),
              0);
  }
}

TEST_F(IdxReaderTest, TruncatedFloat32File) {
  ASSERT_TRUE(runPython(dir_.string(), kFloatIdxScript));
  IdxArray a;
  Status s = readIdxFile(path("images-short"), a);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr(path("images-short") +
                                     ": truncated: the 3x2x2 data needs 48 "
                                     "bytes but the file holds only 45"));
}

TEST_F(IdxReaderTest, Float32LabelsAreRefused) {
  ASSERT_TRUE(runPython(dir_.string(), kFloatIdxScript));
  Dataset ds;
  Status s = loadIdxDataset(path("images"), path("float-labels"), 3, ds);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(),
              HasSubstr(path("float-labels") + ": labels of element type 0x0d "
                                               "(float32); a label file holds "
                                               "unsigned bytes (0x08)"));
}

TEST_F(IdxReaderTest, TruncatedRawFile) {
  std::vector<uint8_t> bytes = images();
  bytes.erase(bytes.end() - 5, bytes.end());
  writeRaw(path("short"), bytes);
  IdxArray a;
  Status s = readIdxFile(path("short"), a);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(),
              HasSubstr(path("short") + ": truncated: the 3x2x3 data needs 18 "
                                        "bytes but the file holds only 13"));
}

TEST_F(IdxReaderTest, TruncatedInsideHeader) {
  writeRaw(path("header"), {0, 0, 8, 3, 0, 0});
  IdxArray a;
  Status s = readIdxFile(path("header"), a);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr(path("header") + ": truncated: the "
                                                      "header's 3 dimensions"));
}

// A corrupt header may declare far more data than the file holds: the
// reader refuses it before allocating for it (it used to allocate and zero
// all of it first, here 512 GiB: std::bad_alloc, the process aborted).
TEST_F(IdxReaderTest, AHeaderDeclaringMoreThanTheRawFileHoldsAllocatesNothing) {
  writeRaw(path("huge"), idxBytes({1 << 20, 1 << 19}, {1, 2, 3}));
  IdxArray a;
  Status s = readIdxFile(path("huge"), a);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(),
              HasSubstr(path("huge") + ": truncated: the 1048576x524288 data "
                                       "needs 549755813888 bytes but the file "
                                       "holds only 3"));
}

TEST_F(IdxReaderTest, AHeaderDeclaringMoreThanAGzipFileCanHoldIsCorrupt) {
  // 2^39 bytes from a gzip file of a few dozen: more than deflate's 1032x.
  writeGzip(path("huge.gz"), idxBytes({1 << 20, 1 << 19}, {1, 2, 3}));
  const auto size = std::filesystem::file_size(path("huge.gz"));
  IdxArray a;
  Status s = readIdxFile(path("huge.gz"), a);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(),
              HasSubstr(path("huge.gz") +
                        ": the header declares the 1048576x524288 data, "
                        "549755813888 bytes, more than a gzip file of " +
                        std::to_string(size) +
                        " bytes can hold (deflate expands at most 1032 "
                        "times); the header is corrupt"));
}

// The bound is deflate's real limit, not a guess: a file of zeros that
// compresses about 1000 times still reads.
TEST_F(IdxReaderTest, AGzipFileCompressedAThousandTimesReads) {
  std::vector<uint8_t> zeros(size_t(8) << 20, 0);
  writeGzip(path("zeros.gz"), idxBytes({8, 1024, 1024}, zeros));
  const auto size = std::filesystem::file_size(path("zeros.gz"));
  EXPECT_GT(zeros.size() / size, 500u);
  IdxArray a;
  ASSERT_TRUE(readIdxFile(path("zeros.gz"), a)) << size;
  EXPECT_EQ(a.data.size(), zeros.size());
}

TEST_F(IdxReaderTest, TruncatedGzipStream) {
  // A large enough file that cutting the compressed stream loses data.
  std::vector<uint8_t> data(1 << 16);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<uint8_t>(i * 7919 >> 3);
  writeGzip(path("full.gz"), idxBytes({256, 256}, data));
  auto size = std::filesystem::file_size(path("full.gz"));
  std::filesystem::copy_file(path("full.gz"), path("cut.gz"));
  std::filesystem::resize_file(path("cut.gz"), size / 2);
  IdxArray a;
  Status s = readIdxFile(path("cut.gz"), a);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr(path("cut.gz") + ": truncated"));
}

TEST_F(IdxReaderTest, TrailingBytes) {
  std::vector<uint8_t> bytes = images();
  bytes.push_back(0);
  writeRaw(path("long"), bytes);
  IdxArray a;
  Status s = readIdxFile(path("long"), a);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr(path("long") + ": bytes follow the "
                                                    "3x2x3 data"));
}

TEST_F(IdxReaderTest, ImageAndLabelCountsDiffer) {
  writeRaw(path("images"), images());
  writeRaw(path("labels"), idxBytes({2}, {1, 2}));
  Dataset ds;
  Status s = loadIdxDataset(path("images"), path("labels"), 10, ds);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr(path("images") + " holds 3 images but " +
                                     path("labels") + " holds 2 labels"));
}

TEST_F(IdxReaderTest, LabelOutOfRange) {
  writeRaw(path("images"), images());
  writeRaw(path("labels"), idxBytes({3}, {1, 12, 2}));
  Dataset ds;
  Status s = loadIdxDataset(path("images"), path("labels"), 10, ds);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr(path("labels") + ": label 12 of example "
                                                      "1 is outside [0, 10)"));
}

TEST_F(IdxReaderTest, FilesSwapped) {
  writeRaw(path("images"), images());
  writeRaw(path("labels"), labels());
  Dataset ds;
  Status s = loadIdxDataset(path("labels"), path("images"), 10, ds);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr(path("labels") + ": images of rank 1"));
}

} // namespace
} // namespace graph::runtime::data::test

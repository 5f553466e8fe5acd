//===- SafetensorsTest.cpp - the safetensors reader and writer ------------===//

#include "runtime/checkpoint/Safetensors.h"
#include "runtime/base/AtomicFile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace graph::runtime::checkpoint {
namespace {

using ::testing::HasSubstr;

/// A file assembled by hand from a header text and data bytes, independently
/// of SafetensorsWriter.
std::string file(const std::string &header, const std::string &data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

std::string floats(std::initializer_list<float> values) {
  std::string out(values.size() * sizeof(float), '\0');
  std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

/// The message of parsing `bytes`, which must fail.
std::string parseError(const std::string &bytes) {
  SafetensorsFile f;
  Status s = SafetensorsFile::parse(bytes, "w.safetensors", f);
  EXPECT_FALSE(s) << "parsed a malformed file";
  return s.message();
}

class SafetensorsFileTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("safetensors-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string &name) const {
    return (dir_ / name).string();
  }
  std::filesystem::path dir_;
};

TEST(Safetensors, ParsesAHandWrittenFile) {
  std::string bytes =
      file(R"({"b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]},)"
           R"( "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
           R"( "__metadata__": {"format": "pt"}})",
           floats({1.5f, -2.0f, 7.0f}));
  SafetensorsFile f;
  Status s = SafetensorsFile::parse(bytes, "hand", f);
  ASSERT_TRUE(s) << s.message();
  ASSERT_EQ(f.tensors().size(), 2u);
  // In data order, whatever the header's key order.
  EXPECT_EQ(f.tensors()[0].name, "a");
  EXPECT_EQ(f.tensors()[1].name, "b");
  const TensorInfo *a = f.find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->shape, std::vector<int64_t>{2});
  EXPECT_EQ(f.data(*a), floats({1.5f, -2.0f}));
  EXPECT_EQ(f.data(*f.find("b")), floats({7.0f}));
  ASSERT_NE(f.metadata("format"), nullptr);
  EXPECT_EQ(*f.metadata("format"), "pt");
  EXPECT_EQ(f.find("c"), nullptr);
}

TEST(Safetensors, RoundTripsEveryDTypeShapeAndTheMetadata) {
  SafetensorsWriter w;
  w.setMetadata("global_step", "40");
  w.setMetadata("note", "caf\xc3\xa9 \"quoted\"");
  ASSERT_TRUE(w.add("conv2d/kernel", DType::F32, {3, 3, 1, 2},
                    std::string(3 * 3 * 1 * 2 * 4, '\x11')));
  ASSERT_TRUE(w.add("steps", DType::I64, {}, std::string(8, '\x22')));
  ASSERT_TRUE(w.add("empty", DType::F64, {0, 5}, ""));
  ASSERT_TRUE(w.add("half", DType::BF16, {3}, "abcdef"));
  ASSERT_TRUE(w.add("mask", DType::BOOL, {2}, std::string("\x01\x00", 2)));
  std::string bytes = w.serialize();

  uint64_t headerBytes = 0;
  std::memcpy(&headerBytes, bytes.data(), 8);
  EXPECT_EQ((8 + headerBytes) % 8, 0u) << "data not 8-byte aligned";

  SafetensorsFile f;
  Status s = SafetensorsFile::parse(bytes, "rt", f);
  ASSERT_TRUE(s) << s.message();
  ASSERT_EQ(f.tensors().size(), 5u);
  const TensorInfo *k = f.find("conv2d/kernel");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->dtype, DType::F32);
  EXPECT_EQ(k->shape, (std::vector<int64_t>{3, 3, 1, 2}));
  EXPECT_EQ(f.data(*k), std::string(72, '\x11'));
  EXPECT_EQ(f.find("steps")->shape, std::vector<int64_t>{});
  EXPECT_EQ(f.data(*f.find("steps")), std::string(8, '\x22'));
  EXPECT_EQ(f.data(*f.find("empty")).size(), 0u);
  EXPECT_EQ(f.find("half")->dtype, DType::BF16);
  EXPECT_EQ(f.data(*f.find("half")), "abcdef");
  EXPECT_EQ(f.data(*f.find("mask")), std::string("\x01\x00", 2));
  EXPECT_EQ(f.metadata(),
            (std::map<std::string, std::string>{
                {"global_step", "40"}, {"note", "caf\xc3\xa9 \"quoted\""}}));
}

TEST(Safetensors, WriterRefusesWrongSizesAndDuplicates) {
  SafetensorsWriter w;
  Status s = w.add("x", DType::F32, {2, 2}, std::string(15, '\0'));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "safetensors: tensor 'x': 15 bytes for F32 [2, 2]");
  ASSERT_TRUE(w.add("x", DType::F32, {2, 2}, std::string(16, '\0')));
  s = w.add("x", DType::F32, {1}, std::string(4, '\0'));
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("'x' added twice"));
  EXPECT_FALSE(w.add("__metadata__", DType::U8, {1}, "a"));
  EXPECT_FALSE(w.add("neg", DType::U8, {-1}, ""));
}

/// A name JSON cannot hold is an error, and the write leaves no file (not
/// even the temporary one) behind.
TEST(Safetensors, WriterRefusesANameThatIsNotUtf8) {
  std::string dir = ::testing::TempDir() + "safetensors-utf8";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  SafetensorsWriter w;
  ASSERT_TRUE(w.add("dense/\xff", DType::F32, {1}, std::string(4, '\0')));
  Status s = w.write(dir + "/w.safetensors");
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("not valid UTF-8"));
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

TEST(Safetensors, DTypeNamesAndSizes) {
  EXPECT_EQ(parseDType("F32"), DType::F32);
  EXPECT_EQ(parseDType("BF16"), DType::BF16);
  EXPECT_EQ(parseDType("f32"), std::nullopt);
  EXPECT_EQ(dtypeSize(DType::F64), 8);
  EXPECT_EQ(dtypeSize(DType::F8_E4M3), 1);
  EXPECT_STREQ(dtypeName(DType::U16), "U16");
}

// One malformed file per check of the reader, each with its message.

TEST(SafetensorsMalformed, ShorterThanTheLengthField) {
  EXPECT_EQ(parseError("abc"), "w.safetensors: not a safetensors file: 3 "
                               "bytes, fewer than the 8-byte header length");
}

TEST(SafetensorsMalformed, HeaderLengthPastTheEnd) {
  std::string bytes = file("{}", "");
  bytes[0] = 100;
  EXPECT_EQ(parseError(bytes), "w.safetensors: header length 100 exceeds the "
                               "2 bytes that follow it (a truncated file?)");
}

TEST(SafetensorsMalformed, HeaderLengthOverTheLimit) {
  std::string bytes = file("{}", "");
  uint64_t huge = uint64_t(1) << 62;
  std::memcpy(bytes.data(), &huge, 8);
  EXPECT_THAT(parseError(bytes), HasSubstr("over the format's limit"));
}

TEST(SafetensorsMalformed, HeaderNotAnObject) {
  EXPECT_THAT(parseError(file("[1, 2]", "")),
              HasSubstr("does not start with '{'"));
  EXPECT_THAT(parseError(file("", "")), HasSubstr("does not start with '{'"));
}

TEST(SafetensorsMalformed, BadJson) {
  EXPECT_THAT(parseError(file(R"({"a": {"dtype": "F32",)", "")),
              HasSubstr("w.safetensors: the header is not valid JSON: "));
}

// A number too large for a double is nlohmann's out_of_range, not a
// parse_error: the reader's second parse (for the message) threw it out of
// parse() and the process aborted (found by the safetensors-reader fuzzer).
TEST(SafetensorsMalformed, ANumberPastADoublesRange) {
  EXPECT_THAT(parseError(file(R"({"w": {"dtype": "F32", "shape": [1], )"
                              R"("data_offsets": [0, 4e400]}})",
                              floats({1}))),
              HasSubstr("w.safetensors: the header is not valid JSON: "
                        "[json.exception.out_of_range.406] number overflow"));
}

// Beside a 0 the byte count stays 0, so a dimension of 2^63 passed the size
// check and came out of the reader as a negative int64.
TEST(SafetensorsMalformed, ADimensionPastInt64) {
  EXPECT_THAT(parseError(file(R"({"e": {"dtype": "F32", )"
                              R"("shape": [0, 9223372036854775808], )"
                              R"("data_offsets": [0, 0]}})",
                              "")),
              HasSubstr("w.safetensors: tensor 'e': shape [0,"
                        "9223372036854775808] has a dimension over 2^63 - 1"));
}

TEST(SafetensorsMalformed, DuplicateTensor) {
  EXPECT_EQ(
      parseError(file(
          R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
          R"( "a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
          floats({1}))),
      "w.safetensors: the header names 'a' twice");
}

TEST(SafetensorsMalformed, DuplicateField) {
  EXPECT_THAT(parseError(file(R"({"a": {"dtype": "F32", "dtype": "F64",)"
                              R"( "shape": [1], "data_offsets": [0, 4]}})",
                              floats({1}))),
              HasSubstr("names 'dtype' twice"));
}

TEST(SafetensorsMalformed, MetadataValueNotAString) {
  EXPECT_EQ(parseError(file(R"({"__metadata__": {"step": 40}})", "")),
            "w.safetensors: __metadata__ entry 'step' is a number, not a "
            "string");
  EXPECT_THAT(parseError(file(R"({"__metadata__": [1]})", "")),
              HasSubstr("__metadata__ is a array, not an object of strings"));
}

TEST(SafetensorsMalformed, UnknownDType) {
  EXPECT_EQ(parseError(file(R"({"a": {"dtype": "F33", "shape": [1],)"
                            R"( "data_offsets": [0, 4]}})",
                            floats({1}))),
            "w.safetensors: tensor 'a': unknown dtype 'F33'");
}

TEST(SafetensorsMalformed, MissingAndUnexpectedFields) {
  EXPECT_EQ(parseError(file(R"({"a": {"dtype": "F32",)"
                            R"( "data_offsets": [0, 4]}})",
                            floats({1}))),
            "w.safetensors: tensor 'a': no 'shape' field");
  EXPECT_THAT(parseError(file(R"({"a": {"dtype": "F32", "shape": [1],)"
                              R"( "data_offsets": [0, 4], "bias": 1}})",
                              floats({1}))),
              HasSubstr("tensor 'a': unexpected field 'bias'"));
  EXPECT_THAT(parseError(file(R"({"a": 3})", "")),
              HasSubstr("tensor 'a': its header entry is a number"));
}

TEST(SafetensorsMalformed, BadShapeAndOffsets) {
  EXPECT_THAT(parseError(file(R"({"a": {"dtype": "F32", "shape": [-1],)"
                              R"( "data_offsets": [0, 4]}})",
                              floats({1}))),
              HasSubstr("shape [-1] holds something other than non-negative "
                        "integers"));
  EXPECT_THAT(parseError(file(R"({"a": {"dtype": "F32", "shape": [1],)"
                              R"( "data_offsets": [4, 0]}})",
                              floats({1}))),
              HasSubstr("data_offsets [4,0] end before they begin"));
  EXPECT_THAT(parseError(file(R"({"a": {"dtype": "F32", "shape": [1],)"
                              R"( "data_offsets": [0]}})",
                              floats({1}))),
              HasSubstr("is not [begin, end] of non-negative integers"));
  EXPECT_THAT(parseError(file(R"({"a": {"dtype": "F32", "shape": [4294967296,)"
                              R"( 4294967296], "data_offsets": [0, 4]}})",
                              floats({1}))),
              HasSubstr("overflows 64 bits"));
}

TEST(SafetensorsMalformed, SizeNotProductOfShape) {
  EXPECT_EQ(parseError(file(R"({"a": {"dtype": "F32", "shape": [2, 3],)"
                            R"( "data_offsets": [0, 20]}})",
                            std::string(20, '\0'))),
            "w.safetensors: tensor 'a': data_offsets [0,20] hold 20 bytes, "
            "but F32 [2, 3] needs 24");
}

TEST(SafetensorsMalformed, OverlappingTensors) {
  EXPECT_EQ(
      parseError(file(
          R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
          R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
          floats({1, 2, 3}))),
      "w.safetensors: tensor 'b' [4, 12) overlaps tensor 'a' [0, 8)");
}

TEST(SafetensorsMalformed, GapBetweenTensors) {
  EXPECT_EQ(
      parseError(file(
          R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
          R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
          floats({1, 2, 3}))),
      "w.safetensors: data bytes [4, 8) belong to no tensor");
}

TEST(SafetensorsMalformed, OffsetsPastTheData) {
  EXPECT_EQ(parseError(file(R"({"a": {"dtype": "F32", "shape": [2],)"
                            R"( "data_offsets": [0, 8]}})",
                            floats({1}))),
            "w.safetensors: tensor 'a' [0, 8) ends past the 4 data bytes of "
            "the file (a truncated file?)");
}

TEST(SafetensorsMalformed, TrailingGarbage) {
  EXPECT_EQ(parseError(file(R"({"a": {"dtype": "F32", "shape": [1],)"
                            R"( "data_offsets": [0, 4]}})",
                            floats({1}) + "xyz")),
            "w.safetensors: 3 bytes of trailing data after the last tensor "
            "(at byte 4 of the data)");
}

TEST(SafetensorsMalformed, EveryTruncationOfAValidFileFails) {
  SafetensorsWriter w;
  w.setMetadata("k", "v");
  ASSERT_TRUE(w.add("a", DType::F32, {3}, floats({1, 2, 3})));
  ASSERT_TRUE(w.add("b", DType::I32, {2}, std::string(8, '\x01')));
  std::string bytes = w.serialize();
  SafetensorsFile f;
  ASSERT_TRUE(SafetensorsFile::parse(bytes, "full", f));
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(SafetensorsFile::parse(bytes.substr(0, n), "cut", f))
        << "a prefix of " << n << " of " << bytes.size()
        << " bytes was accepted";
}

TEST_F(SafetensorsFileTest, WriteThenReadAFile) {
  SafetensorsWriter w;
  ASSERT_TRUE(w.add("dense/bias", DType::F32, {2}, floats({0.25f, -1})));
  Status s = w.write(path("w.safetensors"));
  ASSERT_TRUE(s) << s.message();
  for (const auto &e : std::filesystem::directory_iterator(dir_))
    EXPECT_FALSE(e.path().string().ends_with(".tmp")) << e.path();
  SafetensorsFile f;
  s = SafetensorsFile::read(path("w.safetensors"), f);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(f.source(), path("w.safetensors"));
  EXPECT_EQ(f.data(*f.find("dense/bias")), floats({0.25f, -1}));

  s = SafetensorsFile::read(path("missing.safetensors"), f);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("missing.safetensors: cannot open"));
}

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_F(SafetensorsFileTest, AtomicFileReplacesOnlyOnCommit) {
  ASSERT_TRUE(writeFileAtomically(path("f"), "old"));
  std::string abandoned;
  {
    AtomicFile f;
    ASSERT_TRUE(f.open(path("f")));
    ASSERT_TRUE(f.append("new, but abandoned"));
    abandoned = f.temporaryPath();
    EXPECT_TRUE(std::filesystem::exists(abandoned));
    EXPECT_EQ(finalNameOf(abandoned), path("f"));
    EXPECT_EQ(slurp(path("f")), "old");
  }
  // Destroyed without a commit: the old file stands, no temporary is left.
  EXPECT_EQ(slurp(path("f")), "old");
  EXPECT_FALSE(std::filesystem::exists(abandoned));

  // Two writers of one path at once: each its own temporary, and each
  // commit replaces the file whole.
  AtomicFile f, g;
  ASSERT_TRUE(f.open(path("f")));
  ASSERT_TRUE(g.open(path("f")));
  EXPECT_NE(f.temporaryPath(), g.temporaryPath());
  ASSERT_TRUE(f.append("new"));
  ASSERT_TRUE(g.append("newer"));
  Status s = f.commit();
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(slurp(path("f")), "new");
  s = g.commit();
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(slurp(path("f")), "newer");
  EXPECT_FALSE(std::filesystem::exists(f.temporaryPath()));
  EXPECT_FALSE(std::filesystem::exists(g.temporaryPath()));

  s = writeFileAtomically(path("no/such/dir/f"), "x");
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr(".tmp: cannot create"));
}

TEST(AtomicFileNames, FinalNameOfATemporary) {
  EXPECT_EQ(finalNameOf("d/ckpt-20.safetensors.4242.7.tmp"),
            "d/ckpt-20.safetensors");
  EXPECT_EQ(finalNameOf("ckpt-20.safetensors.tmp"), "ckpt-20.safetensors");
  EXPECT_EQ(finalNameOf("ckpt-20.safetensors"), "");
  EXPECT_EQ(finalNameOf("notes.txt"), "");
}

} // namespace
} // namespace graph::runtime::checkpoint

//===- IdxFileWriter.h - IDX files the tests write themselves ---*- C++ -*-===//

#ifndef TEST_RUNTIME_DATA_IDXFILEWRITER_H
#define TEST_RUNTIME_DATA_IDXFILEWRITER_H

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace graph::runtime::data::test {

/// The bytes of an IDX file of unsigned bytes with `dims` and `data`.
inline std::vector<uint8_t> idxBytes(const std::vector<uint32_t> &dims,
                                     const std::vector<uint8_t> &data,
                                     uint8_t type = 0x08) {
  std::vector<uint8_t> bytes = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8)
      bytes.push_back(static_cast<uint8_t>(d >> shift));
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

inline void writeRaw(const std::string &path,
                     const std::vector<uint8_t> &bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  ASSERT_TRUE(f.good()) << path;
}

inline void writeGzip(const std::string &path,
                      const std::vector<uint8_t> &bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

/// A fresh directory per test, removed afterwards.
class TempDirTest : public ::testing::Test {
protected:
  void SetUp() override {
    const ::testing::TestInfo *info =
        ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::path(::testing::TempDir()) /
           (std::string("graph-data-") + info->test_suite_name() + "-" +
            info->name() + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string &name) const {
    return (dir_ / name).string();
  }

  std::filesystem::path dir_;
};

} // namespace graph::runtime::data::test

#endif // TEST_RUNTIME_DATA_IDXFILEWRITER_H

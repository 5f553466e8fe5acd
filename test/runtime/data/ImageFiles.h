//===- ImageFiles.h - JPEG files the image tests write or read --*- C++ -*-===//
//
// The committed fixtures in Inputs/images (with PIL's decode of each, made by
// Inputs/images/generate.py) and JPEGs the tests encode themselves with
// TurboJPEG: flat images whose one grey level says which file a decoded
// example came from, whatever the pipeline did to the order.
//
//===----------------------------------------------------------------------===//

#ifndef TEST_RUNTIME_DATA_IMAGEFILES_H
#define TEST_RUNTIME_DATA_IMAGEFILES_H

#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace graph::runtime::data::test {

inline std::string imageFixture(const std::string &name) {
  return std::string(GRAPH_SOURCE_DIR) + "/test/runtime/data/Inputs/images/" +
         name;
}

inline std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << path;
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f),
                              std::istreambuf_iterator<char>());
}

inline void writeBytes(const std::string &path,
                       const std::vector<uint8_t> &bytes) {
  std::filesystem::create_directories(
      std::filesystem::path(path).parent_path());
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char *>(bytes.data()),
          static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

/// `pixels` (height x width x channels, channels 1 or 3) as a JPEG, 4:4:4.
inline std::vector<uint8_t> encodeJpeg(const std::vector<uint8_t> &pixels,
                                       int width, int height, int channels,
                                       int quality = 95) {
  tjhandle h = tjInitCompress();
  EXPECT_NE(h, nullptr);
  unsigned char *buf = nullptr;
  unsigned long size = 0;
  int rc = tjCompress2(h, pixels.data(), width, 0, height,
                       channels == 3 ? TJPF_RGB : TJPF_GRAY, &buf, &size,
                       channels == 3 ? TJSAMP_444 : TJSAMP_GRAY, quality, 0);
  EXPECT_EQ(rc, 0) << tjGetErrorStr2(h);
  std::vector<uint8_t> out(buf, buf + size);
  tjFree(buf);
  tjDestroy(h);
  return out;
}

/// A width x height RGB JPEG of one grey level: it decodes to within a
/// level or two of `level` everywhere.
inline std::vector<uint8_t> flatJpeg(uint8_t level, int width = 16,
                                     int height = 12) {
  std::vector<uint8_t> pixels(static_cast<size_t>(width * height * 3), level);
  return encodeJpeg(pixels, width, height, 3);
}

/// A JPEG whose start-of-frame segment is 3 bytes long, which no frame
/// header is: libjpeg fails on it ("Bogus marker length").
inline std::vector<uint8_t> bogusHeaderJpeg() {
  std::vector<uint8_t> bytes(200, 0x42);
  const uint8_t head[] = {0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x03};
  std::copy(std::begin(head), std::end(head), bytes.begin());
  return bytes;
}

/// A 1x1 PNG: a file named .jpeg that holds another format.
inline std::vector<uint8_t> tinyPng() {
  return {0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00,
          0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x01,
          0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0x00, 0x00, 0x00, 0x3A,
          0x7E, 0x9B, 0x55, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41,
          0x54, 0x78, 0x9C, 0x63, 0x60, 0x00, 0x00, 0x00, 0x02, 0x00,
          0x01, 0x48, 0xAF, 0xA4, 0x71, 0x00, 0x00, 0x00, 0x00, 0x49,
          0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82};
}

} // namespace graph::runtime::data::test

#endif // TEST_RUNTIME_DATA_IMAGEFILES_H

//===- TensorBoardEventsTest.cpp - event files read back independently ---===//
//
// The writer's files are parsed by a decoder written here from the format's
// description (TFRecord framing, protobuf wire format), sharing nothing with
// the writer but crc32c(), which is checked first against published values.
// test/runtime/job/read_tensorboard.py reads the same files with the real
// tensorboard package.
//
//===----------------------------------------------------------------------===//

#include "runtime/job/TensorBoardEvents.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

using namespace graph::runtime;
using namespace graph::runtime::job;
namespace fs = std::filesystem;

namespace {

//===----------------------------------------------------------------------===//
// An independent reader.
//===----------------------------------------------------------------------===//

struct Scalar {
  std::string tag;
  float value = 0;
};

struct Event {
  std::optional<double> wallTime;
  int64_t step = 0;
  std::optional<std::string> fileVersion;
  std::vector<Scalar> values;
};

uint64_t readLittleEndian(const std::string &bytes, size_t at, int width) {
  uint64_t v = 0;
  for (int i = width - 1; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

/// A protobuf message's fields, one at a time; fails the test on bad input.
class WireReader {
public:
  explicit WireReader(const std::string &bytes) : bytes_(bytes) {}
  bool done() const { return at_ >= bytes_.size(); }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ >= bytes_.size()) {
        ADD_FAILURE() << "varint runs past the end";
        return 0;
      }
      auto b = static_cast<unsigned char>(bytes_[at_++]);
      v |= uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80))
        return v;
    }
    ADD_FAILURE() << "varint longer than 10 bytes";
    return v;
  }
  uint64_t fixed(int width) {
    if (at_ + width > bytes_.size()) {
      ADD_FAILURE() << "fixed field runs past the end";
      at_ = bytes_.size();
      return 0;
    }
    uint64_t v = readLittleEndian(bytes_, at_, width);
    at_ += width;
    return v;
  }
  std::string lengthDelimited() {
    uint64_t n = varint();
    if (at_ + n > bytes_.size()) {
      ADD_FAILURE() << "length-delimited field runs past the end";
      at_ = bytes_.size();
      return "";
    }
    std::string s = bytes_.substr(at_, n);
    at_ += n;
    return s;
  }

private:
  const std::string &bytes_;
  size_t at_ = 0;
};

double asDouble(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

float asFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

Scalar decodeValue(const std::string &bytes) {
  Scalar out;
  WireReader r(bytes);
  while (!r.done()) {
    uint64_t key = r.varint();
    if (key == (1 << 3 | 2))
      out.tag = r.lengthDelimited();
    else if (key == (2 << 3 | 5))
      out.value = asFloat(static_cast<uint32_t>(r.fixed(4)));
    else
      ADD_FAILURE() << "unexpected Summary.Value key " << key;
  }
  return out;
}

Event decodeEvent(const std::string &bytes) {
  Event out;
  WireReader r(bytes);
  while (!r.done()) {
    uint64_t key = r.varint();
    if (key == (1 << 3 | 1)) {
      out.wallTime = asDouble(r.fixed(8));
    } else if (key == (2 << 3 | 0)) {
      out.step = static_cast<int64_t>(r.varint());
    } else if (key == (3 << 3 | 2)) {
      out.fileVersion = r.lengthDelimited();
    } else if (key == (5 << 3 | 2)) {
      std::string summary = r.lengthDelimited();
      WireReader s(summary);
      while (!s.done()) {
        uint64_t k = s.varint();
        if (k != (1 << 3 | 2)) {
          ADD_FAILURE() << "unexpected Summary key " << k;
          break;
        }
        out.values.push_back(decodeValue(s.lengthDelimited()));
      }
    } else {
      ADD_FAILURE() << "unexpected Event key " << key;
      break;
    }
  }
  return out;
}

uint32_t masked(const std::string &bytes) {
  uint32_t crc = crc32c(bytes.data(), bytes.size());
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// The records of a file, checked: both CRCs of each, no trailing bytes.
std::vector<Event> readEvents(const std::string &path) {
  std::string bytes = readFile(path);
  std::vector<Event> events;
  size_t at = 0;
  while (at < bytes.size()) {
    if (bytes.size() - at < 12) {
      ADD_FAILURE() << path << ": truncated header at " << at;
      break;
    }
    std::string header = bytes.substr(at, 8);
    uint64_t length = readLittleEndian(bytes, at, 8);
    EXPECT_EQ(readLittleEndian(bytes, at + 8, 4), masked(header))
        << "length CRC at " << at;
    if (bytes.size() - at - 12 < length + 4) {
      ADD_FAILURE() << path << ": truncated record at " << at;
      break;
    }
    std::string data = bytes.substr(at + 12, length);
    EXPECT_EQ(readLittleEndian(bytes, at + 12 + length, 4), masked(data))
        << "data CRC at " << at;
    events.push_back(decodeEvent(data));
    at += 12 + length + 4;
  }
  return events;
}

double secondsNow() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

/// A fresh directory under the test temp dir, removed with the fixture.
class TensorBoardEventsTest : public ::testing::Test {
protected:
  void SetUp() override {
    const char *base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/tb-events-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    // GRAPH_KEEP_TB_EVENTS=1 leaves the files for read_tensorboard.py.
    if (!std::getenv("GRAPH_KEEP_TB_EVENTS")) {
      std::error_code ec;
      fs::remove_all(dir_, ec);
    } else {
      std::printf("kept %s\n", dir_.c_str());
    }
  }
  std::string dir_;
};

//===----------------------------------------------------------------------===//
// CRC-32C.
//===----------------------------------------------------------------------===//

TEST(Crc32cTest, MatchesPublishedValues) {
  // The catalogue's check value, and RFC 3720 (iSCSI) B.4's vectors.
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  std::string zeros(32, '\0'), ones(32, '\xFF');
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  std::string ascending, descending;
  for (int i = 0; i < 32; ++i) {
    ascending.push_back(static_cast<char>(i));
    descending.push_back(static_cast<char>(31 - i));
  }
  EXPECT_EQ(crc32c(ascending.data(), 32), 0x46DD794Eu);
  EXPECT_EQ(crc32c(descending.data(), 32), 0x113FDB5Cu);
  EXPECT_EQ(crc32c("", 0), 0u);
}

TEST(Crc32cTest, ContinuesAcrossPieces) {
  EXPECT_EQ(crc32c("6789", 4, crc32c("12345", 5)), 0xE3069283u);
}

TEST(Crc32cTest, MaskIsTensorFlows) {
  uint32_t crc = 0xE3069283u;
  EXPECT_EQ(maskCrc32c(crc), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
  EXPECT_EQ(maskCrc32c(0), 0xa282ead8u);
}

//===----------------------------------------------------------------------===//
// The writer.
//===----------------------------------------------------------------------===//

TEST_F(TensorBoardEventsTest, WritesKerasLayoutAndReadsBack) {
  double before = secondsNow();
  std::string train = dir_ + "/run/train";
  std::unique_ptr<TensorBoardWriter> writer;
  Status s = TensorBoardWriter::open(train, writer);
  ASSERT_TRUE(s) << s.message();
  ASSERT_NE(writer, nullptr);

  // events.out.tfevents.<10-digit seconds>.<host>.<pid>.<n>.v2 in train/.
  fs::path path(writer->path());
  EXPECT_EQ(path.parent_path(), fs::path(train));
  std::string name = path.filename().string();
  ASSERT_EQ(name.rfind("events.out.tfevents.", 0), 0u) << name;
  EXPECT_EQ(name.substr(name.size() - 3), ".v2") << name;
  std::string pid = std::string(".") + std::to_string(::getpid()) + ".";
  EXPECT_NE(name.find(pid), std::string::npos) << name;

  ASSERT_TRUE(writer->addScalar("epoch_loss", 0, 0.75, 1700000000.5));
  ASSERT_TRUE(writer->addScalar("epoch_accuracy", 0, 0.5, 1700000000.5));
  ASSERT_TRUE(writer->addScalar("epoch_loss", 1, 0.1, 1700000001.25));
  ASSERT_TRUE(writer->addScalar("epoch_loss", -3, -2.5, 1700000002.0));
  ASSERT_TRUE(writer->addScalar("a/b c", int64_t(1) << 40, 0.0, 1.0));
  ASSERT_TRUE(writer->flush());
  ASSERT_TRUE(writer->close());
  ASSERT_TRUE(writer->close()) << "a second close returns the first's";
  EXPECT_FALSE(writer->addScalar("epoch_loss", 2, 1.0, 1.0));

  std::vector<Event> events = readEvents(writer->path());
  ASSERT_EQ(events.size(), 6u);
  ASSERT_TRUE(events[0].fileVersion);
  EXPECT_EQ(*events[0].fileVersion, "brain.Event:2");
  ASSERT_TRUE(events[0].wallTime);
  EXPECT_GE(*events[0].wallTime, before - 1);
  EXPECT_LE(*events[0].wallTime, secondsNow() + 1);
  EXPECT_TRUE(events[0].values.empty());

  struct Expected {
    const char *tag;
    int64_t step;
    float value;
    double wallTime;
  } expected[] = {{"epoch_loss", 0, 0.75f, 1700000000.5},
                  {"epoch_accuracy", 0, 0.5f, 1700000000.5},
                  {"epoch_loss", 1, 0.1f, 1700000001.25},
                  {"epoch_loss", -3, -2.5f, 1700000002.0},
                  {"a/b c", int64_t(1) << 40, 0.0f, 1.0}};
  for (size_t i = 0; i < std::size(expected); ++i) {
    const Event &e = events[i + 1];
    SCOPED_TRACE(i);
    EXPECT_FALSE(e.fileVersion);
    ASSERT_TRUE(e.wallTime);
    EXPECT_EQ(*e.wallTime, expected[i].wallTime);
    EXPECT_EQ(e.step, expected[i].step);
    ASSERT_EQ(e.values.size(), 1u);
    EXPECT_EQ(e.values[0].tag, expected[i].tag);
    EXPECT_EQ(e.values[0].value, expected[i].value);
  }
}

TEST_F(TensorBoardEventsTest, BytesAreCanonicalProtobuf) {
  // What protobuf serializes for Event(wall_time=2.0, step=1,
  // summary={value=[{tag:"l", simple_value:1.0}]}), record framing and all.
  std::string path = dir_ + "/one";
  std::unique_ptr<TensorBoardWriter> writer;
  ASSERT_TRUE(TensorBoardWriter::openFile(path, writer));
  size_t first = readFile(path).size();
  ASSERT_TRUE(writer->addScalar("l", 1, 1.0, 2.0));
  ASSERT_TRUE(writer->close());
  std::string record = readFile(path).substr(first);
  const unsigned char event[] = {
      0x09, 0,    0,    0,    0,   0, 0, 0, 0x40, // wall_time 2.0
      0x10, 0x01,                                 // step 1
      0x2a, 0x0a,                                 // summary, 10 bytes
      0x0a, 0x08,                                 //   value, 8 bytes
      0x0a, 0x01, 'l',                            //     tag "l"
      0x15, 0x00, 0x00, 0x80, 0x3f};              //     simple_value 1.0f
  std::string data(reinterpret_cast<const char *>(event), sizeof event);
  ASSERT_EQ(record.size(), 12 + data.size() + 4);
  EXPECT_EQ(readLittleEndian(record, 0, 8), data.size());
  EXPECT_EQ(record.substr(12, data.size()), data);
}

TEST_F(TensorBoardEventsTest, TwoWritersInOneDirectoryGetTwoFiles) {
  std::unique_ptr<TensorBoardWriter> a, b;
  ASSERT_TRUE(TensorBoardWriter::open(dir_, a));
  ASSERT_TRUE(TensorBoardWriter::open(dir_, b));
  EXPECT_NE(a->path(), b->path());
  EXPECT_TRUE(a->close());
  EXPECT_TRUE(b->close());
}

TEST_F(TensorBoardEventsTest, DirectoryUnderARegularFileFails) {
  std::string file = dir_ + "/plain";
  std::ofstream(file) << "not a directory";
  std::unique_ptr<TensorBoardWriter> writer;
  Status s = TensorBoardWriter::open(file + "/logs/train", writer);
  ASSERT_FALSE(s);
  EXPECT_EQ(writer, nullptr);
  EXPECT_NE(s.message().find(file + "/logs/train"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("cannot create"), std::string::npos)
      << s.message();

  s = TensorBoardWriter::open(file, writer);
  ASSERT_FALSE(s) << "the directory itself is a regular file";
  EXPECT_NE(s.message().find(file), std::string::npos) << s.message();

  s = TensorBoardWriter::openFile(file + "/events", writer);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find(file + "/events"), std::string::npos)
      << s.message();
}

TEST_F(TensorBoardEventsTest, EmptyTagOrDirectoryIsInvalid) {
  std::unique_ptr<TensorBoardWriter> writer;
  EXPECT_EQ(TensorBoardWriter::open("", writer).code(),
            StatusCode::invalidInput);
  ASSERT_TRUE(TensorBoardWriter::open(dir_, writer));
  EXPECT_EQ(writer->addScalar("", 0, 1.0, 1.0).code(),
            StatusCode::invalidInput);
  EXPECT_TRUE(writer->addScalar("ok", 0, 1.0, 1.0)) << "not sticky";
}

TEST_F(TensorBoardEventsTest, FullDiskIsAnErrorNotACrash) {
  if (!fs::exists("/dev/full"))
    GTEST_SKIP() << "no /dev/full";
  std::unique_ptr<TensorBoardWriter> writer;
  Status s = TensorBoardWriter::openFile("/dev/full", writer);
  ASSERT_FALSE(s) << "the first event cannot be written";
  EXPECT_EQ(writer, nullptr);
  EXPECT_EQ(s.code(), StatusCode::resourceExhausted) << s.message();
  EXPECT_NE(s.message().find("/dev/full"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(std::strerror(ENOSPC)), std::string::npos)
      << s.message();
}

TEST_F(TensorBoardEventsTest, FailedWriteLeavesWholeRecordsAndSticks) {
  // A file-size limit makes a write stop part way through a record (EFBIG
  // rather than SIGXFSZ once the signal is ignored), as a full disk would.
  std::string path = dir_ + "/limited";
  std::unique_ptr<TensorBoardWriter> writer;
  ASSERT_TRUE(TensorBoardWriter::openFile(path, writer));
  ASSERT_TRUE(writer->addScalar("epoch_loss", 1, 0.5, 1.0));
  uintmax_t whole = fs::file_size(path);

  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto oldHandler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit limited = old;
  limited.rlim_cur = whole + 20;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  Status s = writer->addScalar(std::string(100, 'x'), 2, 0.25, 2.0);
  Status again = writer->addScalar("epoch_loss", 3, 0.125, 3.0);
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, oldHandler);

  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(std::strerror(EFBIG)), std::string::npos)
      << s.message();
  EXPECT_EQ(again.message(), s.message()) << "the first error sticks";
  EXPECT_EQ(writer->flush().message(), s.message());
  EXPECT_EQ(writer->close().message(), s.message());
  EXPECT_EQ(fs::file_size(path), whole) << "cut back to whole records";
  std::vector<Event> events = readEvents(path);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].step, 1);
}

} // namespace

//===- ConvAlgoCacheTest.cpp - the cuDNN algorithm cache file -------------===//
//
// Keys, the file format, stale and corrupt files, atomic writes: the pure
// part of the CUDA backend's algorithm choice, on the CPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/ConvAlgoCache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using namespace graph::runtime;
using graph::runtime::cuda::ConvAlgoCache;
using graph::runtime::cuda::ConvAlgoChoice;
using graph::runtime::cuda::ConvAlgoKey;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kCudnn = 91900;

ConvAlgoKey seedConv() {
  ConvAlgoKey k;
  k.pass = "fwd";
  k.n = 256;
  k.h = 28;
  k.w = 28;
  k.c = 1;
  k.filters = 32;
  k.kh = 3;
  k.kw = 3;
  k.workspaceLimit = uint64_t(256) << 20;
  k.device = "NVIDIA H100 80GB HBM3";
  k.cudnnVersion = kCudnn;
  k.precision = "tf32";
  return k;
}

std::string readFile(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void writeFile(const fs::path &p, const std::string &text) {
  std::ofstream(p, std::ios::binary) << text;
}

struct TempDir {
  fs::path path;
  TempDir() {
    path =
        fs::temp_directory_path() /
        ("conv-algo-cache-" +
         std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

} // namespace

TEST(ConvAlgoKey, EveryFieldTheChoiceDependsOnChangesTheKey) {
  const std::string base = seedConv().text();
  EXPECT_EQ(base, "pass=fwd;n=256;h=28;w=28;c=1;filters=32;kernel=3x3;"
                  "stride=1x1;dilation=1x1;pad=0x0;workspace=268435456;"
                  "device=NVIDIA H100 80GB HBM3;cudnn=91900;precision=tf32");
  std::vector<void (*)(ConvAlgoKey &)> changes = {
      [](ConvAlgoKey &k) { k.pass = "bwd_data"; },
      [](ConvAlgoKey &k) { k.n = 128; },
      [](ConvAlgoKey &k) { k.h = 27; },
      [](ConvAlgoKey &k) { k.w = 27; },
      [](ConvAlgoKey &k) { k.c = 3; },
      [](ConvAlgoKey &k) { k.filters = 64; },
      [](ConvAlgoKey &k) { k.groups = 32; },
      [](ConvAlgoKey &k) { k.kh = 5; },
      [](ConvAlgoKey &k) { k.kw = 5; },
      [](ConvAlgoKey &k) { k.strideH = 2; },
      [](ConvAlgoKey &k) { k.strideW = 2; },
      [](ConvAlgoKey &k) { k.dilationH = 2; },
      [](ConvAlgoKey &k) { k.dilationW = 2; },
      [](ConvAlgoKey &k) { k.padH = 1; },
      [](ConvAlgoKey &k) { k.padW = 1; },
      [](ConvAlgoKey &k) { k.workspaceLimit = 1 << 20; },
      [](ConvAlgoKey &k) { k.device = "NVIDIA H200"; },
      [](ConvAlgoKey &k) { k.cudnnVersion = 90100; },
      [](ConvAlgoKey &k) { k.precision = "fp32"; },
  };
  std::set<std::string> seen = {base};
  for (auto change : changes) {
    ConvAlgoKey k = seedConv();
    change(k);
    EXPECT_TRUE(seen.insert(k.text()).second) << k.text();
  }
}

TEST(ConvAlgoKey, GroupsAreWrittenOnlyWhenGroupedAndReadBack) {
  ConvAlgoKey k = seedConv();
  k.c = 32;
  k.groups = 32;
  std::string text = k.text();
  EXPECT_NE(text.find(";filters=32;groups=32;kernel=3x3;"), std::string::npos)
      << text;
  ConvAlgoCache cache;
  cache.insert(k, {2, 0, 0, 0.5f});
  cache.insert(seedConv(), {1, 0, 0, 0.5f});
  ConvAlgoCache reread;
  std::string why;
  int stale = 0;
  ASSERT_TRUE(reread.parse(cache.serialize(), kCudnn, why, stale)) << why;
  ASSERT_TRUE(reread.find(k).has_value());
  EXPECT_EQ(reread.find(k)->algo, 2);
  EXPECT_EQ(reread.find(seedConv())->algo, 1);
  ConvAlgoKey ungrouped = k;
  ungrouped.groups = 1;
  EXPECT_FALSE(reread.find(ungrouped).has_value());
}

TEST(ConvAlgoKey, TheDeviceNameCannotBreakTheFormat) {
  ConvAlgoKey k = seedConv();
  k.device = "odd;name=with\ttab\nand newline";
  std::string text = k.text();
  EXPECT_NE(text.find("device=odd name with tab and newline;"),
            std::string::npos)
      << text;
  ConvAlgoCache cache;
  cache.insert(k, {1, 0, 0, 0.5f});
  ConvAlgoCache reread;
  std::string why;
  int stale = 0;
  ASSERT_TRUE(reread.parse(cache.serialize(), kCudnn, why, stale)) << why;
  EXPECT_TRUE(reread.find(k).has_value());
}

TEST(ConvAlgoCache, SavedChoicesComeBackFromTheFile) {
  TempDir dir;
  const std::string path =
      ConvAlgoCache::pathBeside((dir.path / "seed.plan").string());
  EXPECT_EQ(path, (dir.path / "seed.plan.cudnn-algos").string());
  ConvAlgoCache cache;
  ConvAlgoKey fwd = seedConv(), bwd = seedConv();
  bwd.pass = "bwd_filter";
  cache.insert(fwd, {1, 2, 4096, 0.25f});
  cache.insert(bwd, {3, 1, 0, 1.5f});
  EXPECT_TRUE(cache.dirty());
  ASSERT_TRUE(cache.save(path));
  EXPECT_FALSE(cache.dirty());
  for (const auto &e : fs::directory_iterator(dir.path))
    EXPECT_FALSE(e.path().string().ends_with(".tmp"))
        << "the temporary file is renamed: " << e.path();

  ConvAlgoCache loaded;
  std::vector<std::string> warnings;
  loaded.load(path, kCudnn, warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(loaded.size(), 2u);
  EXPECT_FALSE(loaded.dirty());
  ASSERT_TRUE(loaded.find(fwd).has_value());
  EXPECT_EQ(*loaded.find(fwd), (ConvAlgoChoice{1, 2, 4096, 0}));
  EXPECT_EQ(loaded.find(bwd)->algo, 3);
  EXPECT_FLOAT_EQ(loaded.find(bwd)->milliseconds, 1.5f);
  // Another precision is another key: not found.
  ConvAlgoKey fp32 = fwd;
  fp32.precision = "fp32";
  EXPECT_FALSE(loaded.find(fp32).has_value());
}

TEST(ConvAlgoCache, AMissingFileIsAnEmptyCacheWithoutWarning) {
  TempDir dir;
  ConvAlgoCache cache;
  std::vector<std::string> warnings;
  cache.load((dir.path / "none.cudnn-algos").string(), kCudnn, warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(cache.size(), 0u);
}

TEST(ConvAlgoCache, EntriesOfAnotherCudnnVersionAreStaleAndDropped) {
  TempDir dir;
  const std::string path = (dir.path / "p.cudnn-algos").string();
  ConvAlgoCache old;
  ConvAlgoKey current = seedConv(), previous = seedConv();
  previous.cudnnVersion = 90100;
  old.insert(current, {1, 0, 0, 0});
  old.insert(previous, {2, 0, 0, 0});
  ASSERT_TRUE(old.save(path));

  ConvAlgoCache cache;
  std::vector<std::string> warnings;
  cache.load(path, kCudnn, warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("1 entries of another cuDNN version dropped"),
            std::string::npos)
      << warnings[0];
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_TRUE(cache.find(current).has_value());
  EXPECT_FALSE(cache.find(previous).has_value());
  EXPECT_TRUE(cache.dirty()) << "the file is rewritten without them";
}

TEST(ConvAlgoCache, ACorruptFileIsIgnoredWholeWithAWarning) {
  TempDir dir;
  const std::string path = (dir.path / "p.cudnn-algos").string();
  ConvAlgoCache good;
  good.insert(seedConv(), {1, 0, 0, 0.5f});
  const std::string text = good.serialize();
  const std::string key = seedConv().text();

  struct Corruption {
    const char *what;
    std::string text;
    const char *reason;
  };
  std::vector<Corruption> corruptions = {
      {"empty", "", "first line"},
      {"another header", "graph-cudnn-algos 2\nend 0\n", "first line"},
      {"truncated", text.substr(0, text.size() - 6), "no end line"},
      {"wrong count", "graph-cudnn-algos 1\n" + key + "\t1 0 0 0.5\nend 2\n",
       "does not count"},
      {"no tab", "graph-cudnn-algos 1\n" + key + " 1 0 0 0.5\nend 1\n",
       "no tab"},
      {"bad key", "graph-cudnn-algos 1\npass=fwd;n=x\t1 0 0 0.5\nend 1\n",
       "malformed key"},
      {"reordered key",
       "graph-cudnn-algos 1\nn=256;" + key.substr(0, key.find(";n=")) +
           key.substr(key.find(";h=")) + "\t1 0 0 0.5\nend 1\n",
       "malformed key"},
      {"bad choice", "graph-cudnn-algos 1\n" + key + "\t1 zero 0 0.5\nend 1\n",
       "malformed choice"},
      {"extra field", "graph-cudnn-algos 1\n" + key + "\t1 0 0 0.5 7\nend 1\n",
       "malformed choice"},
      {"negative algo", "graph-cudnn-algos 1\n" + key + "\t-1 0 0 0.5\nend 1\n",
       "malformed choice"},
      {"repeated key",
       "graph-cudnn-algos 1\n" + key + "\t1 0 0 0.5\n" + key +
           "\t2 0 0 0.5\nend 2\n",
       "repeats a key"},
      {"after the end", text + key + "\t1 0 0 0.5\n", "follows the end"},
  };
  for (const Corruption &c : corruptions) {
    writeFile(path, c.text);
    ConvAlgoCache cache;
    cache.insert(seedConv(), {9, 0, 0, 0}); // load() replaces what was there
    std::vector<std::string> warnings;
    cache.load(path, kCudnn, warnings);
    ASSERT_EQ(warnings.size(), 1u) << c.what;
    EXPECT_NE(warnings[0].find("ignored"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find(c.reason), std::string::npos)
        << c.what << ": " << warnings[0];
    EXPECT_EQ(cache.size(), 0u) << c.what;
    EXPECT_TRUE(cache.dirty()) << c.what << ": the file is to be rewritten";
  }
  // The well-formed text itself parses.
  writeFile(path, text);
  ConvAlgoCache cache;
  std::vector<std::string> warnings;
  cache.load(path, kCudnn, warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(cache.size(), 1u);
}

TEST(ConvAlgoCache, SavingReplacesTheFileWhole) {
  TempDir dir;
  const std::string path = (dir.path / "p.cudnn-algos").string();
  writeFile(path, "garbage that is not a cache\n");
  ConvAlgoCache cache;
  cache.insert(seedConv(), {4, 1, 128, 2.0f});
  ASSERT_TRUE(cache.save(path));
  EXPECT_EQ(readFile(path), cache.serialize());
  EXPECT_EQ(readFile(path).rfind("graph-cudnn-algos 1\n", 0), 0u);
  // A directory that cannot be written is an error the caller reports.
  Status s = cache.save((dir.path / "missing" / "p.cudnn-algos").string());
  EXPECT_FALSE(s);
}

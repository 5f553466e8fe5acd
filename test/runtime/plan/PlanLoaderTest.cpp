//===- PlanLoaderTest.cpp - the runtime trusts no plan --------------------===//
//
// A small valid plan is built here with the FlatBuffers API, then broken one
// way at a time: each fault must be reported by name, and no byte sequence
// (every truncation, random corruption) may crash the loader.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/PlanLoader.h"

#include <cstdio>

#include <fstream>

#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <random>

#include <unistd.h>

namespace graph::runtime {
namespace {

namespace fb = flatbuffers;

/// The knobs a test turns to break the plan.
struct PlanSpec {
  uint32_t version = kPlanVersion;
  int32_t replicas = 1;
  int64_t arenaBytes = 48;
  int32_t allocDevice = 0;
  int64_t allocOffset = 0;
  std::vector<int64_t> allocShape = {4, 3};
  std::vector<int64_t> variableShape = {3};
  int32_t variableIndex = 0;
  int32_t viewSource = 2; // the alloc
  int64_t viewOffset = 0;
  std::string kernel = "bias_add";
  int32_t launchOut = 2;
  bool waitBeforeRecord = false;
  int32_t numEvents = 1;
  bool withProgram = true;
  std::string variableName = "dense/bias";
  /// The variable's Keras form, when stored in another layout.
  std::optional<std::vector<int64_t>> logicalShape;
  std::optional<std::vector<int32_t>> logicalPermutation;
  /// More copies of the launch, as a model with many layers has.
  int32_t extraLaunches = 0;
  /// The model's outputs: each one's name and labels input.
  std::vector<std::pair<std::string, std::string>> outputs = {{"", "labels"}};
};

std::vector<uint8_t> buildPlan(const PlanSpec &s) {
  fb::FlatBufferBuilder b;
  auto shape3 = b.CreateVector(std::vector<int64_t>{3});
  auto shape43 = b.CreateVector(std::vector<int64_t>{4, 3});
  auto variableShape = b.CreateVector(s.variableShape);
  auto allocShape = b.CreateVector(s.allocShape);
  auto logicalShape = s.logicalShape ? b.CreateVector(*s.logicalShape) : 0;
  auto logicalPermutation =
      s.logicalPermutation ? b.CreateVector(*s.logicalPermutation) : 0;
  auto variable = plan::CreateVariable(
      b, b.CreateString(s.variableName), variableShape, plan::DType::f32,
      plan::CreateInitializer(b, plan::InitKind::zeros), true, logicalShape,
      logicalPermutation);
  auto input = plan::CreateInput(b, b.CreateString("input_layer"), shape43,
                                 plan::DType::f32);
  auto labels =
      plan::CreateInput(b, b.CreateString("labels"), shape43, plan::DType::f32);
  std::vector<fb::Offset<plan::Output>> outputs;
  for (const auto &[name, labelsInput] : s.outputs)
    outputs.push_back(plan::CreateOutputDirect(
        b, name.c_str(), plan::LossKind::categorical_crossentropy, false,
        labelsInput.c_str(), "predictions"));
  auto training = plan::CreateTraining(
      b, plan::LossKind::categorical_crossentropy, false,
      plan::OptimizerKind::adam, 0, 0, 4, 0, b.CreateVector(outputs));

  std::vector<fb::Offset<plan::Program>> programs;
  if (s.withProgram) {
    std::vector<fb::Offset<plan::Buffer>> buffers = {
        plan::CreateBuffer(b, plan::BufferKind::input, 0, shape43,
                           plan::DType::f32, 0, -1, 0, 0),
        plan::CreateBuffer(b, plan::BufferKind::variable, 0, shape3,
                           plan::DType::f32, 0, s.variableIndex),
        plan::CreateBuffer(b, plan::BufferKind::arena, s.allocDevice,
                           allocShape, plan::DType::f32, s.allocOffset),
        plan::CreateBuffer(b, plan::BufferKind::view, 0, shape3,
                           plan::DType::f32, s.viewOffset, -1, -1, -1,
                           s.viewSource),
    };
    std::vector<fb::Offset<plan::Op>> ops;
    auto record = [&] {
      ops.push_back(plan::CreateOp(b, plan::OpKind::record,
                                   plan::StreamKind::compute, 0, 0, 0, 0, 0,
                                   0));
    };
    auto wait = [&] {
      ops.push_back(plan::CreateOp(b, plan::OpKind::wait,
                                   plan::StreamKind::copy, 0, 0, 0, 0, 0, 0));
    };
    auto kernel = b.CreateString(s.kernel);
    auto launchIn = b.CreateVector(std::vector<int32_t>{0, 1});
    auto launchOut = b.CreateVector(std::vector<int32_t>{s.launchOut});
    for (int32_t i = 0; i <= s.extraLaunches; ++i)
      ops.push_back(plan::CreateOp(b, plan::OpKind::launch,
                                   plan::StreamKind::compute, 0, kernel,
                                   launchIn, launchOut));
    if (s.waitBeforeRecord) {
      wait();
      record();
    } else {
      record();
      wait();
    }
    ops.push_back(plan::CreateOp(b, plan::OpKind::output,
                                 plan::StreamKind::compute, 0, 0,
                                 b.CreateVector(std::vector<int32_t>{3}), 0, 0,
                                 -1, b.CreateString("loss"), 0));
    programs.push_back(plan::CreateProgram(
        b, b.CreateString("train_x1"), plan::ProgramKind::train, s.replicas,
        b.CreateVector(buffers), b.CreateVector(ops), s.numEvents,
        b.CreateVector(std::vector<int64_t>(s.replicas, s.arenaBytes))));
  }
  auto root = plan::CreatePlan(
      b, s.version, b.CreateString("m"),
      b.CreateVector(std::vector<fb::Offset<plan::Variable>>{variable}),
      b.CreateVector(std::vector<fb::Offset<plan::Input>>{input, labels}),
      training, b.CreateVector(programs));
  plan::FinishPlanBuffer(b, root);
  return std::vector<uint8_t>(b.GetBufferPointer(),
                              b.GetBufferPointer() + b.GetSize());
}

/// The loader's verdict on `bytes`.
Status check(const std::vector<uint8_t> &bytes) {
  const plan::Plan *out = nullptr;
  return verifyPlan(bytes.data(), bytes.size(), "test.plan", out);
}

void expectFault(const PlanSpec &spec, const std::string &fragment) {
  Status s = check(buildPlan(spec));
  ASSERT_FALSE(s.isOk()) << "expected: " << fragment;
  EXPECT_NE(s.message().find(fragment), std::string::npos) << s.message();
  EXPECT_EQ(s.message().rfind("test.plan: ", 0), 0u) << s.message();
}

TEST(PlanLoader, AcceptsAValidPlan) {
  Status s = check(buildPlan({}));
  EXPECT_TRUE(s.isOk()) << s.message();
}

// FlatBuffers' verifier stops at 1,000,000 tables by default, which the
// plan of a model with some 10,000 layers and four programs exceeds.
TEST(PlanLoader, AcceptsAPlanOfMoreThanAMillionTables) {
  Status s = check(buildPlan({.extraLaunches = 1100000}));
  EXPECT_TRUE(s.isOk()) << s.message();
}

TEST(PlanLoader, RejectsEachSemanticFault) {
  expectFault({.version = kPlanVersion + 1}, "recompile it with graphc");
  expectFault({.outputs = {}}, "training: no output");
  expectFault({.outputs = {{"a", "labels"}, {"b", "labels"}}},
              "output labels input 'labels' is not a labels input, or is "
              "another output's");
  expectFault({.outputs = {{"", "labels"}, {"b", "labels:b"}}},
              "one of several outputs has no name");
  expectFault({.outputs = {{"a", "labels:a"}}},
              "no input 'labels:a' for an output's labels");
  expectFault({.replicas = 0}, "replicas must be >= 1");
  expectFault({.arenaBytes = 40}, "outside the arena of device 0");
  expectFault({.allocDevice = 1}, "device 1 is outside the program's devices");
  expectFault({.allocOffset = -8}, "outside the arena");
  expectFault({.variableIndex = 5}, "variable index out of range");
  expectFault({.viewSource = 3}, "a view must follow its source buffer");
  expectFault({.viewOffset = 11}, "view outside its source buffer");
  expectFault({.kernel = ""}, "launch without a kernel");
  expectFault({.launchOut = 9}, "buffer index 9 out of range");
  expectFault({.waitBeforeRecord = true}, "before it is recorded");
  expectFault({.numEvents = 0}, "event out of range");
  expectFault({.withProgram = false}, "no program");
  // A name graphrun would write into a checkpoint's JSON header.
  for (std::string name :
       {std::string("dense/\xff"),
        std::string("a\xc0\xaf"
                    "b"),
        std::string("\xed\xa0\x80"), std::string("tab\there"), std::string()})
    expectFault({.variableName = name},
                "has a name that is empty or not printable UTF-8");
}

// A variable stored in another layout names a Keras form its stored value
// can come from.
TEST(PlanLoader, ChecksAVariablesKerasForm) {
  // Stored [3], Keras' [1, 3].
  Status s =
      check(buildPlan({.logicalShape = std::vector<int64_t>{1, 3},
                       .logicalPermutation = std::vector<int32_t>{1, 0}}));
  EXPECT_TRUE(s.isOk()) << s.message();
  const char *together = "must come together, with one axis each";
  expectFault({.logicalShape = std::vector<int64_t>{3}}, together);
  expectFault({.logicalPermutation = std::vector<int32_t>{0}}, together);
  expectFault({.logicalShape = std::vector<int64_t>{1, 3},
               .logicalPermutation = std::vector<int32_t>{0}},
              together);
  expectFault({.logicalShape = std::vector<int64_t>{1, 3},
               .logicalPermutation = std::vector<int32_t>{1, 1}},
              "logical_permutation is not a permutation");
  expectFault({.logicalShape = std::vector<int64_t>{1, 3},
               .logicalPermutation = std::vector<int32_t>{2, 0}},
              "logical_permutation is not a permutation");
  expectFault({.logicalShape = std::vector<int64_t>{2, 3},
               .logicalPermutation = std::vector<int32_t>{1, 0}},
              "logical_shape does not hold as many elements as the shape");
  expectFault({.logicalShape = std::vector<int64_t>{-1, -3},
               .logicalPermutation = std::vector<int32_t>{1, 0}},
              "logical_shape does not hold as many elements as the shape");
}

// Sizes and offsets near 2^63 used to overflow (undefined behaviour; the
// sums wrapped round and passed the arena check). Found by the plan loader
// fuzzer once UBSan stopped at its first report.
TEST(PlanLoader, RejectsSizesThatWouldOverflow) {
  constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();
  expectFault({.allocShape = {int64_t(1) << 62, 4}},
              "buffer 2: more than 1024 GiB in one tensor");
  expectFault({.allocShape = {4, -3}}, "buffer 2: negative dimension");
  expectFault({.variableShape = {-3}},
              "variable 'dense/bias': negative dimension");
  expectFault({.allocOffset = kHuge - 8}, "outside the arena of device 0");
  expectFault({.viewOffset = kHuge}, "view outside its source buffer");
  expectFault({.arenaBytes = kHuge}, "arena of 9223372036854775807 bytes");
}

TEST(PlanLoader, RejectsForeignAndEmptyFiles) {
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n',
                              0,    0,   0,   13,  'I',  'H',  'D',  'R'};
  Status s = check(png);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("not a plan file"), std::string::npos);
  EXPECT_FALSE(check({}).isOk());
}

TEST(PlanLoader, EveryTruncationIsAnErrorNotACrash) {
  std::vector<uint8_t> bytes = buildPlan({});
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + n);
    EXPECT_FALSE(check(prefix).isOk()) << "prefix of " << n << " bytes";
  }
}

TEST(PlanLoader, RandomCorruptionNeverCrashes) {
  std::vector<uint8_t> bytes = buildPlan({});
  std::mt19937 rng(7);
  int rejected = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> corrupt = bytes;
    for (int flips = 1 + trial % 4; flips > 0; --flips)
      corrupt[rng() % corrupt.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
    // Either a clean rejection or a plan that passed every check; under
    // ASan (test/fuzz) any out-of-bounds read would abort here.
    rejected += !check(corrupt).isOk();
  }
  EXPECT_GT(rejected, 0);
}

TEST(PlanLoader, AcceptsUtf8Names) {
  EXPECT_TRUE(check(buildPlan({.variableName = "d\xc3\xa9nse/\xe2\x82\xac"})));
}

TEST(PlanLoader, MissingFileNamesThePath) {
  LoadedPlan loaded;
  Status s = loadPlan("/nonexistent/model.plan", loaded);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "/nonexistent/model.plan: cannot open the plan file: "
                         "No such file or directory");
}

TEST(PlanLoader, ADirectoryIsNotAPlan) {
  LoadedPlan loaded;
  Status s = loadPlan("/tmp", loaded);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "/tmp: is a directory, not a plan file (graphc "
                         "writes one with -o)");
}

/// Writes `bytes` to a file of this test's and loads it.
Status loadBytes(const std::vector<uint8_t> &bytes) {
  // The process's own file: ctest -j runs this file's tests side by side.
  std::string path = ::testing::TempDir() + "plan-loader-checksum-" +
                     std::to_string(::getpid()) + ".plan";
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char *>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  }
  LoadedPlan loaded;
  Status s = loadPlan(path, loaded);
  std::remove(path.c_str());
  return s;
}

TEST(PlanLoader, ChecksumCatchesEveryFlip) {
  std::vector<uint8_t> good = buildPlan({});
  appendPlanChecksum(good);
  ASSERT_TRUE(loadBytes(good));
  // 1000 random changes of one or two bytes anywhere, trailer included:
  // CRC-32C catches every one (any error in 32 bits or fewer), so none may
  // load, let alone train.
  std::mt19937 rng(31);
  int silent = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    std::vector<uint8_t> bad = good;
    int flips = 1 + trial % 2;
    for (int f = 0; f < flips; ++f) {
      size_t at = rng() % bad.size();
      bad[at] ^= static_cast<uint8_t>(1 + rng() % 255);
    }
    if (bad == good)
      continue;
    Status s = loadBytes(bad);
    silent += s.isOk();
    if (!s.isOk())
      EXPECT_TRUE(s.message().find("corrupt") != std::string::npos ||
                  s.message().find("no checksum") != std::string::npos ||
                  s.message().find("identifier") != std::string::npos)
          << s.message();
  }
  EXPECT_EQ(silent, 0);
}

TEST(PlanLoader, AFileWithoutChecksumIsRefused) {
  Status s = loadBytes(buildPlan({}));
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("no checksum at its end"), std::string::npos)
      << s.message();
}

} // namespace
} // namespace graph::runtime

//===- KerasWeightsTest.cpp - --init-weights from Keras' own files --------===//
//
// The files are written at test time by keras_weights_fixtures.py with h5py,
// laid out as Keras lays them out (the script cites the Keras functions it
// follows), so no Keras is needed; RealKeras also reads files written by
// real Keras 3 when Keras is installed (a venv or GRAPH_TEST_PYTHON), and
// skips, saying so, when not.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/KerasWeights.h"
#include "runtime/checkpoint/Weights.h"
#include "runtime/plan/PlanLoader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <unistd.h>

namespace graph::runtime::checkpoint {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

/// The fixtures' model, with the plan's variables in an order that is not
/// Keras' (bias before kernel, batch-norm weights shuffled) so that matching
/// by position has to use Keras' order, and with optimizer slots, which a
/// weights file never sets.
std::vector<uint8_t> kerasPlan() {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<plan::Variable>> vars;
  auto add = [&](const char *name, std::vector<int64_t> shape) {
    vars.push_back(plan::CreateVariableDirect(
        b, name, &shape, plan::DType::f32,
        plan::CreateInitializer(b, plan::InitKind::glorot_uniform), true));
  };
  add("dense_1/bias", {3});
  add("dense_1/kernel", {16, 3});
  add("block1_conv1/kernel", {3, 3, 2, 4});
  add("block1_conv1/bias", {4});
  add("bn/beta", {4});
  add("bn/moving_variance", {4});
  add("bn/gamma", {4});
  add("bn/moving_mean", {4});
  add("dense_1/kernel/m", {16, 3});
  add("block1_conv1/kernel/m", {3, 3, 2, 4});
  b.Finish(plan::CreatePlanDirect(b, kPlanVersion, "keras", &vars));
  return std::vector<uint8_t>(b.GetBufferPointer(),
                              b.GetBufferPointer() + b.GetSize());
}

/// What keras_weights_fixtures.py writes: weight k (Keras order, from 1)
/// holds k + i / 8 at flat index i.
const std::map<std::string, int> kWeightNumber = {
    {"block1_conv1/kernel", 1},
    {"block1_conv1/bias", 2},
    {"bn/gamma", 3},
    {"bn/beta", 4},
    {"bn/moving_mean", 5},
    {"bn/moving_variance", 6},
    {"dense_1/kernel", 7},
    {"dense_1/bias", 8},
};

std::vector<float> values(const MirroredVariables &vars,
                          const std::string &name) {
  int v = vars.find(name);
  EXPECT_GE(v, 0) << name;
  std::vector<float> out(static_cast<size_t>(vars.bytes(v)) / 4);
  EXPECT_TRUE(vars.read(v, out.data()));
  return out;
}

std::vector<float> expected(const MirroredVariables &vars,
                            const std::string &name) {
  std::vector<float> out(static_cast<size_t>(vars.bytes(vars.find(name))) / 4);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] =
        static_cast<float>(kWeightNumber.at(name)) + static_cast<float>(i) / 8;
  return out;
}

std::string run(const std::string &command) {
  std::string output;
  FILE *pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe)
    return "popen failed";
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0)
    output.append(buffer, n);
  int status = ::pclose(pipe);
  return status == 0 ? "" : output.empty() ? "failed" : output;
}

class KerasWeightsTest : public ::testing::Test {
protected:
  /// Writes the fixtures once; without python3 and h5py every test skips.
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() /
                        ("keras-weights-test-" + std::to_string(::getpid())));
    fs::remove_all(*dir_);
    *setupError_ = run(std::string(GRAPH_TEST_PYTHON) + " " +
                       GRAPH_SOURCE_DIR
                       "/test/runtime/checkpoint/keras_weights_fixtures.py " +
                       dir_->string());
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }

  void SetUp() override {
    if (!setupError_->empty())
      GTEST_SKIP() << GRAPH_TEST_PYTHON
                   << " could not write the fixtures (python3-h5py "
                      "missing?): "
                   << *setupError_;
    plan_ = kerasPlan();
    ASSERT_TRUE(vars_.initialize(*plan::GetPlan(plan_.data()), 2, 7));
  }

  static std::string path(const std::string &name) {
    return (*dir_ / name).string();
  }

  /// Loads `name` exactly and checks every weight holds the fixture's
  /// numbers and no slot changed.
  void expectLoads(const std::string &name, const std::string &format) {
    std::vector<float> slot = values(vars_, "dense_1/kernel/m");
    WeightsReport report;
    Status s = loadWeights(path(name), vars_, WeightsMatch::exact, &report);
    ASSERT_TRUE(s) << s.message();
    EXPECT_EQ(report.format, format);
    EXPECT_EQ(report.loaded.size(), kWeightNumber.size());
    EXPECT_TRUE(report.leftInitial.empty());
    for (const auto &[weight, k] : kWeightNumber)
      EXPECT_EQ(values(vars_, weight), expected(vars_, weight)) << weight;
    EXPECT_EQ(values(vars_, "dense_1/kernel/m"), slot);
  }

  /// Loads `name` exactly, expects an error, and checks nothing changed.
  std::string loadError(const std::string &name) {
    std::map<std::string, std::vector<float>> before;
    for (const auto &[weight, k] : kWeightNumber)
      before[weight] = values(vars_, weight);
    Status s = loadWeights(path(name), vars_);
    EXPECT_FALSE(s) << name;
    for (const auto &[weight, k] : kWeightNumber)
      EXPECT_EQ(values(vars_, weight), before[weight]) << weight;
    return s.message();
  }

  static fs::path *dir_;
  static std::string *setupError_;
  std::vector<uint8_t> plan_;
  MirroredVariables vars_;
};

fs::path *KerasWeightsTest::dir_ = nullptr;
std::string *KerasWeightsTest::setupError_ = new std::string;

// --- Legacy HDF5 ------------------------------------------------------------

TEST_F(KerasWeightsTest, LegacyTfKeras2WithColonZeroNames) {
  expectLoads("tf2.h5", "Keras legacy HDF5");
}

TEST_F(KerasWeightsTest, LegacyWeightNamesOnlyLocateTheData) {
  // "vgg16/block1_conv1/kernel:0", "bn_1/gamma_1:0", and Keras 1's
  // "block1_conv1_W_1:0" as in keras.applications' VGG16 files.
  expectLoads("prefix.h5", "Keras legacy HDF5");
  ASSERT_TRUE(vars_.initialize(*plan::GetPlan(plan_.data()), 1, 99));
  expectLoads("keras1.h5", "Keras legacy HDF5");
}

TEST_F(KerasWeightsTest, LegacyWholeModelFile) {
  // model.save("m.h5"): the weights under /model_weights.
  expectLoads("full_model.h5", "Keras legacy HDF5");
}

TEST_F(KerasWeightsTest, LegacyAttributesSplitIntoChunks) {
  // layer_names0/1 and weight_names0/1, as fixed-length byte strings.
  expectLoads("chunked.h5", "Keras legacy HDF5");
}

// --- Keras 3 ----------------------------------------------------------------

TEST_F(KerasWeightsTest, Keras3WeightsH5) {
  // Groups named by class (layers/dense holds layer dense_1's): the vars
  // group's name attribute matches.
  expectLoads("model.weights.h5", "Keras 3 .weights.h5");
}

TEST_F(KerasWeightsTest, BatchNormalizationWeightsByKerasOrder) {
  // The plan lists beta, moving_variance, gamma, moving_mean; the file
  // gamma, beta, moving_mean, moving_variance (vars/0..3).
  for (const char *file : {"model.weights.h5", "tf2.h5"}) {
    ASSERT_TRUE(loadWeights(path(file), vars_)) << file;
    EXPECT_THAT(values(vars_, "bn/gamma"), ElementsAre(3, 3.125, 3.25, 3.375));
    EXPECT_THAT(values(vars_, "bn/beta"), ElementsAre(4, 4.125, 4.25, 4.375));
    EXPECT_THAT(values(vars_, "bn/moving_mean"),
                ElementsAre(5, 5.125, 5.25, 5.375));
    EXPECT_THAT(values(vars_, "bn/moving_variance"),
                ElementsAre(6, 6.125, 6.25, 6.375));
  }
}

TEST_F(KerasWeightsTest, ConvertsFloat64Float16AndBfloat16) {
  expectLoads("f64.weights.h5", "Keras 3 .weights.h5");
  for (const char *file : {"f16.weights.h5", "bf16.weights.h5"}) {
    ASSERT_TRUE(vars_.initialize(*plan::GetPlan(plan_.data()), 1, 99));
    expectLoads(file, "Keras 3 .weights.h5");
  }
}

TEST_F(KerasWeightsTest, KerasArchiveMember) {
  expectLoads("model.keras", "Keras 3 .keras archive");
  // The archive's optimizer state is not the model's weights.
  WeightsReport report;
  ASSERT_TRUE(
      loadWeights(path("model.keras"), vars_, WeightsMatch::exact, &report));
  EXPECT_THAT(report.skipped,
              ElementsAre(Pair("/optimizer", HasSubstr("optimizer's state"))));
}

TEST_F(KerasWeightsTest, KerasArchiveWithoutNamesMapsGroupsByItsConfig) {
  // Keras before the name attribute: layers/conv2d, layers/dense are
  // matched by replaying Keras' group naming over config.json's layers.
  expectLoads("noname.keras", "Keras 3 .keras archive");
}

TEST_F(KerasWeightsTest, DispatchIsByContentNotName) {
  fs::copy_file(path("tf2.h5"), path("tf2.safetensors"),
                fs::copy_options::overwrite_existing);
  expectLoads("tf2.safetensors", "Keras legacy HDF5");
  fs::copy_file(path("model.keras"), path("model.bin"),
                fs::copy_options::overwrite_existing);
  expectLoads("model.bin", "Keras 3 .keras archive");
  // And safetensors named like Keras' files are still safetensors.
  ASSERT_TRUE(saveWeights(path("saved.h5"), vars_));
  ASSERT_TRUE(vars_.initialize(*plan::GetPlan(plan_.data()), 1, 99));
  expectLoads("saved.h5", "safetensors");
}

// --- Errors: each names the file and the weight, and changes nothing --------

TEST_F(KerasWeightsTest, MissingLayer) {
  EXPECT_EQ(loadError("missing.h5"),
            path("missing.h5") +
                ": no weights for layer 'dense_1' (the model's "
                "'dense_1/kernel' [16, 3], 'dense_1/bias' [3]); the file's "
                "layers with weights: block1_conv1, bn");
}

TEST_F(KerasWeightsTest, ExtraLayer) {
  EXPECT_EQ(loadError("extra.h5"),
            path("extra.h5") +
                ": /dense_9 (/dense_9/dense_9/kernel:0 [3, 2], "
                "/dense_9/dense_9/bias:0 [2]): layer 'dense_9' is not in the "
                "model; the file must hold exactly the model's 3 layers with "
                "weights: dense_1, block1_conv1, bn");
}

TEST_F(KerasWeightsTest, ExtraWeightInALayer) {
  EXPECT_EQ(loadError("extra_weight.h5"),
            path("extra_weight.h5") +
                ": /bn: layer 'bn' has 5 weights in the file and 4 in the "
                "model (file: /bn/bn/gamma:0 [4], /bn/bn/beta:0 [4], "
                "/bn/bn/moving_mean:0 [4], /bn/bn/moving_variance:0 [4], "
                "/bn/bn/extra:0 [4]; model: 'bn/gamma' [4], 'bn/beta' [4], "
                "'bn/moving_mean' [4], 'bn/moving_variance' [4]); weights "
                "match by position within a layer, so the counts must agree");
}

TEST_F(KerasWeightsTest, MissingWeightInALayer) {
  EXPECT_THAT(loadError("missing_weight.weights.h5"),
              HasSubstr(": /layers/batch_normalization/vars: layer 'bn' has "
                        "2 weights in the file and 4 in the model (file: "
                        "/layers/batch_normalization/vars/0 [4], "
                        "/layers/batch_normalization/vars/1 [4]; model:"));
}

TEST_F(KerasWeightsTest, WrongShape) {
  EXPECT_EQ(loadError("shape.h5"),
            path("shape.h5") +
                ": /dense_1/dense_1/kernel:0 (for the model's "
                "'dense_1/kernel'): has shape [3, 16]; the model's variable "
                "has shape [16, 3] (Keras layouts: HWIO conv kernels, [in, "
                "out] dense kernels)");
}

TEST_F(KerasWeightsTest, WrongDType) {
  EXPECT_EQ(loadError("dtype.h5"),
            path("dtype.h5") +
                ": /dense_1/dense_1/kernel:0 (for the model's "
                "'dense_1/kernel'): is int32; the model's variable is F32 "
                "(float32 is read, float64, float16 and bfloat16 are "
                "converted, nothing else is)");
}

TEST_F(KerasWeightsTest, NotAnHdf5File) {
  EXPECT_EQ(loadError("not_hdf5.h5"),
            path("not_hdf5.h5") +
                ": not an HDF5 file (it does not begin with HDF5's signature "
                "\\x89HDF\\r\\n\\x1a\\n); Keras' .h5 and .weights.h5 files "
                "are HDF5: is it the file Keras wrote, whole?");
}

TEST_F(KerasWeightsTest, TruncatedFile) {
  std::string message = loadError("truncated.h5");
  EXPECT_THAT(message, HasSubstr(path("truncated.h5") +
                                 ": not a readable HDF5 file: truncated file"));
  EXPECT_THAT(message, HasSubstr("(is it the whole file Keras wrote?)"));
}

TEST_F(KerasWeightsTest, KerasArchiveWithoutWeights) {
  EXPECT_EQ(loadError("noweights.keras"),
            path("noweights.keras") +
                ": the archive holds no model.weights.h5 (a .keras file "
                "written by Keras 3's model.save holds config.json, "
                "metadata.json and model.weights.h5)");
  EXPECT_THAT(loadError("npz.keras"),
              HasSubstr("it holds model.weights.npz, which graphrun does not "
                        "read"));
}

TEST_F(KerasWeightsTest, KerasArchiveCrcMismatch) {
  EXPECT_EQ(loadError("crc.keras"),
            path("crc.keras") +
                ": model.weights.h5: CRC mismatch (archive corrupt)");
}

TEST_F(KerasWeightsTest, RefusesLinksAndTheano) {
  EXPECT_THAT(loadError("softlink.h5"),
              HasSubstr(": /block1_conv1/block1_conv1/kernel:0: is a soft "
                        "link, which Keras never writes"));
  EXPECT_THAT(loadError("theano.h5"),
              HasSubstr(": /: was written by Keras with the Theano backend"));
}

TEST_F(KerasWeightsTest, Keras3GroupsWithoutNamesNeedTheArchive) {
  EXPECT_THAT(loadError("noname.weights.h5"),
              HasSubstr(path("noname.weights.h5") +
                        ": /layers/batch_normalization/vars "
                        "(/layers/batch_normalization/vars/0 [4], "));
  EXPECT_THAT(loadError("noname.weights.h5"),
              HasSubstr("records no layer name"));
}

// --- Partial loads (transfer learning) --------------------------------------

TEST_F(KerasWeightsTest, PartialLoadsTheBaseAndReportsTheHead) {
  // Like VGG16's notop file into a model with its own head.
  std::vector<float> head = values(vars_, "dense_1/kernel");
  EXPECT_THAT(loadError("notop.h5"),
              HasSubstr("no weights for layer 'dense_1'"));
  WeightsReport report;
  Status s =
      loadWeights(path("notop.h5"), vars_, WeightsMatch::partial, &report);
  ASSERT_TRUE(s) << s.message();
  EXPECT_THAT(report.loaded,
              ElementsAre("block1_conv1/kernel", "block1_conv1/bias",
                          "bn/gamma", "bn/beta", "bn/moving_mean",
                          "bn/moving_variance"));
  EXPECT_THAT(
      report.leftInitial,
      ElementsAre(Pair("dense_1/kernel", "layer 'dense_1' is not in the file"),
                  Pair("dense_1/bias", "layer 'dense_1' is not in the file")));
  EXPECT_TRUE(report.skipped.empty());
  for (const char *loaded : {"block1_conv1/kernel", "bn/moving_variance"})
    EXPECT_EQ(values(vars_, loaded), expected(vars_, loaded)) << loaded;
  EXPECT_EQ(values(vars_, "dense_1/kernel"), head);
  EXPECT_EQ(report.text("notop.h5"),
            "notop.h5 (Keras legacy HDF5): loaded 6 of 8 model weights\n"
            "  left at its initial value: dense_1/kernel (layer 'dense_1' is "
            "not in the file)\n"
            "  left at its initial value: dense_1/bias (layer 'dense_1' is "
            "not in the file)\n");
}

TEST_F(KerasWeightsTest, PartialReportsEverySkip) {
  std::vector<float> bnGamma = values(vars_, "bn/gamma");
  WeightsReport report;
  Status s =
      loadWeights(path("mixed.h5"), vars_, WeightsMatch::partial, &report);
  ASSERT_TRUE(s) << s.message();
  EXPECT_THAT(report.loaded, ElementsAre("dense_1/bias", "block1_conv1/kernel",
                                         "block1_conv1/bias"));
  const std::string counts =
      "layer 'bn' has 2 weights in the file and 4 in the model";
  EXPECT_THAT(report.leftInitial,
              ElementsAre(Pair("dense_1/kernel",
                               "the file's /dense_1/dense_1/kernel:0 has shape "
                               "[10, 3], the variable [16, 3]"),
                          Pair("bn/gamma", counts), Pair("bn/beta", counts),
                          Pair("bn/moving_mean", counts),
                          Pair("bn/moving_variance", counts)));
  EXPECT_THAT(
      report.skipped,
      ElementsAre(
          Pair("/fc1/fc1/kernel:0", "layer 'fc1' is not in the model"),
          Pair("/fc1/fc1/bias:0", "layer 'fc1' is not in the model"),
          Pair("/dense_1/dense_1/kernel:0",
               "shape [10, 3] does not fit the model's 'dense_1/kernel' "
               "[16, 3]"),
          Pair("/bn/bn/gamma:0", counts), Pair("/bn/bn/beta:0", counts)));
  EXPECT_EQ(values(vars_, "dense_1/bias"), expected(vars_, "dense_1/bias"));
  EXPECT_EQ(values(vars_, "bn/gamma"), bnGamma);
}

// --- VGG16-shaped ----------------------------------------------------------

/// keras_weights_fixtures.py's vgg16(): VGG16's layer names, few channels.
/// Each weight with its number in the fixtures' Keras order (from 1).
struct VggWeight {
  std::string name;
  std::vector<int64_t> shape;
  int number;
};

std::vector<VggWeight> vgg16Weights(bool top) {
  const std::pair<int, int64_t> blocks[] = {
      {2, 2}, {2, 3}, {3, 4}, {3, 4}, {3, 4}};
  std::vector<VggWeight> out;
  int64_t in = 3;
  int k = 0;
  for (int b = 1; b <= 5; ++b) {
    auto [convs, channels] = blocks[b - 1];
    for (int c = 1; c <= convs; ++c) {
      std::string layer =
          "block" + std::to_string(b) + "_conv" + std::to_string(c);
      out.push_back({layer + "/kernel", {3, 3, in, channels}, ++k});
      out.push_back({layer + "/bias", {channels}, ++k});
      in = channels;
    }
  }
  if (top)
    for (auto [layer, shape] :
         {std::pair<std::string, std::vector<int64_t>>{"fc1", {in, 6}},
          {"fc2", {6, 6}},
          {"predictions", {6, 5}}}) {
      out.push_back({layer + "/kernel", shape, ++k});
      out.push_back({layer + "/bias", {shape[1]}, ++k});
    }
  return out;
}

/// VGG16 with its head, the plan's variables in reverse (block5_conv3's
/// bias first), so that only names and Keras' order can match them.
std::vector<uint8_t> vgg16Plan() {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<plan::Variable>> vars;
  std::vector<VggWeight> weights = vgg16Weights(true);
  for (auto it = weights.rbegin(); it != weights.rend(); ++it)
    vars.push_back(plan::CreateVariableDirect(
        b, it->name.c_str(), &it->shape, plan::DType::f32,
        plan::CreateInitializer(b, plan::InitKind::glorot_uniform), true));
  b.Finish(plan::CreatePlanDirect(b, kPlanVersion, "vgg16", &vars));
  return std::vector<uint8_t>(b.GetBufferPointer(),
                              b.GetBufferPointer() + b.GetSize());
}

std::vector<float> numbered(const VggWeight &w) {
  int64_t n = 1;
  for (int64_t d : w.shape)
    n *= d;
  std::vector<float> out(static_cast<size_t>(n));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<float>(w.number) + static_cast<float>(i) / 8;
  return out;
}

TEST_F(KerasWeightsTest, Vgg16NotopBaseUnderANewHead) {
  // As keras.applications' vgg16_weights_tf_dim_ordering_tf_kernels_notop.h5
  // (Keras 1 weight names, weightless pools in layer_names) into VGG16 with
  // its head: exact refuses, naming the head; partial loads all thirteen
  // convolutions and leaves the head initial.
  std::vector<uint8_t> plan = vgg16Plan();
  MirroredVariables vars;
  ASSERT_TRUE(vars.initialize(*plan::GetPlan(plan.data()), 1, 7));
  std::vector<float> fc1 = values(vars, "fc1/kernel");
  Status s = loadWeights(path("vgg16_notop.h5"), vars);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(),
            path("vgg16_notop.h5") +
                ": no weights for layer 'predictions' (the model's "
                "'predictions/kernel' [6, 5], 'predictions/bias' [5]); the "
                "file's layers with weights: block1_conv1, block1_conv2, "
                "block2_conv1, block2_conv2, block3_conv1, block3_conv2, "
                "block3_conv3, block4_conv1, block4_conv2, block4_conv3, "
                "block5_conv1, block5_conv2, block5_conv3");
  EXPECT_EQ(values(vars, "fc1/kernel"), fc1);

  WeightsReport report;
  s = loadWeights(path("vgg16_notop.h5"), vars, WeightsMatch::partial, &report);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(report.loaded.size(), 26u);
  EXPECT_TRUE(report.skipped.empty());
  for (const VggWeight &w : vgg16Weights(false))
    EXPECT_EQ(values(vars, w.name), numbered(w)) << w.name;
  EXPECT_EQ(values(vars, "fc1/kernel"), fc1);
  EXPECT_EQ(report.text("vgg16_notop.h5"),
            "vgg16_notop.h5 (Keras legacy HDF5): loaded 26 of 32 model "
            "weights\n"
            "  left at its initial value: predictions/kernel (layer "
            "'predictions' is not in the file)\n"
            "  left at its initial value: predictions/bias (layer "
            "'predictions' is not in the file)\n"
            "  left at its initial value: fc2/kernel (layer 'fc2' is not in "
            "the file)\n"
            "  left at its initial value: fc2/bias (layer 'fc2' is not in "
            "the file)\n"
            "  left at its initial value: fc1/kernel (layer 'fc1' is not in "
            "the file)\n"
            "  left at its initial value: fc1/bias (layer 'fc1' is not in "
            "the file)\n");
}

TEST_F(KerasWeightsTest, Vgg16Keras3WithItsHead) {
  // Thirteen groups conv2d, conv2d_1, ... conv2d_12 (sorted by HDF5 as
  // conv2d_1, conv2d_10, ...): only their name attributes place them.
  std::vector<uint8_t> plan = vgg16Plan();
  MirroredVariables vars;
  ASSERT_TRUE(vars.initialize(*plan::GetPlan(plan.data()), 1, 7));
  WeightsReport report;
  Status s =
      loadWeights(path("vgg16.weights.h5"), vars, WeightsMatch::exact, &report);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(report.format, "Keras 3 .weights.h5");
  EXPECT_EQ(report.loaded.size(), 32u);
  for (const VggWeight &w : vgg16Weights(true))
    EXPECT_EQ(values(vars, w.name), numbered(w)) << w.name;
}

// --- Real Keras -------------------------------------------------------------

/// A python3 that imports Keras 3: $GRAPH_KERAS_PYTHON, or the venv
/// bench/keras-venv.sh creates, or GRAPH_TEST_PYTHON when Keras is
/// installed there; "" when none is.
std::string kerasPython() {
  if (const char *python = std::getenv("GRAPH_KERAS_PYTHON"))
    return python;
  std::string venv = GRAPH_SOURCE_DIR "/build/keras-venv/bin/python";
  if (fs::exists(venv))
    return venv;
  if (run(std::string(GRAPH_TEST_PYTHON) + " -c 'import keras'").empty())
    return GRAPH_TEST_PYTHON;
  return "";
}

TEST_F(KerasWeightsTest, RealKeras) {
  std::string python = kerasPython();
  if (python.empty())
    GTEST_SKIP() << "Keras is not installed (no GRAPH_KERAS_PYTHON, no venv "
                    "at " GRAPH_SOURCE_DIR "/build/keras-venv, and "
                 << GRAPH_TEST_PYTHON
                 << " cannot import keras; run bench/keras-venv.sh): files "
                    "written by real Keras not checked";
  fs::path out = *dir_ / "real";
  std::string error = run(python +
                          " " GRAPH_SOURCE_DIR "/test/runtime/checkpoint/"
                          "real_keras_weights.py " +
                          out.string());
  ASSERT_EQ(error, "") << "real_keras_weights.py failed";
  SafetensorsFile keras;
  ASSERT_TRUE(
      SafetensorsFile::read((out / "expected.safetensors").string(), keras));
  ASSERT_EQ(keras.tensors().size(), kWeightNumber.size());
  for (const char *file : {"model.weights.h5", "model.keras", "model.h5"}) {
    ASSERT_TRUE(vars_.initialize(*plan::GetPlan(plan_.data()), 1, 99));
    Status s = loadWeights((out / file).string(), vars_);
    ASSERT_TRUE(s) << s.message();
    for (const TensorInfo &t : keras.tensors()) {
      std::string_view data = keras.data(t);
      std::vector<float> held(data.size() / 4);
      std::memcpy(held.data(), data.data(), data.size());
      EXPECT_EQ(values(vars_, t.name), held) << file << ": " << t.name;
    }
  }
}

} // namespace
} // namespace graph::runtime::checkpoint

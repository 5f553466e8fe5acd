//===- CheckpointTest.cpp - weights files, checkpoints, resuming ----------===//

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/checkpoint/Weights.h"
#include "runtime/data/Pipeline.h"
#include "runtime/data/SyntheticDataset.h"
#include "runtime/plan/PlanLoader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <unistd.h>

namespace graph::runtime::checkpoint {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

/// A dense layer trained by Adam: two weights and their m and v slots.
std::vector<uint8_t> densePlan() {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<plan::Variable>> vars;
  auto add = [&](const char *name, std::vector<int64_t> shape,
                 plan::InitKind kind, bool trainable) {
    vars.push_back(plan::CreateVariableDirect(b, name, &shape, plan::DType::f32,
                                              plan::CreateInitializer(b, kind),
                                              trainable));
  };
  add("dense/kernel", {3, 2}, plan::InitKind::glorot_uniform, true);
  add("dense/bias", {2}, plan::InitKind::zeros, true);
  add("dense/kernel/m", {3, 2}, plan::InitKind::zeros, false);
  add("dense/kernel/v", {3, 2}, plan::InitKind::zeros, false);
  add("dense/bias/m", {2}, plan::InitKind::zeros, false);
  add("dense/bias/v", {2}, plan::InitKind::zeros, false);
  b.Finish(plan::CreatePlanDirect(b, kPlanVersion, "dense", &vars));
  return std::vector<uint8_t>(b.GetBufferPointer(),
                              b.GetBufferPointer() + b.GetSize());
}

std::vector<float> values(const MirroredVariables &vars,
                          const std::string &name) {
  int v = vars.find(name);
  EXPECT_GE(v, 0) << name;
  std::vector<float> out(static_cast<size_t>(vars.bytes(v)) / 4);
  EXPECT_TRUE(vars.read(v, out.data()));
  return out;
}

void fill(MirroredVariables &vars, const std::string &name, float first) {
  int v = vars.find(name);
  ASSERT_GE(v, 0) << name;
  std::vector<float> data(static_cast<size_t>(vars.bytes(v)) / 4);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = first + static_cast<float>(i);
  ASSERT_TRUE(vars.write(v, data.data()));
}

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class CheckpointTest : public ::testing::Test {
protected:
  void SetUp() override {
    plan_ = densePlan();
    ASSERT_TRUE(vars_.initialize(*plan::GetPlan(plan_.data()), 2, 7));
    // Slots as a few Adam steps would leave them: distinct from the zeros
    // a fresh model starts with, so a restore that skipped them shows.
    fill(vars_, "dense/kernel/m", 0.5f);
    fill(vars_, "dense/kernel/v", 10.0f);
    fill(vars_, "dense/bias/m", -3.0f);
    fill(vars_, "dense/bias/v", 20.0f);
    dir_ = fs::temp_directory_path() /
           ("checkpoint-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// Fresh variables of the same plan, initialized with another seed.
  void fresh(MirroredVariables &out) {
    ASSERT_TRUE(out.initialize(*plan::GetPlan(plan_.data()), 1, 99));
  }
  RunState state(int64_t step) const {
    RunState s;
    s.globalStep = step;
    s.seed = 3;
    s.globalBatch = 8;
    s.epochExamples = 60;
    s.data = "synthetic, shuffle buffer 5000";
    return s;
  }
  std::string path(const std::string &name) const {
    return (dir_ / name).string();
  }

  std::vector<uint8_t> plan_;
  MirroredVariables vars_;
  fs::path dir_;
};

TEST_F(CheckpointTest, SlotsAreTheVariablesNamedAfterAnother) {
  std::vector<std::string> weights;
  for (int v : modelWeights(vars_))
    weights.push_back(vars_.name(v));
  EXPECT_THAT(weights, ElementsAre("dense/kernel", "dense/bias"));
  EXPECT_TRUE(isOptimizerSlot(vars_, vars_.find("dense/bias/v")));
  EXPECT_FALSE(isOptimizerSlot(vars_, vars_.find("dense/bias")));
  EXPECT_EQ(allVariables(vars_).size(), 6u);
}

TEST_F(CheckpointTest, WeightsRoundTripWithoutSlots) {
  fs::create_directories(dir_);
  ASSERT_TRUE(saveWeights(path("w.safetensors"), vars_, {{"model", "dense"}}));
  SafetensorsFile file;
  ASSERT_TRUE(SafetensorsFile::read(path("w.safetensors"), file));
  ASSERT_EQ(file.tensors().size(), 2u);
  EXPECT_EQ(*file.metadata("model"), "dense");

  MirroredVariables other;
  fresh(other);
  ASSERT_NE(values(other, "dense/kernel"), values(vars_, "dense/kernel"));
  Status s = loadWeights(path("w.safetensors"), other);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(values(other, "dense/kernel"), values(vars_, "dense/kernel"));
  EXPECT_EQ(values(other, "dense/bias"), values(vars_, "dense/bias"));
  // --init-weights sets weights, never slots.
  EXPECT_EQ(values(other, "dense/kernel/m"), std::vector<float>(6, 0.0f));
}

TEST_F(CheckpointTest, PartialInitWeightsReportsWhatItSkipped) {
  fs::create_directories(dir_);
  SafetensorsWriter w;
  std::vector<float> bias = {1, 2};
  ASSERT_TRUE(w.add("dense/bias", DType::F32, {2},
                    std::string(reinterpret_cast<const char *>(bias.data()),
                                sizeof(float) * bias.size())));
  // PyTorch's [out, in], not Keras' [in, out]: skipped, not an error.
  ASSERT_TRUE(w.add("dense/kernel", DType::F32, {2, 3}, std::string(24, '\0')));
  ASSERT_TRUE(w.add("dense/bias/m", DType::F32, {2}, std::string(8, '\0')));
  ASSERT_TRUE(w.add("head/bias", DType::F32, {2}, std::string(8, '\0')));
  ASSERT_TRUE(w.write(path("w.safetensors")));
  std::vector<float> kernel = values(vars_, "dense/kernel");
  std::vector<float> slot = values(vars_, "dense/bias/m");

  WeightsReport report;
  Status s =
      loadWeights(path("w.safetensors"), vars_, WeightsMatch::partial, &report);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(report.format, "safetensors");
  EXPECT_THAT(report.loaded, ElementsAre("dense/bias"));
  EXPECT_THAT(values(vars_, "dense/bias"), ElementsAre(1, 2));
  EXPECT_EQ(values(vars_, "dense/kernel"), kernel);
  EXPECT_EQ(values(vars_, "dense/bias/m"), slot);
  const char *shape = "the file's tensor has shape [2, 3], the variable [3, 2]";
  EXPECT_THAT(report.leftInitial, ElementsAre(Pair("dense/kernel", shape)));
  EXPECT_THAT(
      report.skipped,
      ElementsAre(Pair("dense/bias/m", "an optimizer slot, not a model weight"),
                  Pair("head/bias", "not a variable of the model"),
                  Pair("dense/kernel", shape)));
  // The exact load of the same file is the error it always was.
  EXPECT_THAT(loadWeights(path("w.safetensors"), vars_).message(),
              HasSubstr("tensor 'dense/bias/m' is not a model weight"));
}

/// Writes a weights file of the given tensors and returns loadWeights' error.
class InitWeightsErrors : public CheckpointTest {
protected:
  std::string loadError(
      const std::vector<std::tuple<std::string, DType, std::vector<int64_t>>>
          &tensors) {
    fs::create_directories(dir_);
    SafetensorsWriter w;
    for (const auto &[name, dtype, shape] : tensors) {
      int64_t n = dtypeSize(dtype);
      for (int64_t d : shape)
        n *= d;
      EXPECT_TRUE(w.add(name, dtype, shape, std::string(n, '\0')));
    }
    EXPECT_TRUE(w.write(path("w.safetensors")));
    MirroredVariables target;
    fresh(target);
    std::vector<float> before = values(target, "dense/kernel");
    Status s = loadWeights(path("w.safetensors"), target);
    EXPECT_FALSE(s);
    // A file that fails changes nothing.
    EXPECT_EQ(values(target, "dense/kernel"), before);
    return s.message();
  }
  const std::string file_ = "w.safetensors";
};

TEST_F(InitWeightsErrors, MissingTensor) {
  EXPECT_EQ(loadError({{"dense/kernel", DType::F32, {3, 2}}}),
            path(file_) +
                ": no tensor 'dense/bias' (the model's F32 [2] variable)");
}

TEST_F(InitWeightsErrors, ExtraTensor) {
  EXPECT_EQ(loadError({{"dense/kernel", DType::F32, {3, 2}},
                       {"dense/bias", DType::F32, {2}},
                       {"dense_9/bias", DType::F32, {2}}}),
            path(file_) +
                ": tensor 'dense_9/bias' is not a variable of the model; the "
                "file must hold exactly the model's 2 weights");
  EXPECT_THAT(loadError({{"dense/kernel", DType::F32, {3, 2}},
                         {"dense/bias", DType::F32, {2}},
                         {"dense/bias/m", DType::F32, {2}}}),
              HasSubstr("tensor 'dense/bias/m' is not a model weight (it is "
                        "an optimizer slot)"));
}

TEST_F(InitWeightsErrors, ShapeMismatch) {
  // PyTorch's [out, in] instead of Keras' [in, out].
  EXPECT_EQ(loadError({{"dense/kernel", DType::F32, {2, 3}},
                       {"dense/bias", DType::F32, {2}}}),
            path(file_) +
                ": tensor 'dense/kernel' has shape [2, 3]; the model's "
                "variable has shape [3, 2] (Keras layouts: HWIO conv kernels, "
                "[in, out] dense kernels)");
}

TEST_F(InitWeightsErrors, DTypeMismatch) {
  EXPECT_EQ(loadError({{"dense/kernel", DType::F64, {3, 2}},
                       {"dense/bias", DType::F32, {2}}}),
            path(file_) +
                ": tensor 'dense/kernel' is F64; the model's variable is F32");
}

TEST_F(CheckpointTest, SaveThenRestoreEveryVariableAndTheRunState) {
  CheckpointManager manager(dir_.string());
  Status s = manager.save(vars_, state(20));
  ASSERT_TRUE(s) << s.message();

  LoadedCheckpoint latest;
  bool found = false;
  std::vector<std::string> warnings;
  ASSERT_TRUE(manager.findLatest(latest, found, warnings));
  ASSERT_TRUE(found);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(latest.path, path("ckpt-20.safetensors"));
  EXPECT_EQ(latest.state.globalStep, 20);
  EXPECT_EQ(latest.state.seed, 3u);
  EXPECT_EQ(latest.state.data, "synthetic, shuffle buffer 5000");
  // 20 batches of 8 over 60 examples, 8 steps an epoch (the last of 4, as
  // Keras ends each epoch): epoch 2 (third), 4 steps = 32 examples in.
  EXPECT_EQ(latest.state.epoch(), 2);
  EXPECT_EQ(latest.state.exampleInEpoch(), 32);
  EXPECT_EQ(*latest.file.metadata("epoch"), "2");

  MirroredVariables other;
  fresh(other);
  s = CheckpointManager::restore(latest, state(0), other);
  ASSERT_TRUE(s) << s.message();
  for (int v = 0; v < vars_.count(); ++v)
    EXPECT_EQ(values(other, vars_.name(v)), values(vars_, vars_.name(v)))
        << vars_.name(v);
}

TEST_F(CheckpointTest, ExtraStateTravelsBesideTheVariables) {
  // What the fit callbacks keep: a text and vectors, read back as saved;
  // the vectors are not variables, so the restore sets every variable and
  // refuses nothing.
  CheckpointManager manager(dir_.string());
  RunState saved = state(20);
  saved.extra.texts["fit_callbacks"] = "{\"wait\": 2}";
  saved.extra.texts["log_bytes"] = "120";
  saved.extra.tensors.emplace_back("fit_callbacks/best_weights/dense/kernel",
                                   std::vector<float>{1, 2, 3, 4, 5, 6});
  saved.extra.tensors.emplace_back("fit_callbacks/best_weights/dense/bias",
                                   std::vector<float>{-1, 0.5f});
  Status s = manager.save(vars_, saved);
  ASSERT_TRUE(s) << s.message();

  LoadedCheckpoint latest;
  bool found = false;
  std::vector<std::string> warnings;
  ASSERT_TRUE(manager.findLatest(latest, found, warnings));
  ASSERT_TRUE(found);
  EXPECT_THAT(latest.state.extra.texts,
              ElementsAre(Pair("fit_callbacks", "{\"wait\": 2}"),
                          Pair("log_bytes", "120")));
  ASSERT_EQ(latest.state.extra.tensors.size(), 2u);
  EXPECT_EQ(latest.state.extra.tensors[0].first,
            "fit_callbacks/best_weights/dense/kernel");
  EXPECT_EQ(*latest.state.extra.find("fit_callbacks/best_weights/dense/bias"),
            (std::vector<float>{-1, 0.5f}));
  EXPECT_EQ(latest.state.extra.find("dense/bias"), nullptr);

  MirroredVariables other;
  fresh(other);
  s = CheckpointManager::restore(latest, state(0), other);
  ASSERT_TRUE(s) << s.message();
  for (int v = 0; v < vars_.count(); ++v)
    EXPECT_EQ(values(other, vars_.name(v)), values(vars_, vars_.name(v)))
        << vars_.name(v);

  // A vector named as a variable would be read as one: refused.
  RunState clash = state(21);
  clash.extra.tensors.emplace_back("dense/bias", std::vector<float>{0, 0});
  s = manager.save(vars_, clash);
  EXPECT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("'dense/bias' is named as a variable"));
}

TEST_F(CheckpointTest, NoDirectoryMeansNoCheckpoint) {
  CheckpointManager manager(path("never-written"));
  LoadedCheckpoint latest;
  bool found = true;
  std::vector<std::string> warnings;
  ASSERT_TRUE(manager.findLatest(latest, found, warnings));
  EXPECT_FALSE(found);
}

TEST_F(CheckpointTest, RestoreRefusesAnotherRunOrModel) {
  CheckpointManager manager(dir_.string());
  RunState written = state(5);
  written.model = "mlp";
  ASSERT_TRUE(manager.save(vars_, written));
  LoadedCheckpoint latest;
  bool found = false;
  std::vector<std::string> warnings;
  ASSERT_TRUE(manager.findLatest(latest, found, warnings));
  ASSERT_TRUE(found);

  RunState otherSeed = state(0);
  otherSeed.seed = 4;
  MirroredVariables other;
  fresh(other);
  Status s = CheckpointManager::restore(latest, otherSeed, other);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), latest.path +
                             ": written by a run with --seed 3, this run has "
                             "4: it cannot resume exactly (use the same "
                             "flags, or another --checkpoint-dir)");
  RunState otherData = state(0);
  otherData.data = "fashion_mnist, file order";
  s = CheckpointManager::restore(latest, otherData, other);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(),
              HasSubstr("with data 'synthetic, shuffle buffer 5000' (60 "
                        "examples), this run has 'fashion_mnist, file "
                        "order' (60 examples)"));

  // A model without the slots (another optimizer) cannot take it.
  flatbuffers::FlatBufferBuilder b;
  std::vector<int64_t> shape{3, 2};
  std::vector<flatbuffers::Offset<plan::Variable>> vs{
      plan::CreateVariableDirect(
          b, "dense/kernel", &shape, plan::DType::f32,
          plan::CreateInitializer(b, plan::InitKind::zeros))};
  b.Finish(plan::CreatePlanDirect(b, kPlanVersion, "sgd", &vs));
  MirroredVariables sgd;
  ASSERT_TRUE(sgd.initialize(*plan::GetPlan(b.GetBufferPointer()), 1, 0));
  RunState sgdRun = state(0);
  sgdRun.model = "sgd";
  s = CheckpointManager::restore(latest, sgdRun, sgd);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(),
              HasSubstr(latest.path + ": written by another model, model "
                                      "'mlp', not this plan's model 'sgd'"));
  EXPECT_THAT(s.message(), HasSubstr("tensor 'dense/bias' is not a variable "
                                     "of the model"));
  EXPECT_THAT(s.message(), HasSubstr("use another --checkpoint-dir"));
}

/// A checkpoint holds one copy of each variable, so a run of another
/// replica count restores every one of its copies from it.
TEST_F(CheckpointTest, RestoresOnAnotherReplicaCount) {
  CheckpointManager manager(dir_.string());
  ASSERT_TRUE(manager.save(vars_, state(5)));
  LoadedCheckpoint latest;
  bool found = false;
  std::vector<std::string> warnings;
  ASSERT_TRUE(manager.findLatest(latest, found, warnings));
  ASSERT_TRUE(found);
  MirroredVariables three;
  ASSERT_TRUE(three.initialize(*plan::GetPlan(plan_.data()), 3, 99));
  ASSERT_TRUE(CheckpointManager::restore(latest, state(0), three));
  for (int v = 0; v < vars_.count(); ++v) {
    std::vector<char> want(static_cast<size_t>(vars_.bytes(v)));
    ASSERT_TRUE(vars_.read(v, want.data()));
    for (int d = 0; d < 3; ++d) {
      std::vector<char> got(want.size());
      ASSERT_TRUE(three.readCopy(d, v, got.data()));
      EXPECT_EQ(got, want) << vars_.name(v) << ", copy " << d;
    }
  }
}

TEST_F(CheckpointTest, KeepsTheNewestKAndIndexesThem) {
  CheckpointManager manager(dir_.string(), 3);
  for (int64_t step : {10, 20, 30, 40, 50})
    ASSERT_TRUE(manager.save(vars_, state(step)));
  EXPECT_THAT(manager.checkpointSteps(), ElementsAre(30, 40, 50));
  EXPECT_EQ(slurp(manager.indexPath()),
            "model_checkpoint_path: \"ckpt-50.safetensors\"\n"
            "all_model_checkpoint_paths: \"ckpt-30.safetensors\"\n"
            "all_model_checkpoint_paths: \"ckpt-40.safetensors\"\n"
            "all_model_checkpoint_paths: \"ckpt-50.safetensors\"\n");
  std::vector<std::string> names;
  for (const fs::directory_entry &e : fs::directory_iterator(dir_))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_THAT(names, ElementsAre("checkpoint", "ckpt-30.safetensors",
                                 "ckpt-40.safetensors", "ckpt-50.safetensors"));

  CheckpointManager keepOne(dir_.string(), 1);
  ASSERT_TRUE(keepOne.save(vars_, state(60)));
  EXPECT_THAT(keepOne.checkpointSteps(), ElementsAre(60));
}

TEST_F(CheckpointTest, AnUnfinishedCheckpointIsIgnoredWithAWarning) {
  CheckpointManager manager(dir_.string());
  ASSERT_TRUE(manager.save(vars_, state(10)));
  // What a SIGKILL during the write of step 20 leaves: a partial temporary.
  std::string complete = slurp(path("ckpt-10.safetensors"));
  {
    std::ofstream partial(path("ckpt-20.safetensors.4242.0.tmp"),
                          std::ios::binary);
    partial << complete.substr(0, complete.size() / 2);
  }
  LoadedCheckpoint latest;
  bool found = false;
  std::vector<std::string> warnings;
  ASSERT_TRUE(manager.findLatest(latest, found, warnings));
  ASSERT_TRUE(found);
  EXPECT_EQ(latest.state.globalStep, 10);
  EXPECT_THAT(warnings,
              ElementsAre(path("ckpt-20.safetensors.4242.0.tmp") +
                          ": an unfinished checkpoint (its run stopped while "
                          "writing it); ignored"));
  // The index names a complete checkpoint.
  EXPECT_THAT(slurp(manager.indexPath()),
              HasSubstr("model_checkpoint_path: \"ckpt-10.safetensors\""));

  // The next save clears what the killed writer left.
  ASSERT_TRUE(manager.save(vars_, state(30)));
  EXPECT_FALSE(fs::exists(path("ckpt-20.safetensors.4242.0.tmp")));
}

/// Saves checkpoints 10 and 20 (another bias), replaces the newest's bytes
/// with what `damage` makes of them, and expects loading to fall back to
/// step 10 with one warning that names the newest file and holds `why`;
/// returns the checkpoint found.
class DamagedCheckpointTest : public CheckpointTest {
protected:
  LoadedCheckpoint fallBack(const std::function<void(std::string &)> &damage,
                            const std::string &why) {
    CheckpointManager manager(dir_.string());
    EXPECT_TRUE(manager.save(vars_, state(10)));
    fill(vars_, "dense/bias", 100.0f);
    EXPECT_TRUE(manager.save(vars_, state(20)));
    std::string bytes = slurp(path("ckpt-20.safetensors"));
    damage(bytes);
    {
      std::ofstream damaged(path("ckpt-20.safetensors"),
                            std::ios::binary | std::ios::trunc);
      damaged << bytes;
    }
    LoadedCheckpoint latest;
    bool found = false;
    std::vector<std::string> warnings;
    EXPECT_TRUE(manager.findLatest(latest, found, warnings));
    EXPECT_TRUE(found);
    EXPECT_EQ(latest.state.globalStep, 10);
    EXPECT_THAT(warnings,
                ElementsAre(AllOf(HasSubstr(path("ckpt-20.safetensors") + ": "),
                                  HasSubstr(why), HasSubstr("; skipped"))));
    return latest;
  }
};

TEST_F(DamagedCheckpointTest, ACutTailFallsBackToTheOlderOne) {
  // A file system that lost the tail of the newest file.
  LoadedCheckpoint latest =
      fallBack([](std::string &bytes) { bytes.resize(bytes.size() - 3); }, "");
  MirroredVariables other;
  fresh(other);
  ASSERT_TRUE(CheckpointManager::restore(latest, state(0), other));
  EXPECT_EQ(values(other, "dense/bias"), std::vector<float>(2, 0.0f));
}

TEST_F(DamagedCheckpointTest, AFlippedBitInATensorFallsBackToTheOlderOne) {
  // The file parses (its length and header are intact); only the tensors'
  // checksum shows that one of them changed since it was written.
  fallBack([](std::string &bytes) { bytes[bytes.size() - 5] ^= 0x10; },
           "its tensors' CRC-32C is ");
}

TEST_F(DamagedCheckpointTest, AChangedMetadataValueFallsBackToTheOlderOne) {
  // The run state and the extra state are metadata: a value changed on disk
  // (here the seed, same length, so the file still parses) is caught by
  // the metadata's checksum.
  fallBack(
      [](std::string &bytes) {
        size_t at = bytes.find("\"seed\":\"3\"");
        ASSERT_NE(at, std::string::npos);
        bytes[at + 8] = '4';
      },
      "its metadata's CRC-32C is ");
}

TEST_F(CheckpointTest, ANewerCheckpointThanTheIndexWins) {
  // Killed between the checkpoint's rename and the index's: the index
  // still names step 10, but step 20 is complete.
  CheckpointManager manager(dir_.string());
  ASSERT_TRUE(manager.save(vars_, state(10)));
  std::string index = slurp(manager.indexPath());
  ASSERT_TRUE(manager.save(vars_, state(20)));
  {
    std::ofstream old(manager.indexPath(), std::ios::trunc);
    old << index;
  }
  LoadedCheckpoint latest;
  bool found = false;
  std::vector<std::string> warnings;
  ASSERT_TRUE(manager.findLatest(latest, found, warnings));
  ASSERT_TRUE(found);
  EXPECT_EQ(latest.state.globalStep, 20);
}

TEST_F(CheckpointTest, HookSavesEveryNStepsAndAtTheEnd) {
  CheckpointManager manager(dir_.string(), 10);
  CheckpointHook hook(manager, vars_, 4, state(0));
  StepContext ctx;
  for (int64_t step = 1; step <= 10; ++step) {
    ctx.step = step;
    ASSERT_TRUE(hook.afterStep(ctx));
  }
  EXPECT_THAT(manager.checkpointSteps(), ElementsAre(4, 8));
  ASSERT_TRUE(hook.end(SessionInfo()));
  EXPECT_THAT(manager.checkpointSteps(), ElementsAre(4, 8, 10));
  EXPECT_EQ(hook.lastSaved(), 10);
  // Ending right after a save does not write it twice.
  ctx.step = 12;
  ASSERT_TRUE(hook.afterStep(ctx));
  ASSERT_TRUE(hook.end(SessionInfo()));
  EXPECT_THAT(manager.checkpointSteps(), ElementsAre(4, 8, 10, 12));
}

TEST_F(CheckpointTest, HookFailureNamesTheStep) {
  fs::create_directories(dir_);
  std::ofstream(path("file")) << "x";
  CheckpointManager manager(path("file"));
  CheckpointHook hook(manager, vars_, 1, state(0));
  StepContext ctx;
  ctx.step = 1;
  Status s = hook.afterStep(ctx);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("checkpoint at step 1: "));
}

} // namespace
} // namespace graph::runtime::checkpoint

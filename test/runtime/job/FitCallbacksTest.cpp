//===- FitCallbacksTest.cpp - the fit callbacks' flags and errors ---------===//
//
// What Keras cannot check for us: the flag parsers' defaults and every
// error they give. The decisions themselves are compared with Keras' own
// classes by fit-callbacks-vs-keras.test.
//
//===----------------------------------------------------------------------===//

#include "runtime/job/FitCallbacks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace graph::runtime;
using namespace graph::runtime::job;
using ::testing::HasSubstr;

namespace {

TEST(FitCallbacksOptions, EmptyMeansKerasDefaults) {
  EarlyStoppingOptions es;
  es.patience = 7;
  ASSERT_TRUE(parseEarlyStoppingOptions("", es));
  EXPECT_EQ(es.monitor, "val_loss");
  EXPECT_EQ(es.minDelta, 0);
  EXPECT_EQ(es.patience, 0);
  EXPECT_EQ(es.verbose, 0);
  EXPECT_EQ(es.mode, MonitorMode::automatic);
  EXPECT_FALSE(es.baseline);
  EXPECT_FALSE(es.restoreBestWeights);
  EXPECT_EQ(es.startFromEpoch, 0);

  ReduceLROnPlateauOptions rl;
  ASSERT_TRUE(parseReduceLROnPlateauOptions("", rl));
  EXPECT_EQ(rl.monitor, "val_loss");
  EXPECT_EQ(rl.factor, 0.1);
  EXPECT_EQ(rl.patience, 10);
  EXPECT_EQ(rl.minDelta, 1e-4);
  EXPECT_EQ(rl.cooldown, 0);
  EXPECT_EQ(rl.minLr, 0);
  EXPECT_EQ(rl.mode, MonitorMode::automatic);

  BestCheckpointOptions ck;
  ASSERT_TRUE(parseBestCheckpointOptions("", ck));
  EXPECT_EQ(ck.monitor, "val_loss");
  EXPECT_EQ(ck.mode, MonitorMode::automatic);
  EXPECT_FALSE(ck.initialValueThreshold);
}

TEST(FitCallbacksOptions, EveryKey) {
  EarlyStoppingOptions es;
  ASSERT_TRUE(parseEarlyStoppingOptions(
      "monitor=val_accuracy,min_delta=0.01,patience=3,verbose=1,mode=max,"
      "baseline=0.5,restore_best_weights=True,start_from_epoch=2",
      es));
  EXPECT_EQ(es.monitor, "val_accuracy");
  EXPECT_EQ(es.minDelta, 0.01);
  EXPECT_EQ(es.patience, 3);
  EXPECT_EQ(es.verbose, 1);
  EXPECT_EQ(es.mode, MonitorMode::max);
  EXPECT_EQ(es.baseline, 0.5);
  EXPECT_TRUE(es.restoreBestWeights);
  EXPECT_EQ(es.startFromEpoch, 2);

  ReduceLROnPlateauOptions rl;
  ASSERT_TRUE(parseReduceLROnPlateauOptions(
      "monitor=loss,factor=0.5,patience=2,verbose=0,mode=min,min_delta=1e-3,"
      "cooldown=1,min_lr=1e-5",
      rl));
  EXPECT_EQ(rl.factor, 0.5);
  EXPECT_EQ(rl.minLr, 1e-5);
  EXPECT_EQ(rl.cooldown, 1);
  EXPECT_EQ(rl.mode, MonitorMode::min);

  BestCheckpointOptions ck;
  ASSERT_TRUE(parseBestCheckpointOptions(
      "monitor=val_accuracy,mode=max,initial_value_threshold=0.9,verbose=1",
      ck));
  EXPECT_EQ(ck.initialValueThreshold, 0.9);
}

/// The error `text` gives `--early-stopping`.
std::string earlyStoppingError(const std::string &text) {
  EarlyStoppingOptions o;
  Status s = parseEarlyStoppingOptions(text, o);
  EXPECT_FALSE(s) << text;
  EXPECT_EQ(s.code(), StatusCode::invalidInput) << text;
  return s.message();
}

TEST(FitCallbacksOptions, UnknownKeyListsTheKeys) {
  EXPECT_EQ(earlyStoppingError("patience=2,paitence=3"),
            "--early-stopping: unknown key 'paitence'; the keys are monitor, "
            "min_delta, patience, verbose, mode, baseline, "
            "restore_best_weights, start_from_epoch");
  ReduceLROnPlateauOptions rl;
  Status s = parseReduceLROnPlateauOptions("epsilon=1e-4", rl);
  EXPECT_EQ(s.message(),
            "--reduce-lr-on-plateau: unknown key 'epsilon'; the keys are "
            "monitor, factor, patience, verbose, mode, min_delta, cooldown, "
            "min_lr");
  BestCheckpointOptions ck;
  s = parseBestCheckpointOptions("save_best_only=true", ck);
  EXPECT_EQ(s.message(), "--checkpoint-best: unknown key 'save_best_only'; "
                         "the keys are monitor, verbose, mode, "
                         "initial_value_threshold");
}

TEST(FitCallbacksOptions, BadValuesNameKeyAndValue) {
  EXPECT_EQ(earlyStoppingError("patience=-1"),
            "--early-stopping: patience=-1 is not a whole number >= 0");
  EXPECT_EQ(earlyStoppingError("patience=1.5"),
            "--early-stopping: patience=1.5 is not a whole number >= 0");
  EXPECT_EQ(earlyStoppingError("patience=99999999999999999999"),
            "--early-stopping: patience=99999999999999999999 is not a whole "
            "number >= 0");
  EXPECT_EQ(earlyStoppingError("start_from_epoch="),
            "--early-stopping: start_from_epoch= is not a whole number >= 0");
  EXPECT_EQ(earlyStoppingError("min_delta=abc"),
            "--early-stopping: min_delta=abc is not a finite number");
  EXPECT_EQ(earlyStoppingError("min_delta=0.1x"),
            "--early-stopping: min_delta=0.1x is not a finite number");
  EXPECT_EQ(earlyStoppingError("baseline=nan"),
            "--early-stopping: baseline=nan is not a finite number");
  EXPECT_EQ(earlyStoppingError("baseline=inf"),
            "--early-stopping: baseline=inf is not a finite number");
  EXPECT_EQ(earlyStoppingError("mode=up"),
            "--early-stopping: mode=up is not auto, min or max");
  EXPECT_EQ(earlyStoppingError("restore_best_weights=yes"),
            "--early-stopping: restore_best_weights=yes is not true or false");
  EXPECT_THAT(earlyStoppingError("monitor="),
              HasSubstr("--early-stopping: monitor= names no logged value"));

  ReduceLROnPlateauOptions rl;
  Status s = parseReduceLROnPlateauOptions("factor=1", rl);
  EXPECT_THAT(s.message(),
              HasSubstr("--reduce-lr-on-plateau: factor=1 is not below 1"));
  s = parseReduceLROnPlateauOptions("factor=1.5", rl);
  EXPECT_THAT(s.message(), HasSubstr("factor=1.5 is not below 1"));
  s = parseReduceLROnPlateauOptions("factor=-0.5", rl);
  EXPECT_THAT(s.message(), HasSubstr("factor=-0.5 is negative"));
  s = parseReduceLROnPlateauOptions("min_lr=-1e-5", rl);
  EXPECT_THAT(s.message(), HasSubstr("min_lr=-1e-5 is negative"));
  s = parseReduceLROnPlateauOptions("cooldown=x", rl);
  EXPECT_EQ(s.message(),
            "--reduce-lr-on-plateau: cooldown=x is not a whole number >= 0");
  // A failed parse leaves the options as they were.
  EXPECT_EQ(rl.factor, 0.1);
}

TEST(FitCallbacksOptions, MalformedLists) {
  EXPECT_THAT(earlyStoppingError("patience"),
              HasSubstr("--early-stopping: 'patience' is not key=value"));
  EXPECT_THAT(earlyStoppingError("patience=1,"),
              HasSubstr("--early-stopping: '' is not key=value"));
  EXPECT_THAT(earlyStoppingError("=1"),
              HasSubstr("--early-stopping: '=1' is not key=value"));
  EXPECT_EQ(earlyStoppingError("patience=1,patience=2"),
            "--early-stopping: key 'patience' is given twice");
}

TEST(FitCallbacksMonitor, AutoNeedsADirection) {
  EarlyStoppingOptions o;
  ASSERT_TRUE(parseEarlyStoppingOptions("monitor=val_f2", o));
  EarlyStopping e;
  Status s =
      EarlyStopping::create(o, compiledMetricDirections({"accuracy"}), e);
  EXPECT_EQ(s.code(), StatusCode::invalidInput);
  EXPECT_THAT(s.message(),
              HasSubstr("--early-stopping: mode=auto cannot tell whether "
                        "monitor=val_f2 is to be minimized or maximized"));
  EXPECT_THAT(s.message(), HasSubstr("pass mode=min or mode=max"));
  // A metric the model does not compile has no direction either.
  ASSERT_TRUE(parseEarlyStoppingOptions("monitor=val_accuracy", o));
  EXPECT_FALSE(EarlyStopping::create(o, compiledMetricDirections({}), e));
  EXPECT_TRUE(
      EarlyStopping::create(o, compiledMetricDirections({"accuracy"}), e));
  // The loss needs no metric; mode=max needs no direction.
  ASSERT_TRUE(parseEarlyStoppingOptions("monitor=loss", o));
  EXPECT_TRUE(EarlyStopping::create(o, nullptr, e));
  ASSERT_TRUE(parseEarlyStoppingOptions("monitor=val_f2,mode=max", o));
  EXPECT_TRUE(EarlyStopping::create(o, nullptr, e));
}

TEST(FitCallbacksMonitor, MissingKeyIsRefusedBeforeTraining) {
  Status s =
      checkMonitorLogged("--early-stopping", "val_loss", {"accuracy", "loss"});
  EXPECT_EQ(s.code(), StatusCode::invalidInput);
  EXPECT_EQ(s.message(),
            "--early-stopping: monitor=val_loss is not logged at an epoch's "
            "end (the epochs log accuracy, loss); val_ values need "
            "validation data (--validation-split or --validation-data)");
  EXPECT_TRUE(checkMonitorLogged("--early-stopping", "loss", {"loss"}));
  s = checkMonitorLogged("--checkpoint-best", "acc", {"loss"});
  EXPECT_EQ(s.message(), "--checkpoint-best: monitor=acc is not logged at an "
                         "epoch's end (the epochs log loss)");
}

TEST(FitCallbacksCsv, PythonRepr) {
  EXPECT_EQ(pythonFloatRepr(1.0), "1.0");
  EXPECT_EQ(pythonFloatRepr(0.0), "0.0");
  EXPECT_EQ(pythonFloatRepr(-0.0), "-0.0");
  EXPECT_EQ(pythonFloatRepr(0.0001), "0.0001");
  EXPECT_EQ(pythonFloatRepr(1e-05), "1e-05");
  EXPECT_EQ(pythonFloatRepr(1.5e-05), "1.5e-05");
  EXPECT_EQ(pythonFloatRepr(0.1), "0.1");
  EXPECT_EQ(pythonFloatRepr(1e16), "1e+16");
  EXPECT_EQ(pythonFloatRepr(1234567890123456.0), "1234567890123456.0");
  EXPECT_EQ(pythonFloatRepr(123.25), "123.25");
  EXPECT_EQ(pythonFloatRepr(static_cast<float>(0.001)),
            "0.0010000000474974513");
  EXPECT_EQ(pythonFloatRepr(5e-324), "5e-324");
  EXPECT_EQ(pythonFloatRepr(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_EQ(pythonFloatRepr(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(pythonFloatRepr(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(pythonFloatRepr(-std::numeric_limits<double>::infinity()), "-inf");
}

TEST(FitCallbacksCsv, HeaderAndRows) {
  EpochLogs logs = {{"loss", 0.5}, {"accuracy", 0.25}};
  std::vector<std::string> columns = CsvLogger::columns(logs);
  EXPECT_THAT(columns, ::testing::ElementsAre("accuracy", "loss",
                                              "val_accuracy", "val_loss"));
  EXPECT_EQ(CsvLogger::formatHeader(columns, ','),
            "epoch,accuracy,loss,val_accuracy,val_loss\r\n");
  EXPECT_EQ(CsvLogger::formatRow(3, columns, logs, ';'),
            "3;0.25;0.5;NA;NA\r\n");
  EXPECT_EQ(CsvLogger::formatHeader({"a,b", "say \"hi\""}, ','),
            "epoch,\"a,b\",\"say \"\"hi\"\"\"\r\n");
}

TEST(FitCallbacksCsv, OpenErrorsNameThePath) {
  std::unique_ptr<CsvLogger> logger;
  Status s = CsvLogger::open("/nonexistent-dir/log.csv", ',', false, logger);
  EXPECT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("/nonexistent-dir/log.csv: cannot open "
                                     "the CSV log: "));
  s = CsvLogger::open("log.csv", '"', false, logger);
  EXPECT_THAT(s.message(), HasSubstr("a CSV separator cannot be a quote"));
}

TEST(FitCallbacksCsv, APipeTakesTheLogWithoutASize) {
  // A FIFO (as --csv-log /dev/stdout | tail -f is) cannot seek: the log is
  // written as it goes, has no size and is never cut back.
  std::string path =
      ::testing::TempDir() + "fit-callbacks-fifo-" + std::to_string(::getpid());
  ::unlink(path.c_str());
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  int reader = ::open(path.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  std::unique_ptr<CsvLogger> logger;
  Status s = CsvLogger::open(path, ',', false, logger);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(logger->size(), std::nullopt);
  ASSERT_TRUE(logger->resumeAt(0));
  ASSERT_TRUE(logger->onEpochEnd(0, {{"loss", 1.0}}));
  ASSERT_TRUE(logger->close());
  char buffer[128] = {};
  ssize_t got = ::read(reader, buffer, sizeof buffer - 1);
  ::close(reader);
  ::unlink(path.c_str());
  EXPECT_EQ(std::string(buffer, got > 0 ? static_cast<size_t>(got) : 0),
            "epoch,loss,val_loss\r\n0,1.0,NA\r\n");
}

TEST(FitCallbacksCsv, AppendWritesTheHeaderOnlyToAnEmptyFile) {
  std::string path = ::testing::TempDir() + "fit-callbacks-" +
                     std::to_string(::getpid()) + ".csv";
  auto run = [&](bool append) {
    std::unique_ptr<CsvLogger> logger;
    ASSERT_TRUE(CsvLogger::open(path, ',', append, logger));
    ASSERT_TRUE(logger->onEpochEnd(0, {{"loss", 1.0}, {"val_loss", 2.0}}));
    ASSERT_TRUE(logger->onEpochEnd(1, {{"loss", 0.5}}));
    ASSERT_TRUE(logger->close());
  };
  auto read = [&] {
    std::ifstream f(path, std::ios::binary);
    std::stringstream text;
    text << f.rdbuf();
    return text.str();
  };
  std::remove(path.c_str());
  run(true);
  EXPECT_EQ(read(), "epoch,loss,val_loss\r\n0,1.0,2.0\r\n1,0.5,NA\r\n");
  run(true);
  EXPECT_EQ(read(), "epoch,loss,val_loss\r\n0,1.0,2.0\r\n1,0.5,NA\r\n"
                    "0,1.0,2.0\r\n1,0.5,NA\r\n");
  run(false);
  EXPECT_EQ(read(), "epoch,loss,val_loss\r\n0,1.0,2.0\r\n1,0.5,NA\r\n");

  // A resumed run cuts the log back to the size it had at its checkpoint
  // (after epoch 0's row) and writes epoch 1 again, once.
  const uint64_t afterFirstRow =
      std::string("epoch,loss,val_loss\r\n0,1.0,2.0\r\n").size();
  {
    std::unique_ptr<CsvLogger> logger;
    ASSERT_TRUE(CsvLogger::open(path, ',', true, logger));
    EXPECT_EQ(logger->size(), std::optional<uint64_t>(read().size()));
    ASSERT_TRUE(logger->resumeAt(afterFirstRow));
    EXPECT_EQ(logger->size(), std::optional<uint64_t>(afterFirstRow));
    ASSERT_TRUE(logger->onEpochEnd(1, {{"loss", 0.25}}));
    EXPECT_EQ(logger->size(), std::optional<uint64_t>(read().size()));
    ASSERT_TRUE(logger->close());
  }
  EXPECT_EQ(read(), "epoch,loss,val_loss\r\n0,1.0,2.0\r\n1,0.25,NA\r\n");
  // Cut back to nothing (a checkpoint before the first epoch's end): the
  // header is written again.
  {
    std::unique_ptr<CsvLogger> logger;
    ASSERT_TRUE(CsvLogger::open(path, ',', true, logger));
    ASSERT_TRUE(logger->resumeAt(0));
    ASSERT_TRUE(logger->onEpochEnd(0, {{"loss", 3.0}}));
    ASSERT_TRUE(logger->close());
  }
  EXPECT_EQ(read(), "epoch,loss,val_loss\r\n0,3.0,NA\r\n");
  std::remove(path.c_str());
}

} // namespace

//===-- ModelCheckpoint's filepath ----------------------------------------===//

/// Keras formats ModelCheckpoint's filepath with str.format(epoch=epoch + 1,
/// **logs). The expected paths are what Python 3.11 prints for each
/// pattern with epoch=3 and these logs.
TEST(FitCallbacksFilepath, FormatsAsPythonsStrFormat) {
  const EpochLogs logs{{"loss", 0.123456789},
                       {"val_loss", 1.5},
                       {"val_accuracy", 0.87654321},
                       {"neg", -0.25}};
  const std::pair<const char *, const char *> cases[] = {
      {"m-{epoch:02d}.keras", "m-03.keras"},
      {"m-{epoch}-{val_loss:.2f}.keras", "m-3-1.50.keras"},
      {"{val_accuracy:.3e}_{loss}", "8.765e-01_0.123456789"},
      {"{{x}}-{epoch:3d}-{neg:07.3f}", "{x}-  3--00.250"},
      {"{val_accuracy:.1%}", "87.7%"},
      {"{loss:g}", "0.123457"},
      {"{epoch:.2f}", "3.00"},
      {"{val_loss}", "1.5"},
      {"best.keras", "best.keras"},
  };
  for (const auto &[pattern, expected] : cases) {
    std::string path;
    Status s = formatKerasFilepath(pattern, 2, &logs, path);
    ASSERT_TRUE(s) << pattern << ": " << s.message();
    EXPECT_EQ(path, expected) << pattern;
  }
}

TEST(FitCallbacksFilepath, RefusesWhatStrFormatRefuses) {
  const EpochLogs logs{{"loss", 0.5}};
  auto fails = [&](const char *pattern, const EpochLogs *given) {
    std::string path;
    Status s = formatKerasFilepath(pattern, 0, given, path);
    EXPECT_FALSE(s) << pattern << " gave " << path;
    return s.message();
  };
  EXPECT_THAT(fails("m-{val_loss:.2f}.keras", &logs),
              HasSubstr("'{val_loss:.2f}' names 'val_loss', which the "
                        "epoch's logs do not hold (epoch, loss)"));
  EXPECT_THAT(fails("m-{loss:d}.keras", &logs),
              HasSubstr("'d' formats an integer; 'loss' is a float"));
  EXPECT_THAT(fails("m-{epoch.keras", nullptr), HasSubstr("unclosed '{'"));
  EXPECT_THAT(fails("m-}.keras", nullptr), HasSubstr("a single '}'"));
  EXPECT_THAT(fails("m-{}.keras", nullptr), HasSubstr("without a name"));
  EXPECT_THAT(fails("m-{epoch:>5}.keras", nullptr),
              HasSubstr("unsupported format spec"));
  // Without logs only the syntax is checked: any name is taken.
  std::string path;
  EXPECT_TRUE(formatKerasFilepath("m-{epoch:02d}-{val_auc:.3f}.keras", 0,
                                  nullptr, path));
  EXPECT_EQ(path, "m-01-0.000.keras");
}

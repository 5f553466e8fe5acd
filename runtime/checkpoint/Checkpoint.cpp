//===- Checkpoint.cpp - checkpoints a killed run resumes from -------------===//

#include "runtime/checkpoint/Checkpoint.h"

#include "runtime/base/AtomicFile.h"
#include "runtime/base/Crc32c.h"
#include "runtime/checkpoint/Weights.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <system_error>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace graph::runtime::checkpoint {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPrefix = "ckpt-";
constexpr std::string_view kSuffix = ".safetensors";
constexpr const char *kIndexName = "checkpoint";
constexpr const char *kFormat = "graphrun checkpoint 1";

/// The step of a checkpoint file name, or nullopt for any other name.
std::optional<int64_t> stepOf(std::string_view name) {
  if (name.size() <= kPrefix.size() + kSuffix.size() ||
      !name.starts_with(kPrefix) || !name.ends_with(kSuffix))
    return std::nullopt;
  std::string_view digits = name.substr(
      kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  int64_t step = 0;
  auto [end, ec] =
      std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (ec != std::errc() || end != digits.data() + digits.size() || step < 0)
    return std::nullopt;
  return step;
}

/// The metadata that hold ExtraState::texts (the prefix and the name), and
/// the one that names its tensors, a line each (no variable name holds a
/// newline).
constexpr std::string_view kExtraPrefix = "extra.";
constexpr const char *kExtraTensorsKey = "extra_tensors";
/// The data section's CRC-32C, and the metadata's (every other entry, in
/// key order, each key and value ended by a NUL), in decimal.
constexpr const char *kCrcKey = "data_crc32c";
constexpr const char *kMetadataCrcKey = "metadata_crc32c";

uint32_t metadataCrc32c(const std::map<std::string, std::string> &metadata) {
  uint32_t crc = 0;
  for (const auto &[key, value] : metadata)
    if (key != kMetadataCrcKey) {
      crc = crc32c(key.c_str(), key.size() + 1, crc);
      crc = crc32c(value.c_str(), value.size() + 1, crc);
    }
  return crc;
}

std::vector<std::string> extraTensorNames(const std::string &lines) {
  std::vector<std::string> names;
  size_t begin = 0;
  while (begin < lines.size()) {
    size_t end = lines.find('\n', begin);
    if (end == std::string::npos)
      end = lines.size();
    names.push_back(lines.substr(begin, end - begin));
    begin = end + 1;
  }
  return names;
}

bool isTemporary(std::string_view name) {
  std::string_view final = finalNameOf(name);
  return !final.empty() && stepOf(final);
}

template <typename T>
Status parseNumber(const SafetensorsFile &file, const char *key, T &out) {
  const std::string *text = file.metadata(key);
  if (!text)
    return Status::error(file.source() + ": no '" + key +
                         "' in the checkpoint's metadata");
  auto [end, ec] =
      std::from_chars(text->data(), text->data() + text->size(), out);
  if (ec != std::errc() || end != text->data() + text->size())
    return Status::error(file.source() + ": metadata '" + key + "' is '" +
                         *text + "', not a number");
  return Status::ok();
}

Status parseRunState(const SafetensorsFile &file, RunState &out) {
  const std::string *format = file.metadata("format");
  if (!format || *format != kFormat)
    return Status::error(file.source() +
                         ": not a graphrun checkpoint (its "
                         "metadata has no format '" +
                         std::string(kFormat) + "')");
  // A checkpoint whose tensors changed since they were written (a flipped
  // bit on disk, a file cut short and padded) is not resumed from.
  // Checkpoints written before the checksum have none.
  if (file.metadata(kMetadataCrcKey)) {
    uint32_t expected = 0;
    if (Status s = parseNumber(file, kMetadataCrcKey, expected); !s)
      return s;
    if (uint32_t actual = metadataCrc32c(file.metadata()); actual != expected)
      return Status::error(file.source() + ": its metadata's CRC-32C is " +
                           std::to_string(actual) + ", the checkpoint says " +
                           std::to_string(expected) + ": corrupt");
  }
  if (file.metadata(kCrcKey)) {
    uint32_t expected = 0;
    if (Status s = parseNumber(file, kCrcKey, expected); !s)
      return s;
    if (uint32_t actual = file.dataCrc32c(); actual != expected)
      return Status::error(file.source() + ": its tensors' CRC-32C is " +
                           std::to_string(actual) + ", the checkpoint says " +
                           std::to_string(expected) + ": corrupt");
  }
  RunState state;
  if (Status s = parseNumber(file, "global_step", state.globalStep); !s)
    return s;
  if (Status s = parseNumber(file, "seed", state.seed); !s)
    return s;
  if (Status s = parseNumber(file, "global_batch", state.globalBatch); !s)
    return s;
  if (Status s = parseNumber(file, "epoch_examples", state.epochExamples); !s)
    return s;
  // Written when not 0 (checkpoints before it had none).
  if (file.metadata("step_origin"))
    if (Status s = parseNumber(file, "step_origin", state.stepOrigin); !s)
      return s;
  const std::string *data = file.metadata("data");
  if (!data)
    return Status::error(file.source() +
                         ": no 'data' in the checkpoint's metadata");
  state.data = *data;
  if (const std::string *model = file.metadata("model"))
    state.model = *model;
  for (const auto &[key, value] : file.metadata())
    if (key.starts_with(kExtraPrefix) && key.size() > kExtraPrefix.size())
      state.extra.texts[key.substr(kExtraPrefix.size())] = value;
  if (const std::string *names = file.metadata(kExtraTensorsKey))
    for (const std::string &name : extraTensorNames(*names)) {
      const TensorInfo *t = file.find(name);
      if (!t || t->dtype != DType::F32 || t->shape.size() != 1)
        return Status::error(file.source() + ": the extra state's tensor '" +
                             name + "' is " +
                             (t ? "not an F32 vector" : "missing"));
      std::string_view bytes = file.data(*t);
      std::vector<float> values(bytes.size() / sizeof(float));
      std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
      state.extra.tensors.emplace_back(name, std::move(values));
    }
  out = std::move(state);
  return Status::ok();
}

} // namespace

const std::vector<float> *ExtraState::find(const std::string &name) const {
  for (const auto &[n, values] : tensors)
    if (n == name)
      return &values;
  return nullptr;
}

int64_t RunState::stepsPerEpoch() const {
  return globalBatch > 0 ? (epochExamples + globalBatch - 1) / globalBatch : 0;
}

int64_t RunState::epoch() const {
  return stepsPerEpoch() > 0 ? dataStep() / stepsPerEpoch() : 0;
}

int64_t RunState::exampleInEpoch() const {
  return stepsPerEpoch() > 0
             ? std::min(epochExamples,
                        dataStep() % stepsPerEpoch() * globalBatch)
             : 0;
}

std::string checkpointFileName(int64_t step) {
  return std::string(kPrefix) + std::to_string(step) + std::string(kSuffix);
}

std::string CheckpointManager::indexPath() const {
  return (fs::path(directory_) / kIndexName).string();
}

std::vector<int64_t> CheckpointManager::checkpointSteps() const {
  std::vector<int64_t> steps;
  std::error_code ec;
  for (const fs::directory_entry &e : fs::directory_iterator(directory_, ec))
    if (std::optional<int64_t> step = stepOf(e.path().filename().string());
        step && e.is_regular_file(ec))
      steps.push_back(*step);
  std::sort(steps.begin(), steps.end());
  return steps;
}

Status CheckpointManager::writeIndex(const std::vector<int64_t> &steps) const {
  // TensorFlow's text format, so its tools and readers recognise it.
  std::string text =
      "model_checkpoint_path: \"" + checkpointFileName(steps.back()) + "\"\n";
  for (int64_t step : steps)
    text +=
        "all_model_checkpoint_paths: \"" + checkpointFileName(step) + "\"\n";
  return writeFileAtomically(indexPath(), text);
}

Status CheckpointManager::claim() {
  const std::string where = "--checkpoint-dir " + directory_;
  std::error_code ec;
  fs::create_directories(directory_, ec);
  if (ec)
    return Status::error(where + ": cannot create it: " + ec.message());
  // A file written and removed: what every checkpoint will need.
  std::string probe =
      (fs::path(directory_) / (".write-probe." + std::to_string(::getpid())))
          .string();
  int fd =
      ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool written = fd >= 0 && ::write(fd, "x", 1) == 1;
  int error = errno;
  if (fd >= 0 && ::close(fd) != 0 && written) {
    written = false;
    error = errno;
  }
  ::unlink(probe.c_str());
  if (!written)
    return Status::error(where + ": cannot write a file in it (" +
                         std::strerror(error) +
                         "): no checkpoint could be saved");
  std::string lockPath = (fs::path(directory_) / ".lock").string();
  int lock = ::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0)
    return Status::error(where + ": cannot open " + lockPath + ": " +
                         std::strerror(errno));
  if (::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    int why = errno;
    char holder[32] = {};
    ssize_t got = ::pread(lock, holder, sizeof holder - 1, 0);
    ::close(lock);
    if (why != EWOULDBLOCK)
      return Status::error(where + ": cannot lock " + lockPath + ": " +
                           std::strerror(why));
    std::string pid = got > 0 ? std::string(holder, static_cast<size_t>(got))
                              : std::string("unknown");
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' '))
      pid.pop_back();
    return Status::error(where + ": in use by another run (pid " + pid +
                         "), which saves its checkpoints there: two runs "
                         "would overwrite each other's; give this one another "
                         "--checkpoint-dir");
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock, 0) != 0 || ::pwrite(lock, pid.data(), pid.size(), 0) !=
                                       static_cast<ssize_t>(pid.size())) {
    int why = errno;
    ::close(lock);
    return Status::error(where + ": cannot write " + lockPath + ": " +
                         std::strerror(why));
  }
  lock_ = std::shared_ptr<const int>(new int(lock), [](const int *fd) {
    ::close(*fd);
    delete fd;
  });
  return Status::ok();
}

Status CheckpointManager::save(const MirroredVariables &variables,
                               const RunState &state) {
  std::error_code ec;
  fs::create_directories(directory_, ec);
  if (ec)
    return Status::error(directory_ +
                         ": cannot create the checkpoint "
                         "directory: " +
                         ec.message());
  // What a killed writer left. One run writes a directory at a time, so no
  // temporary file here is still being written.
  for (const fs::directory_entry &e : fs::directory_iterator(directory_, ec))
    if (isTemporary(e.path().filename().string()))
      fs::remove(e.path(), ec);

  SafetensorsWriter writer;
  writer.setMetadata("format", kFormat);
  writer.setMetadata("global_step", std::to_string(state.globalStep));
  writer.setMetadata("seed", std::to_string(state.seed));
  writer.setMetadata("global_batch", std::to_string(state.globalBatch));
  writer.setMetadata("epoch_examples", std::to_string(state.epochExamples));
  if (state.stepOrigin != 0)
    writer.setMetadata("step_origin", std::to_string(state.stepOrigin));
  writer.setMetadata("data", state.data);
  if (!state.model.empty())
    writer.setMetadata("model", state.model);
  // For people reading the header; loading derives them from the above.
  writer.setMetadata("epoch", std::to_string(state.epoch()));
  writer.setMetadata("example_in_epoch",
                     std::to_string(state.exampleInEpoch()));
  if (Status s = addVariables(variables, allVariables(variables), writer); !s)
    return s;
  for (const auto &[name, text] : state.extra.texts) {
    if (name.empty())
      return Status::error("the extra state has a text without a name");
    writer.setMetadata(std::string(kExtraPrefix) + name, text);
  }
  std::string extraNames;
  for (const auto &[name, values] : state.extra.tensors) {
    if (name.empty() || name.find('\n') != std::string::npos ||
        variables.find(name) >= 0)
      return Status::error("the extra state's tensor '" + name +
                           "' is named as a variable, or not a name");
    std::string bytes(reinterpret_cast<const char *>(values.data()),
                      values.size() * sizeof(float));
    if (Status s =
            writer.add(name, DType::F32, {static_cast<int64_t>(values.size())},
                       std::move(bytes));
        !s)
      return s;
    extraNames += (extraNames.empty() ? "" : "\n") + name;
  }
  if (!extraNames.empty())
    writer.setMetadata(kExtraTensorsKey, extraNames);
  writer.setMetadata(kCrcKey, std::to_string(writer.dataCrc32c()));
  writer.setMetadata(kMetadataCrcKey,
                     std::to_string(metadataCrc32c(writer.metadata())));
  std::string path =
      (fs::path(directory_) / checkpointFileName(state.globalStep)).string();
  if (Status s = writer.write(path); !s)
    return s;

  std::vector<int64_t> steps = checkpointSteps();
  size_t keep = static_cast<size_t>(std::max(1, keep_));
  std::vector<int64_t> old;
  if (steps.size() > keep) {
    old.assign(steps.begin(), steps.end() - static_cast<ptrdiff_t>(keep));
    steps.erase(steps.begin(), steps.end() - static_cast<ptrdiff_t>(keep));
  }
  // The index first, so that it never names a deleted file.
  if (Status s = writeIndex(steps); !s)
    return s;
  for (int64_t step : old)
    if (!fs::remove(fs::path(directory_) / checkpointFileName(step), ec) && ec)
      return Status::error(directory_ + ": cannot delete " +
                           checkpointFileName(step) + ": " + ec.message());
  return old.empty() ? Status::ok() : syncDirectory(directory_);
}

Status CheckpointManager::findLatest(LoadedCheckpoint &out, bool &found,
                                     std::vector<std::string> &warnings) const {
  found = false;
  std::error_code ec;
  if (!fs::exists(directory_, ec))
    return Status::ok();
  if (!fs::is_directory(directory_, ec))
    return Status::error(directory_ + ": not a directory");
  for (const fs::directory_entry &e : fs::directory_iterator(directory_, ec))
    if (isTemporary(e.path().filename().string()))
      warnings.push_back(e.path().string() +
                         ": an unfinished checkpoint (its run stopped while "
                         "writing it); ignored");
  if (ec)
    return Status::error(directory_ + ": cannot list: " + ec.message());

  std::vector<int64_t> steps = checkpointSteps();
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    LoadedCheckpoint candidate;
    candidate.path = (fs::path(directory_) / checkpointFileName(*it)).string();
    Status s = SafetensorsFile::read(candidate.path, candidate.file);
    if (s)
      s = parseRunState(candidate.file, candidate.state);
    if (s && candidate.state.globalStep != *it)
      s = Status::error(candidate.path + ": holds step " +
                        std::to_string(candidate.state.globalStep) +
                        ", not the step its name says");
    if (!s) {
      warnings.push_back(s.message() + "; skipped");
      continue;
    }
    out = std::move(candidate);
    found = true;
    return Status::ok();
  }
  return Status::ok();
}

Status CheckpointManager::restore(const LoadedCheckpoint &checkpoint,
                                  const RunState &expected,
                                  MirroredVariables &variables) {
  const RunState &saved = checkpoint.state;
  auto mismatch = [&](const std::string &what, const std::string &was,
                      const std::string &is) {
    return Status::error(checkpoint.path + ": written by a run with " + what +
                         " " + was + ", this run has " + is +
                         ": it cannot resume exactly (use the same flags, or "
                         "another --checkpoint-dir)");
  };
  if (saved.seed != expected.seed)
    return mismatch("--seed", std::to_string(saved.seed),
                    std::to_string(expected.seed));
  if (saved.globalBatch != expected.globalBatch)
    return mismatch("global batch", std::to_string(saved.globalBatch),
                    std::to_string(expected.globalBatch));
  if (saved.data != expected.data ||
      saved.epochExamples != expected.epochExamples)
    return mismatch("data",
                    "'" + saved.data + "' (" +
                        std::to_string(saved.epochExamples) + " examples)",
                    "'" + expected.data + "' (" +
                        std::to_string(expected.epochExamples) + " examples)");
  std::set<std::string> extra;
  for (const auto &[name, values] : saved.extra.tensors)
    extra.insert(name);
  Status set =
      setVariables(checkpoint.file, allVariables(variables), variables, extra);
  if (set)
    return set;
  // Another model's variables (or another optimizer's slots): say so
  // first, then which tensor showed it.
  std::string fault = set.message();
  const std::string prefix = checkpoint.file.source() + ": ";
  if (fault.starts_with(prefix))
    fault = fault.substr(prefix.size());
  auto named = [](const std::string &model) {
    return model.empty() ? std::string("a model") : "model '" + model + "'";
  };
  std::string which = !saved.model.empty() && saved.model != expected.model
                          ? ", " + named(saved.model) + ", not this plan's " +
                                named(expected.model)
                          : "";
  return Status::error(
      checkpoint.path + ": written by another model" + which + " (" +
      std::to_string(checkpoint.file.tensors().size() - extra.size()) +
      " tensors, this plan has " + std::to_string(variables.count()) +
      " variables): " + fault +
      ": a checkpoint resumes only the model (and "
      "optimizer) that wrote it; use another "
      "--checkpoint-dir");
}

Status CheckpointHook::save(int64_t step) {
  state_.globalStep = step;
  if (extra_)
    state_.extra = extra_();
  if (Status s = manager_.save(variables_, state_); !s)
    return Status::error("checkpoint at step " + std::to_string(step) + ": " +
                         s.message());
  lastSaved_ = step;
  return Status::ok();
}

Status CheckpointHook::afterStep(const StepContext &ctx) {
  lastStep_ = ctx.step;
  if (every_ > 0 && (ctx.step - state_.stepOrigin) % every_ == 0)
    return save(ctx.step);
  return Status::ok();
}

Status CheckpointHook::end(const SessionInfo &info) {
  // The variables hold the state after the last step that ran: after a
  // stop (a preemption signal), a step launched ahead ran too, though no
  // hook saw it (Session::train).
  int64_t last = info.stepsDone > 0
                     ? std::max(lastStep_, info.initialStep + info.stepsDone)
                     : lastStep_;
  if (last > lastSaved_)
    return save(last);
  return Status::ok();
}

} // namespace graph::runtime::checkpoint

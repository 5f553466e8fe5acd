//===- TraceHook.cpp - Chrome trace events of each step's phases ----------===//
//
// The trace is Chrome's JSON object format: {"traceEvents": [...],
// "displayTimeUnit": "ms"}, each phase a complete event ("ph": "X") with
// "ts" and "dur" in microseconds since the run began, and metadata events
// ("ph": "M") naming the processes and threads.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Hooks.h"

#include "runtime/plan/plan_generated.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

namespace graph::runtime {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kHostProcess = 0;
constexpr int kComputeThread = static_cast<int>(plan::StreamKind::compute);
constexpr int kCommThread = static_cast<int>(plan::StreamKind::comm);

/// A device's first (or, with `last`, last) timestamp named `name`.
bool findPoint(const std::vector<Timestamp> &timeline, std::string_view name,
               bool last, Clock::time_point &at) {
  bool found = false;
  for (const Timestamp &t : timeline)
    if (t.name == name && (!found || last)) {
      at = t.at;
      found = true;
    }
  return found;
}

std::string jsonString(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\u%04x", c);
      out += escape;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

const char *streamName(int thread) {
  return plan::EnumNameStreamKind(static_cast<plan::StreamKind>(thread));
}

} // namespace

TraceHook::~TraceHook() {
  // A run that failed never reaches end(); the steps it did record are what
  // one needs to see where it failed. A destructor cannot report a write
  // error, so this write is best effort.
  if (file_.is_open() && !written_)
    (void)write(/*complete=*/false);
}

Status TraceHook::begin(const SessionInfo &info) {
  tempPath_ = path_ + ".tmp";
  file_.close();
  file_.clear();
  file_.open(tempPath_, std::ios::out | std::ios::trunc);
  if (!file_)
    return Status::error("--trace: cannot open '" + tempPath_ +
                         "' for writing: " + std::strerror(errno));
  written_ = false;
  program_ = info.program;
  replicas_ = info.replicas;
  origin_ = Clock::now();
  // Two host events and four phases per replica a step; reserving for the
  // planned steps (up to 16k) keeps the steps from reallocating.
  int64_t steps = info.plannedSteps > 0
                      ? std::min<int64_t>(info.plannedSteps, int64_t{1} << 14)
                      : 1024;
  events_.clear();
  events_.reserve(static_cast<size_t>(steps * (2 + 4 * info.replicas)));
  return Status::ok();
}

Status TraceHook::afterStep(const StepContext &ctx) {
  events_.push_back({"step", kHostProcess, 0, ctx.step, ctx.begin, ctx.end});
  events_.push_back(
      {"input", kHostProcess, 0, ctx.step, ctx.begin, ctx.inputReady});
  if (!ctx.result)
    return Status::ok();
  const std::vector<std::vector<Timestamp>> &devices = ctx.result->timestamps;
  for (size_t d = 0; d < devices.size(); ++d) {
    const std::vector<Timestamp> &timeline = devices[d];
    int process = static_cast<int>(d) + 1;
    auto phase = [&](const char *name, int thread, Clock::time_point from,
                     Clock::time_point to) {
      events_.push_back({name, process, thread, ctx.step, from, to});
    };
    Clock::time_point forward, backward, backwardEnd, update, stepEnd, arBegin,
        arEnd;
    if (!findPoint(timeline, "forward_begin", false, forward))
      continue;
    bool hasBackward = findPoint(timeline, "backward_begin", false, backward);
    bool hasBackwardEnd =
        findPoint(timeline, "backward_end", false, backwardEnd);
    bool hasUpdate = findPoint(timeline, "update_begin", false, update);
    bool hasEnd = findPoint(timeline, "step_end", true, stepEnd);
    // Timestamp does not carry its stream: the compiler puts allreduce_*
    // on the replica's comm stream and every other point on its compute
    // stream (compiler/InsertTimestampsPass.cpp).
    bool hasReduce = findPoint(timeline, "allreduce_begin", false, arBegin) &&
                     findPoint(timeline, "allreduce_end", true, arEnd);
    if (hasBackward)
      phase("forward", kComputeThread, forward, backward);
    else if (hasEnd)
      phase("forward", kComputeThread, forward, stepEnd);
    // The host path's reductions, each where the thread ran it, between
    // its backward ops; backward is drawn around them, as splitStep()
    // counts it.
    std::vector<std::pair<Clock::time_point, Clock::time_point>> reductions;
    for (size_t i = 0; i + 1 < timeline.size(); ++i)
      if (timeline[i].name == kReduceBegin &&
          timeline[i + 1].name == kReduceEnd) {
        phase("all-reduce", kCommThread, timeline[i].at, timeline[i + 1].at);
        reductions.push_back({timeline[i].at, timeline[i + 1].at});
      }
    bool hostReduce = !reductions.empty();
    // Backward ends where the device first waits for a reduction: a GPU's
    // comm stream works beside it on its own track, and the wait shows as
    // a gap before the update. (A plan from before backward_end: where the
    // all-reduce begins.)
    if (hasBackward && (hasBackwardEnd || hasReduce || hasUpdate)) {
      Clock::time_point end = hasUpdate ? update : arBegin;
      if (hasBackwardEnd)
        end = backwardEnd;
      else if (hasReduce && arBegin >= backward && arBegin < end)
        end = arBegin;
      Clock::time_point from = backward;
      for (const auto &[begin, finish] : reductions) {
        if (begin < from || begin > end)
          continue;
        if (begin > from)
          phase("backward", kComputeThread, from, begin);
        from = std::min(finish, end);
      }
      if (end > from)
        phase("backward", kComputeThread, from, end);
    }
    if (hasReduce && !hostReduce)
      phase("all-reduce", kCommThread, arBegin, arEnd);
    if (hasUpdate && hasEnd)
      phase("update", kComputeThread, update, stepEnd);
  }
  return Status::ok();
}

Status TraceHook::write(bool complete) {
  written_ = true;
  // Per track, by start time; ties keep their order (a step before its
  // input wait), which nests them in the viewers.
  std::vector<const Event *> order;
  order.reserve(events_.size());
  for (const Event &e : events_)
    order.push_back(&e);
  std::stable_sort(order.begin(), order.end(),
                   [](const Event *a, const Event *b) {
                     if (a->process != b->process)
                       return a->process < b->process;
                     if (a->thread != b->thread)
                       return a->thread < b->thread;
                     return a->begin < b->begin;
                   });
  std::set<std::pair<int, int>> tracks;
  for (const Event &e : events_)
    tracks.insert({e.process, e.thread});

  auto micros = [&](Clock::time_point t) {
    return std::chrono::duration<double, std::micro>(t - origin_).count();
  };
  char line[256];
  file_ << "{\"traceEvents\": [\n";
  bool first = true;
  auto separate = [&] {
    if (!first)
      file_ << ",\n";
    first = false;
  };
  int lastProcess = -1;
  for (const auto &[process, thread] : tracks) {
    if (process != lastProcess) {
      std::string name = process == kHostProcess
                             ? "host (" + program_ + ")"
                             : "replica " + std::to_string(process - 1);
      separate();
      file_ << "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": "
            << process
            << ", \"tid\": 0, \"args\": {\"name\": " << jsonString(name)
            << "}}";
      separate();
      file_ << "{\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": "
            << process << ", \"tid\": 0, \"args\": {\"sort_index\": " << process
            << "}}";
      lastProcess = process;
    }
    separate();
    file_ << "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " << process
          << ", \"tid\": " << thread << ", \"args\": {\"name\": "
          << jsonString(process == kHostProcess ? "steps" : streamName(thread))
          << "}}";
  }
  for (const Event *e : order) {
    separate();
    double ts = micros(e->begin);
    double dur = std::max(0.0, micros(e->end) - ts);
    std::snprintf(line, sizeof line,
                  "{\"ph\": \"X\", \"name\": \"%s\", \"pid\": %d, \"tid\": "
                  "%d, \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"step\": "
                  "%lld}}",
                  e->name, e->process, e->thread, ts, dur,
                  static_cast<long long>(e->step));
    file_ << line;
  }
  file_ << "\n],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"program\": "
        << jsonString(program_) << ", \"replicas\": " << replicas_
        << ", \"events\": " << events_.size()
        << ", \"complete\": " << (complete ? "true" : "false") << "}}\n";
  file_.close();
  // A trace that cannot take its place leaves nothing behind.
  if (!file_) {
    std::string why = std::strerror(errno);
    std::remove(tempPath_.c_str());
    return Status::error("--trace: cannot write '" + tempPath_ + "': " + why);
  }
  if (std::rename(tempPath_.c_str(), path_.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(tempPath_.c_str());
    return Status::error("--trace: cannot rename '" + tempPath_ + "' to '" +
                         path_ + "': " + why);
  }
  return Status::ok();
}

Status TraceHook::end(const SessionInfo &) {
  if (!file_.is_open() || written_)
    return Status::ok();
  return write(/*complete=*/true);
}

} // namespace graph::runtime

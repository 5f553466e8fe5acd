//===- Preemption.cpp - stop at a whole step on SIGTERM, resumable --------===//

#include "runtime/job/Preemption.h"

#include "runtime/collectives/Workers.h"

#include <atomic>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <pthread.h>
#include <sstream>
#include <sys/eventfd.h>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace graph::runtime::job {

namespace {

// What the handler may touch: lock-free atomics only.
std::atomic<int> gSignal{0};
std::atomic<int> gCount{0};
std::atomic<int64_t> gAtNanoseconds{0};
std::atomic<int> gSender{0};
std::atomic<bool> gInstalled{false};
static_assert(std::atomic<int>::is_always_lock_free &&
                  std::atomic<int64_t>::is_always_lock_free,
              "a signal handler may use lock-free atomics only");

extern "C" void onPreemptionSignal(int signal, siginfo_t *info, void *) {
  int savedErrno = errno;
  // clock_gettime is async-signal-safe (POSIX.1-2008); steady_clock reads
  // the same CLOCK_MONOTONIC on Linux.
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  int none = 0;
  if (gSignal.compare_exchange_strong(none, signal)) {
    gAtNanoseconds.store(int64_t(now.tv_sec) * 1000000000 + now.tv_nsec);
    gSender.store(info ? static_cast<int>(info->si_pid) : 0);
  }
  gCount.fetch_add(1);
  errno = savedErrno;
}

/// The signals a job may stop on: those a cluster or a user sends to end a
/// process politely. KILL and STOP cannot be caught; a fault (SEGV, BUS,
/// FPE) is no request.
struct NamedSignal {
  const char *name;
  int number;
};
constexpr NamedSignal kSignals[] = {
    {"TERM", SIGTERM}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP},
    {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"ALRM", SIGALRM}, {"XCPU", SIGXCPU},
};

std::string upper(std::string text) {
  for (char &c : text)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

std::string knownNames() {
  std::string names;
  for (const NamedSignal &s : kSignals)
    names += (names.empty() ? "" : ", ") + std::string(s.name);
  return names;
}

} // namespace

std::string signalName(int signal) {
  for (const NamedSignal &s : kSignals)
    if (s.number == signal)
      return std::string("SIG") + s.name;
  return "signal " + std::to_string(signal);
}

Status parsePreemptSignals(const std::string &text, std::vector<int> &out) {
  out.clear();
  if (upper(text) == "NONE")
    return Status::ok();
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    std::string name = upper(item);
    if (name.rfind("SIG", 0) == 0)
      name = name.substr(3);
    int number = 0;
    for (const NamedSignal &s : kSignals)
      if (name == s.name)
        number = s.number;
    if (number == 0)
      return Status::invalidInput("--preempt-signals " + text + ": '" + item +
                                  "' is not a signal graphrun can stop on (" +
                                  knownNames() + "; or none)");
    bool listed = false;
    for (int n : out)
      listed = listed || n == number;
    if (!listed)
      out.push_back(number);
  }
  if (out.empty())
    return Status::invalidInput("--preempt-signals: empty; name the signals "
                                "(TERM,USR1), or none");
  return Status::ok();
}

struct PreemptionSignals::Saved {
  std::vector<struct sigaction> actions;
  bool restored = false;
  // With signals routed (wake >= 0): the installing thread's signal mask
  // before, and the delivery thread, which waits on `wake` for the end.
  sigset_t callerMask{};
  int wake = -1;
  std::thread delivery;
};

namespace {

/// The thread the preemption signals are delivered on: the only one of
/// the job's that leaves them unblocked. It waits for the end, and the
/// handler runs on its stack whenever a signal comes.
void deliverSignals(sigset_t signals, int wake) {
  pthread_setname_np(pthread_self(), "graph-signals");
  pthread_sigmask(SIG_UNBLOCK, &signals, nullptr);
  uint64_t ended = 0;
  while (::read(wake, &ended, sizeof ended) < 0 && errno == EINTR) {
  }
}

} // namespace

PreemptionSignals::PreemptionSignals(std::vector<int> signals)
    : signals_(std::move(signals)) {}

Status PreemptionSignals::install(const std::vector<int> &signals,
                                  std::unique_ptr<PreemptionSignals> &out) {
  if (gInstalled.exchange(true))
    return Status::internal("the preemption signals' handlers are already "
                            "installed in this process (one job at a time)");
  gSignal.store(0);
  gCount.store(0);
  gAtNanoseconds.store(0);
  gSender.store(0);
  std::unique_ptr<PreemptionSignals> p(new PreemptionSignals(signals));
  p->saved_ = std::make_unique<Saved>();
  for (int signal : signals) {
    struct sigaction action {};
    action.sa_sigaction = onPreemptionSignal;
    sigemptyset(&action.sa_mask);
    // The reads and writes a signal interrupts go on: the handler decides
    // nothing, the loop does, between steps. SA_SIGINFO: who sent it.
    action.sa_flags = SA_RESTART | SA_SIGINFO;
    struct sigaction previous {};
    if (sigaction(signal, &action, &previous) != 0) {
      int error = errno;
      p->restore();
      return Status::internal("--preempt-signals: cannot handle " +
                              signalName(signal) + ": " + std::strerror(error));
    }
    p->saved_->actions.push_back(previous);
  }
  // Routed to the delivery thread: these, and any other a process is sent
  // politely that has a handler (the host's: Python's SIGINT while
  // graphc.Trainer evaluates), whichever action it runs.
  sigset_t set;
  sigemptyset(&set);
  for (const NamedSignal &named : kSignals) {
    struct sigaction now {};
    sigaction(named.number, nullptr, &now);
    bool handled = (now.sa_flags & SA_SIGINFO)
                       ? now.sa_sigaction != nullptr
                       : now.sa_handler != SIG_DFL && now.sa_handler != SIG_IGN;
    if (handled)
      sigaddset(&set, named.number);
  }
  if (!sigisemptyset(&set)) {
    Saved &saved = *p->saved_;
    saved.wake = ::eventfd(0, EFD_CLOEXEC);
    if (saved.wake < 0)
      return Status::internal(std::string("--preempt-signals: eventfd: ") +
                              std::strerror(errno));
    // Blocked here first: the delivery thread starts with them blocked
    // too, and a signal in between waits for it to unblock them.
    pthread_sigmask(SIG_BLOCK, &set, &saved.callerMask);
    try {
      saved.delivery = std::thread(deliverSignals, set, saved.wake);
    } catch (const std::system_error &e) {
      return Status::internal(
          std::string("--preempt-signals: cannot start the thread the "
                      "signals are delivered on: ") +
          e.what());
    }
  }
  out = std::move(p);
  return Status::ok();
}

void PreemptionSignals::restore() {
  if (!saved_ || saved_->restored)
    return;
  for (size_t i = 0; i < saved_->actions.size(); ++i)
    sigaction(signals_[i], &saved_->actions[i], nullptr);
  saved_->restored = true;
}

PreemptionSignals::~PreemptionSignals() {
  restore();
  if (saved_) {
    if (saved_->delivery.joinable()) {
      uint64_t end = 1;
      (void)!::write(saved_->wake, &end, sizeof end);
      saved_->delivery.join();
    }
    if (saved_->wake >= 0) {
      ::close(saved_->wake);
      pthread_sigmask(SIG_SETMASK, &saved_->callerMask, nullptr);
    }
  }
  gInstalled.store(false);
}

int PreemptionSignals::received() { return gSignal.load(); }
int PreemptionSignals::count() { return gCount.load(); }

bool PreemptionSignals::sentByParent() {
  int sender = gSender.load();
  return sender > 0 && sender == static_cast<int>(::getppid());
}

std::chrono::steady_clock::time_point PreemptionSignals::receivedAt() {
  return std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::nanoseconds(gAtNanoseconds.load())));
}

Status PreemptionHook::afterStep(const StepContext &ctx) {
  if (stopStep_ > 0)
    return Status::ok();
  // Several workers decide on the votes alone, which every one of them has
  // the same; a lone worker also on a signal that came during this step's
  // hooks, so that it stops a step earlier.
  bool stop = ctx.stopVotes > 0 ||
              (workers_ == 1 && PreemptionSignals::received() != 0);
  if (!stop)
    return Status::ok();
  stopStep_ = ctx.step;
  voters_ = ctx.stopVotes;
  if (!chief_)
    return Status::ok();
  int mine = PreemptionSignals::received();
  std::string what =
      mine ? signalName(mine) + " received" : "a preemption signal";
  if (workers_ > 1)
    what += (mine ? " (by " : " reached ") + std::to_string(voters_) + " of " +
            std::to_string(workers_) + " workers" + (mine ? ")" : "");
  out_ << "graphrun: " << what << " at step " << ctx.step
       << (workers_ > 1 ? ": no worker starts another step"
                        : ": no further "
                          "step starts")
       << (checkpointDir_.empty()
               ? "; nothing can be saved (no --checkpoint-dir): the training "
                 "so far is lost"
               : "; the checkpoint of the last step is written next")
       << "\n";
  out_.flush();
  return Status::ok();
}

Status PreemptionHook::finish(Workers &workers, int64_t finalStep,
                              const std::string &checkpoint) const {
  // The chief wrote its checkpoint before its train() returned; once every
  // worker is here, it is complete, and all may exit.
  int reportedBy = -1;
  if (Status s = agree(workers, Status::ok(), reportedBy); !s)
    return s;
  if (!chief_)
    return Status::cancelled("");
  int mine = PreemptionSignals::received();
  std::string text = "preempted by ";
  text += mine ? signalName(mine)
               : "a signal to " + std::to_string(voters_) + " of " +
                     std::to_string(workers_) + " workers";
  text += ": stopped after step " + std::to_string(finalStep);
  if (mine) {
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                      PreemptionSignals::receivedAt())
            .count();
    char after[64];
    std::snprintf(after, sizeof after, ", %.2f s after the signal", seconds);
    text += after;
  }
  if (checkpoint.empty())
    text += ", with nothing saved (no --checkpoint-dir): a rerun starts over";
  else
    text += "; " + checkpoint + " is written: the same command resumes from it";
  text += " (exit status " + std::to_string(kPreemptedExitStatus) + ")";
  return Status::cancelled(text);
}

} // namespace graph::runtime::job

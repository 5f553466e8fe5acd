//===- Preemption.h - stop at a whole step on SIGTERM, resumable -*- C++
//-*-===//
//
// A cluster that takes a job's machines back warns it first: Kubernetes
// sends SIGTERM and kills 30 s later, Slurm sends a signal before the time
// limit (`--signal=USR1@90`). graphrun then stops at a whole step on every
// worker, the chief writes a checkpoint at that step, and the job exits with
// kPreemptedExitStatus, so that the same command resumes it byte for byte.
//
// The handler only records the signal (an atomic store: async-signal-safe).
// The decision is made between steps, on values every worker shares: the
// flag travels with each step's outputs, which the workers sum anyway
// (Hook::votesToStop, StepContext::stopVoted), so a signal that reached one
// worker, or mpirun, stops every worker after the same step.
//
// The handler runs on a thread of its own, never on one that computes. The
// installing thread blocks the signals, and so do the threads it starts
// afterwards and the cpu backend's OpenMP team (cpu::shareSignalMask); a
// delivery thread that does nothing else leaves them unblocked, so the
// kernel hands it every signal sent to the process. Signals the host
// handles go there too (Python's SIGINT while graphc.Trainer evaluates).
// Why: oneDNN 2.6's JIT GEMM kernels (jit_avx_gemm_f32,
// jit_avx512_common_gemm_f32; Debian 12 ships 2.6.3) point rsp into a heap
// workspace while they run, and a signal frame written there corrupts the
// heap: a SIGINT during an MLP's first steps aborted graphrun in about 1 of
// 30 runs ("free(): invalid next size"). oneDNN 3.11 fixed it (issue #4845,
// pull request #4855).
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_JOB_PREEMPTION_H
#define RUNTIME_JOB_PREEMPTION_H

#include "runtime/base/Status.h"
#include "runtime/core/Session.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace graph::runtime {
class Workers;
} // namespace graph::runtime

namespace graph::runtime::job {

/// graphrun's exit status after a preemption signal stopped the job at a
/// whole step (the checkpoint of that step written, with --checkpoint-dir):
/// 128 + SIGTERM, what a shell reports for a process SIGTERM ended, and what
/// Kubernetes and Slurm read as "terminated", whichever signal it was.
constexpr int kPreemptedExitStatus = 143;

/// --preempt-signals: names as `kill -l` prints them, with or without SIG,
/// any case ("TERM,USR1"), or "none". An unknown or unsuitable one (KILL,
/// STOP, SEGV) is an error naming it.
Status parsePreemptSignals(const std::string &text, std::vector<int> &out);

/// "SIGTERM".
std::string signalName(int signal);

/// The preemption signals' handlers, while this lives (one at a time in a
/// process). Each handler records the signal and when it came, nothing
/// else; a second signal changes nothing, so it cannot tear a checkpoint
/// being written. SA_RESTART keeps the reads and writes in flight going.
class PreemptionSignals {
public:
  /// Installs handlers for `signals` (empty: none, the default actions
  /// stay), blocks them on the calling thread, with any other of the named
  /// signals that has a handler (Python's SIGINT), and starts the thread
  /// they are delivered on. Install and destroy on the same thread.
  static Status install(const std::vector<int> &signals,
                        std::unique_ptr<PreemptionSignals> &out);
  /// restore(), ends the delivery thread and gives the calling thread its
  /// signal mask back (a signal still pending then meets the restored
  /// action).
  ~PreemptionSignals();
  PreemptionSignals(const PreemptionSignals &) = delete;
  PreemptionSignals &operator=(const PreemptionSignals &) = delete;

  /// The first signal received (0: none yet), how many came, and the
  /// monotonic time of the first.
  static int received();
  static int count();
  static std::chrono::steady_clock::time_point receivedAt();
  /// Whether the first signal came from this process's parent: under
  /// mpirun, the launcher (mpirun, or orted on another host), which sends
  /// SIGTERM when it ends the job itself (it was sent SIGTERM or SIGINT,
  /// or a worker failed) and then no longer answers MPI_Finalize.
  static bool sentByParent();
  /// Puts the previous actions back (after the last step: a signal during
  /// the final evaluation or --save-weights ends the process at once, the
  /// final checkpoint being written by then). The signals still arrive on
  /// the delivery thread until this object is destroyed. Idempotent.
  void restore();
  const std::vector<int> &signals() const { return signals_; }

private:
  explicit PreemptionSignals(std::vector<int> signals);
  std::vector<int> signals_;
  struct Saved;
  std::unique_ptr<Saved> saved_;
};

/// Ends the run after the first step at which a worker had received a
/// preemption signal: it votes to stop (Hook::votesToStop) while a signal is
/// recorded, and requests the stop once the vote, summed over the workers
/// with the step's outputs, says so. A lone worker also stops on a signal
/// that came during the step's hooks (a checkpoint being written, an
/// evaluation). The checkpoint of the last step is CheckpointHook::end's,
/// as at any run's end; put this hook last, so that it sees the step after
/// every other hook did.
class PreemptionHook : public Hook {
public:
  /// `checkpointDir` empty: nothing can be saved, and the hook says so.
  /// The chief alone writes to `out`.
  PreemptionHook(int workers, bool chief, std::string checkpointDir,
                 std::ostream &out)
      : workers_(workers), chief_(chief),
        checkpointDir_(std::move(checkpointDir)), out_(out) {}

  bool votesToStop() const override {
    return PreemptionSignals::received() != 0;
  }
  Status afterStep(const StepContext &ctx) override;
  bool stopRequested() const override { return stopStep_ > 0; }

  /// Whether the run stopped on a signal, and after which step (the step
  /// the hooks saw last).
  bool stopped() const { return stopStep_ > 0; }
  int64_t stopStep() const { return stopStep_; }

  /// After train() returned from a stop: waits until every worker is done
  /// (the chief's checkpoint written: a worker that exits first makes
  /// mpirun kill the others) and returns the job's outcome, a
  /// StatusCode::cancelled status whose message (the chief's; empty on the
  /// others) says what was saved. `finalStep` is the session's global step
  /// (a step launched ahead of the stop also ran), `checkpoint` the file
  /// written ("" without --checkpoint-dir).
  Status finish(Workers &workers, int64_t finalStep,
                const std::string &checkpoint) const;

private:
  int workers_;
  bool chief_;
  std::string checkpointDir_;
  std::ostream &out_;
  int64_t stopStep_ = 0;
  /// Workers that had a signal when the stop was voted (0: the lone
  /// worker's signal came during the step's hooks).
  int voters_ = 0;
};

} // namespace graph::runtime::job

#endif // RUNTIME_JOB_PREEMPTION_H

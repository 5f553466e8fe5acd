//===- Workers.cpp - one process, or the MPI processes of a job -----------===//
//
// MpiWorkers carries every operation on blocking MPI collectives of its own
// communicator: Open MPI's tuned blocking all-reduce is what a job wants on
// its data path (its non-blocking one, libnbc, measured 75% slower on the
// seed CNN's 364 KiB: bench/mpi-allreduce). A blocking call cannot time
// out, so a watchdog thread, as NCCL's and Horovod's stall check, watches
// the collective in flight: past the timeout it names the late worker,
// prints the error and aborts the job (MPI_Abort ends every worker).
//
// To name the late worker, each worker tells the next one (rank + 1, a
// ring) the number of the collective it is entering, one 8-byte message per
// collective, and its watchdog repeats it a few times per timeout: a worker
// whose predecessor never entered the collective that timed out, or went
// silent inside it, names it. A stopped or dead worker's successor names
// it, whatever the others say.
//
// MPI is initialised with MPI_THREAD_MULTIPLE, since the watchdog reads the
// heartbeats and aborts while the main thread is inside a collective.
// Without it the watchdog names the late worker from the heartbeats read
// before the collective, and ends this process instead of calling MPI.
//
//===----------------------------------------------------------------------===//

#include "runtime/collectives/Workers.h"

#include "runtime/base/Bfloat16.h"

#ifdef GRAPH_HAVE_MPI
// The C API only: Open MPI's deprecated C++ bindings would need their own
// library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

#include <algorithm>
#include <array>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace graph::runtime {

namespace {

std::string localHostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0)
    return "unknown";
  return name;
}

class SingleWorker final : public Workers {
public:
  SingleWorker() : host_(localHostName()) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const std::string &host(int) const override { return host_; }
  Status allReduceSum(float *, int64_t) override { return Status::ok(); }
  Status allReduceSum(double *, int64_t) override { return Status::ok(); }
  Status allReduceSumAsBf16(float *, int64_t) override { return Status::ok(); }
  Status broadcast(void *, size_t, int) override { return Status::ok(); }
  Status allGather(const std::string &mine,
                   std::vector<std::string> &all) override {
    all = {mine};
    return Status::ok();
  }
  [[noreturn]] void abort(int status) override { std::exit(status); }

private:
  std::string host_;
};

#ifdef GRAPH_HAVE_MPI

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

/// MPI's reduction of two bfloat16 buffers (MPI_UINT16_T): each pair
/// summed in float32, rounded to nearest even.
void sumBf16(void *in, void *inout, int *len, MPI_Datatype *) {
  addBf16(static_cast<const uint16_t *>(in), static_cast<uint16_t *>(inout),
          *len);
}

class MpiWorkers final : public Workers {
public:
  static Status join(std::chrono::milliseconds timeout,
                     std::unique_ptr<Workers> &out) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    bool owner = false;
    int provided = MPI_THREAD_SINGLE;
    if (!initialized) {
      int rc =
          MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
      if (rc != MPI_SUCCESS)
        return Status::error("MPI_Init_thread failed: " + mpiError(rc));
      owner = true;
    } else {
      MPI_Query_thread(&provided);
    }
    if (provided < MPI_THREAD_SERIALIZED)
      return Status::error("this MPI gives thread level " +
                           std::to_string(provided) +
                           ", below MPI_THREAD_SERIALIZED, which the "
                           "workers' collectives need");
    std::unique_ptr<MpiWorkers> w(
        new MpiWorkers(timeout, owner, provided >= MPI_THREAD_MULTIPLE));
    if (Status s = w->start(); !s)
      return s;
    out = std::move(w);
    return Status::ok();
  }

  ~MpiWorkers() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    if (watchdog_.joinable())
      watchdog_.join();
    // A clean end: every worker reached it, so the heartbeat traffic is
    // drained and the receive cancelled before the communicator goes.
    if (comm_ != MPI_COMM_NULL) {
      if (recvPosted_) {
        MPI_Cancel(&recvRequest_);
        MPI_Wait(&recvRequest_, MPI_STATUS_IGNORE);
      }
      for (MPI_Request &r : sendRequests_)
        if (r != MPI_REQUEST_NULL)
          MPI_Wait(&r, MPI_STATUS_IGNORE);
      MPI_Comm_free(&comm_);
    }
    if (bf16Sum_ != MPI_OP_NULL)
      MPI_Op_free(&bf16Sum_);
    if (owner_) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized)
        MPI_Finalize();
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string &host(int rank) const override { return hosts_[rank]; }

  Status allReduceSum(float *data, int64_t count) override {
    return allReduce(data, count, MPI_FLOAT,
                     "summing " + std::to_string(count) + " floats");
  }
  Status allReduceSum(double *data, int64_t count) override {
    return allReduce(data, count, MPI_DOUBLE,
                     "summing " + std::to_string(count) + " doubles");
  }
  Status allReduceSumAsBf16(float *data, int64_t count) override {
    wire_.resize(static_cast<size_t>(count));
    floatsToBf16(data, wire_.data(), count);
    if (Status s = allReduce(wire_.data(), count, MPI_UINT16_T,
                             "summing " + std::to_string(count) + " bfloat16s",
                             bf16Sum_);
        !s)
      return s;
    bf16sToFloats(wire_.data(), data, count);
    return Status::ok();
  }

  Status broadcast(void *data, size_t bytes, int root) override {
    auto *p = static_cast<char *>(data);
    std::string what =
        "broadcasting " + std::to_string(bytes) + " bytes from " + name(root);
    do {
      int chunk = static_cast<int>(std::min<size_t>(bytes, INT_MAX));
      if (Status s = collective(
              what, [&] { return MPI_Bcast(p, chunk, MPI_BYTE, root, comm_); });
          !s)
        return s;
      p += chunk;
      bytes -= static_cast<size_t>(chunk);
    } while (bytes > 0);
    return Status::ok();
  }

  Status allGather(const std::string &mine,
                   std::vector<std::string> &all) override {
    std::string what = "gathering every worker's view of the job";
    if (mine.size() > static_cast<size_t>(INT_MAX) / 2)
      return Status::error(what + ": too large");
    int length = static_cast<int>(mine.size());
    std::vector<int> lengths(static_cast<size_t>(size_));
    if (Status s = collective(what,
                              [&] {
                                return MPI_Allgather(&length, 1, MPI_INT,
                                                     lengths.data(), 1, MPI_INT,
                                                     comm_);
                              });
        !s)
      return s;
    std::vector<int> offsets(static_cast<size_t>(size_));
    int64_t total = 0;
    for (int r = 0; r < size_; ++r) {
      offsets[r] = static_cast<int>(total);
      total += lengths[r];
      if (total > INT_MAX)
        return Status::error(what + ": too large");
    }
    std::string buffer(static_cast<size_t>(total), '\0');
    if (Status s =
            collective(what,
                       [&] {
                         return MPI_Allgatherv(mine.data(), length, MPI_CHAR,
                                               buffer.data(), lengths.data(),
                                               offsets.data(), MPI_CHAR, comm_);
                       });
        !s)
      return s;
    all.clear();
    for (int r = 0; r < size_; ++r)
      all.push_back(buffer.substr(offsets[r], lengths[r]));
    return Status::ok();
  }

  void progress(int64_t step) override {
    std::lock_guard<std::mutex> lock(mutex_);
    step_ = step;
  }

  [[noreturn]] void abort(int status) override {
    std::fflush(stdout);
    std::fflush(stderr);
    // MPI_Abort asks the runtime to end every worker, and can itself stall
    // (its daemon tearing down, a peer that stopped answering): a last
    // watchdog ends this process regardless, so that no worker outlives
    // the job; the others' own watchdogs do the same for them.
    std::thread([status] {
      std::this_thread::sleep_for(kAbortGrace);
      std::_Exit(status);
    }).detach();
    MPI_Abort(comm_ != MPI_COMM_NULL ? comm_ : MPI_COMM_WORLD, status);
    std::_Exit(status); // MPI_Abort does not return; in case it does
  }

private:
  MpiWorkers(std::chrono::milliseconds timeout, bool owner, bool multiple)
      : timeout_(timeout), owner_(owner), multiple_(multiple) {}

  static constexpr int kHeartbeatTag = 7001;
  /// How long abort() lets MPI_Abort end the job before ending this
  /// process itself.
  static constexpr std::chrono::seconds kAbortGrace{5};
  using Clock = std::chrono::steady_clock;

  Status start() {
    if (int rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm_); rc != MPI_SUCCESS)
      return Status::error("MPI_Comm_dup: " + mpiError(rc));
    if (int rc = MPI_Op_create(&sumBf16, /*commute=*/1, &bf16Sum_);
        rc != MPI_SUCCESS)
      return Status::error("MPI_Op_create: " + mpiError(rc));
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    hosts_.assign(static_cast<size_t>(size_), "?");
    hosts_[rank_] = localHostName();
    if (size_ > 1)
      postReceive();
    watchdog_ = std::thread([this] { watch(); });
    std::vector<std::string> all;
    if (Status s = allGather(hosts_[rank_], all); !s)
      return s;
    hosts_ = std::move(all);
    return Status::ok();
  }

  /// Runs the blocking MPI call `call` as collective number seq_ + 1,
  /// under the watchdog.
  template <typename Call>
  Status collective(const std::string &what, Call &&call) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++seq_;
      sendHeartbeat();
      pollHeartbeats();
      busy_ = true;
      busyWhat_ = what;
      busySince_ = Clock::now();
      ++busyGeneration_;
    }
    int rc = call();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      busy_ = false;
    }
    if (rc != MPI_SUCCESS)
      return Status::error(what + ": " + mpiError(rc));
    return Status::ok();
  }

  Status allReduce(void *data, int64_t count, MPI_Datatype type,
                   const std::string &what, MPI_Op op = MPI_SUM) {
    int elementBytes = 0;
    MPI_Type_size(type, &elementBytes);
    auto *p = static_cast<char *>(data);
    while (count > 0) {
      int chunk = static_cast<int>(std::min<int64_t>(count, INT_MAX));
      if (Status s = collective(what,
                                [&] {
                                  return MPI_Allreduce(MPI_IN_PLACE, p, chunk,
                                                       type, op, comm_);
                                });
          !s)
        return s;
      p += static_cast<int64_t>(chunk) * elementBytes;
      count -= chunk;
    }
    return Status::ok();
  }

  /// The watchdog: looks a few times per timeout at the collective in
  /// flight (waking it at every collective would cost the data path a
  /// context switch) and reports the one that outlives the timeout.
  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    auto period = std::max<std::chrono::milliseconds>(
        std::chrono::milliseconds(1), timeout_ / 8);
    Clock::time_point lastWake = Clock::now();
    while (!stop_) {
      cv_.wait_for(lock, period, [&] { return stop_; });
      if (stop_)
        break;
      Clock::time_point now = Clock::now();
      if (now - lastWake > timeout_ / 2) {
        // This process was itself stopped (SIGSTOP, a debugger) and has
        // just been continued: the others, not it, judge who was late.
        busySince_ = lastHeard_ = now;
      }
      lastWake = now;
      if (multiple_) {
        // Proof of life for the successor, even inside a long collective.
        sendHeartbeat();
        pollHeartbeats();
      }
      if (!busy_ || now - busySince_ < timeout_)
        continue;
      std::string message = diagnose();
      lock.unlock();
      std::fflush(stdout);
      std::fprintf(stderr, "graphrun: error: %s: %s\n", name(rank_).c_str(),
                   message.c_str());
      std::fflush(stderr);
      if (multiple_)
        MPI_Abort(comm_, 1);
      std::_Exit(1); // mpirun ends the others when a worker exits non-zero
    }
  }

  /// Why collective number seq_ did not complete (mutex_ held).
  std::string diagnose() {
    if (multiple_)
      pollHeartbeats();
    int predecessor = (rank_ + size_ - 1) % size_;
    std::string where = "step " + std::to_string(step_) + ", " + busyWhat_ +
                        ": no answer from every worker after " +
                        std::to_string(timeout_.count()) + " ms";
    if (lastPredecessorSeq_ < seq_)
      return where + ": " + name(predecessor) +
             " is late: it stopped, hangs or died before this collective (it "
             "entered " +
             std::to_string(lastPredecessorSeq_) + " collectives, " +
             name(rank_) + " " + std::to_string(seq_) + ")";
    auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(
        Clock::now() - lastHeard_);
    if (multiple_ && silent > timeout_ / 2)
      return where + ": " + name(predecessor) +
             " is late: it entered this collective, then went silent (stopped "
             "or died) " +
             std::to_string(silent.count()) + " ms ago";
    if (size_ == 2)
      return where + ": both workers entered it and answer: the transport "
                     "between them is stuck";
    return where + ": another worker is late (" + name(predecessor) +
           " is not: the worker after the late one names it)";
  }

  void postReceive() {
    int predecessor = (rank_ + size_ - 1) % size_;
    recvPosted_ = MPI_Irecv(&predecessorSeq_, 1, MPI_INT64_T, predecessor,
                            kHeartbeatTag, comm_, &recvRequest_) == MPI_SUCCESS;
  }

  /// Takes in every heartbeat the predecessor has sent so far (mutex_
  /// held).
  void pollHeartbeats() {
    while (recvPosted_) {
      int done = 0;
      if (MPI_Test(&recvRequest_, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
          !done)
        return;
      lastPredecessorSeq_ = predecessorSeq_;
      lastHeard_ = Clock::now();
      postReceive();
    }
  }

  /// Tells the successor that this worker entered seq_ collectives (mutex_
  /// held): at each collective, and from the watchdog as proof of life. A send
  /// whose slot is still busy is skipped rather than waited for (8-byte
  /// messages go eagerly, so this does not happen in practice).
  void sendHeartbeat() {
    if (size_ == 1)
      return;
    size_t slot = static_cast<size_t>(sent_++) % sendSeq_.size();
    MPI_Request &request = sendRequests_[slot];
    if (request != MPI_REQUEST_NULL) {
      int done = 0;
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (!done)
        return;
    }
    sendSeq_[slot] = seq_;
    int successor = (rank_ + 1) % size_;
    MPI_Isend(&sendSeq_[slot], 1, MPI_INT64_T, successor, kHeartbeatTag, comm_,
              &request);
  }

  std::chrono::milliseconds timeout_;
  bool owner_;
  /// MPI_THREAD_MULTIPLE: the watchdog may call MPI.
  bool multiple_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Op bf16Sum_ = MPI_OP_NULL; // sumBf16
  std::vector<uint16_t> wire_;   // allReduceSumAsBf16's bfloat16 copy
  int rank_ = 0, size_ = 1;
  std::vector<std::string> hosts_;

  // Shared with the watchdog, under mutex_.
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool busy_ = false;
  uint64_t busyGeneration_ = 0;
  std::string busyWhat_;
  Clock::time_point busySince_;
  int64_t step_ = 0;
  // Heartbeats: the collectives this worker entered; the predecessor's
  // last count received (and the buffer of the receive in flight), and when.
  int64_t seq_ = 0;
  int64_t predecessorSeq_ = 0, lastPredecessorSeq_ = 0;
  Clock::time_point lastHeard_ = Clock::now();
  uint64_t sent_ = 0;
  MPI_Request recvRequest_ = MPI_REQUEST_NULL;
  bool recvPosted_ = false;
  std::array<int64_t, 16> sendSeq_{};
  std::array<MPI_Request, 16> sendRequests_ = [] {
    std::array<MPI_Request, 16> r;
    r.fill(MPI_REQUEST_NULL);
    return r;
  }();
  /// Last: started after, and joined before, what it uses.
  std::thread watchdog_;
};

#endif // GRAPH_HAVE_MPI

} // namespace

std::unique_ptr<Workers> singleWorker() {
  return std::make_unique<SingleWorker>();
}

bool launchedAsWorker() {
  // Open MPI's mpirun, PMIx launchers (srun --mpi=pmix, prterun), and
  // PMI-1/2 launchers (MPICH's hydra, srun --mpi=pmi2).
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(name))
      return true;
  return false;
}

Status joinWorkers(std::chrono::milliseconds timeout,
                   std::unique_ptr<Workers> &out) {
#ifdef GRAPH_HAVE_MPI
  return MpiWorkers::join(timeout, out);
#else
  (void)timeout;
  (void)out;
  return Status::error("this process was launched as one of several workers "
                       "(by mpirun or srun), but this graphrun was built "
                       "without MPI: install libopenmpi-dev and rebuild");
#endif
}

Status agree(Workers &workers, const Status &mine, int &reportedBy) {
  reportedBy = -1;
  std::vector<std::string> all;
  std::string vote = mine ? std::string("1") : "0" + mine.message();
  if (Status s = workers.allGather(vote, all); !s) {
    reportedBy = workers.rank();
    return s;
  }
  for (int r = 0; r < static_cast<int>(all.size()); ++r)
    if (!all[r].empty() && all[r][0] == '0') {
      reportedBy = r;
      return Status::error(all[r].substr(1));
    }
  return Status::ok();
}

} // namespace graph::runtime

//===- Workers.cpp - one process, or the MPI processes of a job -----------===//
//
// MpiWorkers runs every operation as a non-blocking MPI collective on its
// own communicator, polled until it completes or the timeout passes, so a
// dead or stopped worker becomes an error instead of a hang. To name the
// late worker, each worker tells the next one (rank + 1, a ring) the number
// of the collective it is entering, with one small message per collective:
// when collective #k times out, a worker whose predecessor never entered #k
// names it. A stopped worker's successor therefore names it, whatever the
// others say; the job is then aborted (MPI_Abort), which ends every worker.
//
// MPI is initialised with MPI_THREAD_SERIALIZED: during a step only one
// thread at a time calls it (the first local replica's, once per bucket),
// and the job's own calls come between steps.
//
//===----------------------------------------------------------------------===//

#include "runtime/collectives/Workers.h"

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
#include <cstdio>
#include <cstdlib>
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

class MpiWorkers final : public Workers {
public:
  static Status join(std::chrono::milliseconds timeout,
                     std::unique_ptr<Workers> &out) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    bool owner = false;
    if (!initialized) {
      int provided = MPI_THREAD_SINGLE;
      int rc =
          MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
      if (rc != MPI_SUCCESS)
        return Status::error("MPI_Init_thread failed: " + mpiError(rc));
      owner = true;
      if (provided < MPI_THREAD_SERIALIZED)
        return Status::error("this MPI gives thread level " +
                             std::to_string(provided) +
                             ", below MPI_THREAD_SERIALIZED, which the "
                             "workers' collectives need");
    }
    std::unique_ptr<MpiWorkers> w(new MpiWorkers(timeout, owner));
    if (Status s = w->start(); !s)
      return s;
    out = std::move(w);
    return Status::ok();
  }

  ~MpiWorkers() override {
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

  Status broadcast(void *data, size_t bytes, int root) override {
    auto *p = static_cast<char *>(data);
    std::string what =
        "broadcasting " + std::to_string(bytes) + " bytes from " + name(root);
    do {
      int chunk = static_cast<int>(std::min<size_t>(bytes, INT_MAX));
      MPI_Request request;
      if (Status s = enter(what); !s)
        return s;
      if (int rc = MPI_Ibcast(p, chunk, MPI_BYTE, root, comm_, &request);
          rc != MPI_SUCCESS)
        return Status::error(what + ": " + mpiError(rc));
      if (Status s = wait(request, what); !s)
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
    MPI_Request request;
    if (Status s = enter(what); !s)
      return s;
    if (int rc = MPI_Iallgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT,
                                comm_, &request);
        rc != MPI_SUCCESS)
      return Status::error(what + ": " + mpiError(rc));
    if (Status s = wait(request, what); !s)
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
    if (Status s = enter(what); !s)
      return s;
    if (int rc = MPI_Iallgatherv(mine.data(), length, MPI_CHAR, buffer.data(),
                                 lengths.data(), offsets.data(), MPI_CHAR,
                                 comm_, &request);
        rc != MPI_SUCCESS)
      return Status::error(what + ": " + mpiError(rc));
    if (Status s = wait(request, what); !s)
      return s;
    all.clear();
    for (int r = 0; r < size_; ++r)
      all.push_back(buffer.substr(offsets[r], lengths[r]));
    return Status::ok();
  }

  void progress(int64_t step) override { step_ = step; }

  [[noreturn]] void abort(int status) override {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(comm_ != MPI_COMM_NULL ? comm_ : MPI_COMM_WORLD, status);
    std::_Exit(status); // MPI_Abort does not return; in case it does
  }

private:
  MpiWorkers(std::chrono::milliseconds timeout, bool owner)
      : timeout_(timeout), owner_(owner) {}

  static constexpr int kHeartbeatTag = 7001;

  Status start() {
    if (int rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm_); rc != MPI_SUCCESS)
      return Status::error("MPI_Comm_dup: " + mpiError(rc));
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    hosts_.assign(static_cast<size_t>(size_), "?");
    hosts_[rank_] = localHostName();
    if (size_ > 1)
      postReceive();
    std::vector<std::string> all;
    if (Status s = allGather(hosts_[rank_], all); !s)
      return s;
    hosts_ = std::move(all);
    return Status::ok();
  }

  void postReceive() {
    int predecessor = (rank_ + size_ - 1) % size_;
    recvPosted_ = MPI_Irecv(&predecessorSeq_, 1, MPI_INT64_T, predecessor,
                            kHeartbeatTag, comm_, &recvRequest_) == MPI_SUCCESS;
  }

  /// Takes in every heartbeat the predecessor has sent so far.
  void pollHeartbeats() {
    while (recvPosted_) {
      int done = 0;
      if (MPI_Test(&recvRequest_, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
          !done)
        return;
      lastPredecessorSeq_ = predecessorSeq_;
      postReceive();
    }
  }

  /// Collective number seq_ + 1 begins: tell the successor. A send whose
  /// slot is still busy is skipped rather than waited for (8-byte messages
  /// go eagerly, so this does not happen in practice).
  Status enter(const std::string &) {
    ++seq_;
    if (size_ == 1)
      return Status::ok();
    size_t slot = static_cast<size_t>(seq_) % sendSeq_.size();
    MPI_Request &request = sendRequests_[slot];
    if (request != MPI_REQUEST_NULL) {
      int done = 0;
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (!done)
        return Status::ok();
    }
    sendSeq_[slot] = seq_;
    int successor = (rank_ + 1) % size_;
    MPI_Isend(&sendSeq_[slot], 1, MPI_INT64_T, successor, kHeartbeatTag, comm_,
              &request);
    pollHeartbeats();
    return Status::ok();
  }

  Status allReduce(void *data, int64_t count, MPI_Datatype type,
                   const std::string &what) {
    int elementBytes = 0;
    MPI_Type_size(type, &elementBytes);
    auto *p = static_cast<char *>(data);
    while (count > 0) {
      int chunk = static_cast<int>(std::min<int64_t>(count, INT_MAX));
      MPI_Request request;
      if (Status s = enter(what); !s)
        return s;
      if (int rc = MPI_Iallreduce(MPI_IN_PLACE, p, chunk, type, MPI_SUM, comm_,
                                  &request);
          rc != MPI_SUCCESS)
        return Status::error(what + ": " + mpiError(rc));
      if (Status s = wait(request, what); !s)
        return s;
      p += static_cast<int64_t>(chunk) * elementBytes;
      count -= chunk;
    }
    return Status::ok();
  }

  /// Polls `request` until it completes or the timeout passes: spinning
  /// for the first milliseconds (a small all-reduce takes tens of
  /// microseconds), then sleeping briefly between tests.
  Status wait(MPI_Request &request, const std::string &what) {
    using Clock = std::chrono::steady_clock;
    Clock::time_point start = Clock::now(), deadline = start + timeout_;
    for (int64_t polls = 0;; ++polls) {
      int done = 0;
      if (int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
          rc != MPI_SUCCESS)
        return Status::error(what + ": " + mpiError(rc));
      if (done)
        return Status::ok();
      Clock::time_point now = Clock::now();
      if (now > deadline)
        return timedOut(what);
      if (now - start > std::chrono::milliseconds(2)) {
        pollHeartbeats();
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    }
  }

  Status timedOut(const std::string &what) {
    pollHeartbeats();
    int predecessor = (rank_ + size_ - 1) % size_;
    std::string where = "step " + std::to_string(step_) + ", " + what + ": " +
                        "no answer from every worker after " +
                        std::to_string(timeout_.count()) + " ms (" +
                        name(rank_) + " waited)";
    if (lastPredecessorSeq_ < seq_)
      return Status::error(where + ": " + name(predecessor) +
                           " is late: it stopped, hangs or died before this "
                           "collective (it entered " +
                           std::to_string(lastPredecessorSeq_) +
                           " collectives, this worker " + std::to_string(seq_) +
                           ")");
    return Status::error(where + ": another worker is late (" +
                         name(predecessor) +
                         " is not: the worker after the late one names it)");
  }

  std::chrono::milliseconds timeout_;
  bool owner_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::vector<std::string> hosts_;
  int64_t step_ = 0;
  // Heartbeats: the collectives this worker entered; the predecessor's
  // last count received (and the buffer of the receive in flight).
  int64_t seq_ = 0;
  int64_t predecessorSeq_ = 0, lastPredecessorSeq_ = 0;
  MPI_Request recvRequest_ = MPI_REQUEST_NULL;
  bool recvPosted_ = false;
  std::array<int64_t, 16> sendSeq_{};
  std::array<MPI_Request, 16> sendRequests_ = [] {
    std::array<MPI_Request, 16> r;
    r.fill(MPI_REQUEST_NULL);
    return r;
  }();
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

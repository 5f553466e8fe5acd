//===- mpi-allreduce.cpp - our cross-worker all-reduce against bare MPI ---===//
//
// Under mpirun: the same floats summed across the same processes, once by a
// bare MPI_Allreduce(MPI_IN_PLACE) and once by Workers::allReduceSum (the
// cross-worker step of graphrun's all-reduce: the same blocking call, plus
// the step bookkeeping the watchdog reads to name a late worker). The two
// alternate, and which goes first alternates too, so that both see the same
// machine and neither always runs right after the buffer refill. Rank 0
// prints the mean and median of each and our overhead.
//
//   mpirun -np 2 mpi-allreduce [--floats 93322] [--reps 2000]
//
//===----------------------------------------------------------------------===//

#include "runtime/collectives/Workers.h"

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <vector>

using namespace graph::runtime;

int main(int argc, char **argv) {
  CLI::App app{"Times graphrun's cross-worker all-reduce against a bare "
               "MPI_Allreduce"};
  int64_t floats = 93322; // the seed CNN's gradients
  int reps = 2000;
  app.add_option("--floats", floats, "floats per all-reduce");
  app.add_option("--reps", reps, "timed all-reduces of each kind");
  CLI11_PARSE(app, argc, argv);

  std::unique_ptr<Workers> workers;
  if (Status s = joinWorkers(std::chrono::seconds(60), workers); !s) {
    std::fprintf(stderr, "mpi-allreduce: %s\n", s.message().c_str());
    return 1;
  }
  std::vector<float> data(static_cast<size_t>(floats), 1.0f);
  std::vector<double> bare, ours;
  using Clock = std::chrono::steady_clock;
  auto timeBare = [&]() {
    std::fill(data.begin(), data.end(), 1.0f);
    MPI_Barrier(MPI_COMM_WORLD);
    auto a = Clock::now();
    MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(floats),
                  MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    return std::chrono::duration<double, std::milli>(Clock::now() - a).count();
  };
  auto timeOurs = [&](double &ms) -> Status {
    std::fill(data.begin(), data.end(), 1.0f);
    MPI_Barrier(MPI_COMM_WORLD);
    auto a = Clock::now();
    Status s = workers->allReduceSum(data.data(), floats);
    ms = std::chrono::duration<double, std::milli>(Clock::now() - a).count();
    return s;
  };
  for (int i = 0; i < reps + 20; ++i) {
    double b = 0, o = 0;
    Status s = Status::ok();
    if (i % 2 == 0) {
      b = timeBare();
      s = timeOurs(o);
    } else {
      s = timeOurs(o);
      b = timeBare();
    }
    if (!s) {
      std::fprintf(stderr, "mpi-allreduce: %s\n", s.message().c_str());
      return 1;
    }
    if (data[0] != static_cast<float>(workers->size())) {
      std::fprintf(stderr, "mpi-allreduce: wrong sum %g\n", data[0]);
      return 1;
    }
    if (i < 20)
      continue; // warm-up: connections, caches
    bare.push_back(b);
    ours.push_back(o);
  }
  if (workers->isChief()) {
    auto mean = [](const std::vector<double> &v) {
      return std::accumulate(v.begin(), v.end(), 0.0) / v.size();
    };
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    std::printf("%d processes, %lld floats (%.1f KiB), %d all-reduces each\n",
                workers->size(), static_cast<long long>(floats),
                floats * 4 / 1024.0, reps);
    std::printf("%-34s %10s %10s\n", "", "mean ms", "median ms");
    std::printf("%-34s %10.4f %10.4f\n", "MPI_Allreduce (bare)", mean(bare),
                median(bare));
    std::printf("%-34s %10.4f %10.4f\n", "Workers::allReduceSum (ours)",
                mean(ours), median(ours));
    std::printf("our overhead: %+.1f%% (mean), %+.1f%% (median)\n",
                100.0 * (mean(ours) / mean(bare) - 1),
                100.0 * (median(ours) / median(bare) - 1));
  }
  return 0;
}

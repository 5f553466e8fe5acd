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
// --dtype bf16 times the cross-worker step of `graphrun --allreduce-dtype
// bf16` instead: Workers::allReduceSumAsBf16 (the floats rounded to
// bfloat16, half the bytes, MPI's reduction a user op, widened back), against
// the same bare float32 MPI_Allreduce. --dump DIR runs one all-reduce of varied
// values instead of timing (each rank's input and result as raw float32 files
// in DIR, for test/tools/graphrun/multi-worker/ allreduce-bf16.test to check
// against NumPy).
//
//   mpirun -np 2 mpi-allreduce [--floats 93322] [--reps 2000]
//                              [--dtype fp32|bf16] [--dump DIR]
//
//===----------------------------------------------------------------------===//

#include "runtime/collectives/Workers.h"

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

using namespace graph::runtime;

int main(int argc, char **argv) {
  CLI::App app{"Times graphrun's cross-worker all-reduce against a bare "
               "MPI_Allreduce"};
  int64_t floats = 93322; // the seed CNN's gradients
  int reps = 2000;
  app.add_option("--floats", floats, "floats per all-reduce");
  app.add_option("--reps", reps, "timed all-reduces of each kind");
  std::string dtype = "fp32", dump;
  app.add_option("--dtype", dtype,
                 "fp32, or bf16: ours carries the floats as bfloat16")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  app.add_option("--dump", dump,
                 "run one all-reduce of varied values and write each rank's "
                 "input and result to this folder (raw float32)");
  CLI11_PARSE(app, argc, argv);
  const bool bf16 = dtype == "bf16";

  std::unique_ptr<Workers> workers;
  if (Status s = joinWorkers(std::chrono::seconds(60), workers); !s) {
    std::fprintf(stderr, "mpi-allreduce: %s\n", s.message().c_str());
    return 1;
  }
  std::vector<float> data(static_cast<size_t>(floats), 1.0f);
  auto reduceOurs = [&]() {
    return bf16 ? workers->allReduceSumAsBf16(data.data(), floats)
                : workers->allReduceSum(data.data(), floats);
  };
  if (!dump.empty()) {
    // Magnitudes over 8 decades and both signs, different on every rank,
    // so that the sums round.
    const int rank = workers->rank();
    for (int64_t i = 0; i < floats; ++i)
      data[i] = static_cast<float>(std::sin(0.37 * i + 1.3 * rank) *
                                   std::pow(10.0, (i + rank) % 9 - 4));
    auto write = [&](const std::string &name) {
      std::ofstream(dump + "/" + name + "." + std::to_string(rank) + ".f32",
                    std::ios::binary)
          .write(reinterpret_cast<const char *>(data.data()),
                 static_cast<std::streamsize>(data.size() * sizeof(float)));
    };
    write("in");
    if (Status s = reduceOurs(); !s) {
      std::fprintf(stderr, "mpi-allreduce: %s\n", s.message().c_str());
      return 1;
    }
    write("out");
    return 0;
  }
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
    Status s = reduceOurs();
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
    std::printf("%-40s %10s %10s\n", "", "mean ms", "median ms");
    std::printf("%-40s %10.4f %10.4f\n", "MPI_Allreduce, float32 (bare)",
                mean(bare), median(bare));
    std::printf("%-40s %10.4f %10.4f\n",
                bf16 ? "allReduceSumAsBf16 (ours)"
                     : "Workers::allReduceSum (ours)",
                mean(ours), median(ours));
    if (bf16)
      std::printf("bytes on the wire per all-reduce: %lld (float32: %lld)\n",
                  static_cast<long long>(floats * 2),
                  static_cast<long long>(floats * 4));
    std::printf("our overhead: %+.1f%% (mean), %+.1f%% (median)\n",
                100.0 * (mean(ours) / mean(bare) - 1),
                100.0 * (median(ours) / median(bare) - 1));
  }
  return 0;
}

//===- ProcessClock.h - what the bench programs measure of themselves -*- C++
//-*-===//
//
// The bench programs report the input's rate by wall clock and by CPU time
// (on a shared machine less moved by the other jobs), and their peak
// resident set.
//
//===----------------------------------------------------------------------===//

#ifndef BENCH_PROCESSCLOCK_H
#define BENCH_PROCESSCLOCK_H

#include <sys/resource.h>

#include <chrono>

namespace graph::bench {

/// CPU seconds of the whole process (every thread), user and system.
inline double cpuSeconds() {
  rusage r;
  getrusage(RUSAGE_SELF, &r);
  return r.ru_utime.tv_sec + r.ru_stime.tv_sec +
         1e-6 * (r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

/// The process's peak resident set so far, in MiB (ru_maxrss is KiB).
inline double peakRssMiB() {
  rusage r;
  getrusage(RUSAGE_SELF, &r);
  return r.ru_maxrss / 1024.0;
}

inline double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace graph::bench

#endif // BENCH_PROCESSCLOCK_H

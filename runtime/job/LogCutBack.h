//===- LogCutBack.h - logs cut back to a checkpoint -------------*- C++ -*-===//
//
// A run interrupted between two checkpoints has written log records (CSV
// rows, TensorBoard events, --metrics lines) for steps that its resumed run
// trains again. Each checkpoint records a log's absolute path and size;
// the resumed run cuts the same file back to that size before it appends,
// so the log reads as the uninterrupted run's.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_JOB_LOGCUTBACK_H
#define RUNTIME_JOB_LOGCUTBACK_H

#include "runtime/base/Status.h"

#include <cstdint>
#include <string>

namespace graph::runtime::job {

/// `path` made absolute (lexically): a run resumed from another directory
/// names the same file the same way.
std::string absolutePath(const std::string &path);

/// Cuts the file at `path` back to `bytes`, if it is longer (a missing or
/// shorter file is left as it is); an error names the file.
Status cutBack(const std::string &path, uint64_t bytes);

/// Cuts a file of lines that each begin with their step ("17: ...", as
/// --data-order writes them) before its first line of a step after `step`.
/// Each worker writes its own such file and the chief's checkpoint records
/// none of their sizes: the lines say where to cut. A missing file is left
/// missing; an error names the file.
Status cutBackAfterStep(const std::string &path, int64_t step);

} // namespace graph::runtime::job

#endif // RUNTIME_JOB_LOGCUTBACK_H

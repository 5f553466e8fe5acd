//===- PathGlob.h - a directory, or a glob under one ------------*- C++ -*-===//
//
// An image folder is named by its directory or by a glob in the form
// `DIR/**/*.jpeg`: the components before the first wildcard are the
// directory, the rest a pattern that the files' paths under it must match.
// `**` is any number of folders (none included); `*` and `?` match within a
// component, as in a shell, never across a `/` and never a leading `.`
// (hidden files and folders stay hidden). Matching is ours, not a shell's:
// a data path never goes through one, and a glob means the same on every
// machine.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_DATA_PATHGLOB_H
#define RUNTIME_DATA_PATHGLOB_H

#include "runtime/base/Status.h"

#include <string>
#include <vector>

namespace graph::runtime::data {

struct PathGlob {
  /// The directory before the first wildcard, without a trailing '/'.
  std::string root;
  /// The pattern's components under root; empty when the path named a
  /// plain directory (every file under it matches).
  std::vector<std::string> pattern;

  bool isGlob() const { return !pattern.empty(); }
  /// Whether a path under root, split into its components, matches.
  bool matches(const std::vector<std::string> &relative) const;
};

/// Splits `path` into root and pattern. Fails on an empty path, on `**`
/// inside a component (`a**b`), and on a pattern whose last component is
/// `**` (it would name folders, not files). `[` has no meaning: it matches
/// itself, so a folder named `run[1]` needs no escaping.
Status parsePathGlob(const std::string &path, PathGlob &out);

/// Whether one path component matches a pattern of `*` and `?`.
bool matchesComponent(const std::string &pattern, const std::string &name);

} // namespace graph::runtime::data

#endif // RUNTIME_DATA_PATHGLOB_H

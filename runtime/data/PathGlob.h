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
// The folders under the root are walked with their links followed (data
// sets are often assembled so), but each real folder (device and inode)
// once: a link back up (a loop) or a second way to a folder already walked
// is not followed again, and the walk says where it stopped, so that a
// loop neither hangs the listing nor lists its images over and over.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_DATA_PATHGLOB_H
#define RUNTIME_DATA_PATHGLOB_H

#include "runtime/base/Status.h"

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>
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

/// The real folders a listing has walked, by device and inode.
class WalkedFolders {
public:
  /// Records the folder `path` (links followed): true the first time, false
  /// when it was walked already. An error when it cannot be stat'ed.
  Status firstVisit(const std::string &path, bool &first);

private:
  std::set<std::pair<uint64_t, uint64_t>> seen_;
};

/// What walkFolder does with what it meets.
struct FolderWalk {
  /// Entries neither reported nor walked (hidden files and folders).
  std::function<bool(const std::string &name)> skip;
  /// Every entry that is not a folder (a file, a link to a file, a broken
  /// link): its path, and its components under the walked folder.
  std::function<void(const std::string &path,
                     const std::vector<std::string> &relative)>
      file;
};

/// Walks the folder `dir`, which the caller has recorded in `walked`,
/// depth first in name order (so that which of two ways to a folder is
/// walked does not depend on the file system's order), following links to
/// folders. A folder walked already is not entered again: its path is
/// appended to `notFollowed`. An error names a folder that cannot be
/// listed.
Status walkFolder(const std::string &dir, WalkedFolders &walked,
                  const FolderWalk &walk,
                  std::vector<std::string> &notFollowed);

} // namespace graph::runtime::data

#endif // RUNTIME_DATA_PATHGLOB_H

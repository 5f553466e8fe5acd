//===- PathGlob.cpp - a directory, or a glob under one --------------------===//

#include "runtime/data/PathGlob.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

namespace graph::runtime::data {
namespace {

bool hasWildcard(const std::string &component) {
  return component.find_first_of("*?") != std::string::npos;
}

std::vector<std::string> splitComponents(const std::string &path) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (begin <= path.size()) {
    size_t slash = path.find('/', begin);
    if (slash == std::string::npos)
      slash = path.size();
    if (slash > begin)
      parts.push_back(path.substr(begin, slash - begin));
    begin = slash + 1;
  }
  return parts;
}

/// Whether relative[r...] matches pattern[p...]; `**` tries every number of
/// folders it could stand for (never the file name: the last component
/// always meets a pattern component of its own).
bool matchesFrom(const std::vector<std::string> &pattern, size_t p,
                 const std::vector<std::string> &relative, size_t r) {
  for (; p < pattern.size(); ++p, ++r) {
    if (pattern[p] == "**") {
      // Folders only, so never the last component, and never a hidden one.
      for (size_t skip = r;; ++skip) {
        if (matchesFrom(pattern, p + 1, relative, skip))
          return true;
        if (skip + 1 >= relative.size() || relative[skip].starts_with('.'))
          return false;
      }
    }
    if (r >= relative.size() || !matchesComponent(pattern[p], relative[r]))
      return false;
  }
  return r == relative.size();
}

} // namespace

bool matchesComponent(const std::string &pattern, const std::string &name) {
  // A leading dot is matched only by a leading dot, as in a shell.
  if (name.starts_with('.') && !pattern.starts_with('.'))
    return false;
  // The classic two-pointer wildcard match: on a mismatch, let the last `*`
  // swallow one more character.
  size_t p = 0, n = 0, star = std::string::npos, starN = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      starN = n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++starN;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*')
    ++p;
  return p == pattern.size();
}

bool PathGlob::matches(const std::vector<std::string> &relative) const {
  return matchesFrom(pattern, 0, relative, 0);
}

Status parsePathGlob(const std::string &path, PathGlob &out) {
  if (path.empty())
    return Status::error("an image folder path is empty; name a directory "
                         "(one sub-folder per class) or a glob such as "
                         "DIR/**/*.jpeg");
  std::vector<std::string> parts = splitComponents(path);
  size_t first = 0;
  while (first < parts.size() && !hasWildcard(parts[first]))
    ++first;
  PathGlob glob;
  for (size_t i = 0; i < first; ++i)
    glob.root += (i > 0 || path.starts_with('/') ? "/" : "") + parts[i];
  if (glob.root.empty())
    glob.root.assign(1, path.starts_with('/') ? '/' : '.');
  glob.pattern.assign(parts.begin() + first, parts.end());
  for (const std::string &c : glob.pattern)
    if (c != "**" && c.find("**") != std::string::npos)
      return Status::error(path + ": '**' inside '" + c +
                           "': '**' stands for any number of folders, so it "
                           "must be a whole component (DIR/**/*.jpeg)");
  if (!glob.pattern.empty() && glob.pattern.back() == "**")
    return Status::error(path + ": the glob ends in '**', which names "
                                "folders; end it with the files' pattern "
                                "(DIR/**/*.jpeg)");
  out = std::move(glob);
  return Status::ok();
}

Status WalkedFolders::firstVisit(const std::string &path, bool &first) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return Status::error(path + ": cannot read the folder: " +
                         std::strerror(errno) + "; check its permissions");
  first = seen_
              .insert({static_cast<uint64_t>(st.st_dev),
                       static_cast<uint64_t>(st.st_ino)})
              .second;
  return Status::ok();
}

namespace {

Status walkFrom(const std::string &dir, std::vector<std::string> &relative,
                WalkedFolders &walked, const FolderWalk &walk,
                std::vector<std::string> &notFollowed) {
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return Status::error(dir + ": cannot list the folder: " +
                         std::strerror(errno) + "; check its permissions");
  std::vector<std::string> names;
  errno = 0;
  while (const dirent *e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != ".." && !(walk.skip && walk.skip(name)))
      names.push_back(std::move(name));
    errno = 0;
  }
  int error = errno;
  ::closedir(d);
  if (error)
    return Status::error(dir + ": cannot list the folder: " +
                         std::strerror(error) + "; check its permissions");
  std::sort(names.begin(), names.end());
  for (const std::string &name : names) {
    std::string path = dir + "/" + name;
    relative.push_back(name);
    struct stat st;
    // stat follows links: a link to a folder is a folder here; a broken
    // link is the file callback's to judge.
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      bool first = false;
      if (Status s = walked.firstVisit(path, first); !s)
        return s;
      if (!first) {
        notFollowed.push_back(path);
      } else if (Status s = walkFrom(path, relative, walked, walk, notFollowed);
                 !s) {
        return s;
      }
    } else if (walk.file) {
      walk.file(path, relative);
    }
    relative.pop_back();
  }
  return Status::ok();
}

} // namespace

Status walkFolder(const std::string &dir, WalkedFolders &walked,
                  const FolderWalk &walk,
                  std::vector<std::string> &notFollowed) {
  std::vector<std::string> relative;
  return walkFrom(dir, relative, walked, walk, notFollowed);
}

} // namespace graph::runtime::data

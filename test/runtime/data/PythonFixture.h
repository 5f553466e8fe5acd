//===- PythonFixture.h - fixtures NumPy writes for the data tests -*- C++
//-*-===//
//
// The readers of .npy, .npz, CSV and IDX files are checked against an
// independent oracle: a python3 with NumPy (and the standard library's
// struct, gzip and zipfile) writes each test's fixture files and the values
// it expects, so a test never compares the reader against itself. Without
// such a python the tests fail rather than skip: they are the readers' only
// independent check.
//
//===----------------------------------------------------------------------===//

#ifndef TEST_RUNTIME_DATA_PYTHONFIXTURE_H
#define TEST_RUNTIME_DATA_PYTHONFIXTURE_H

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace graph::runtime::data::test {

/// `s` as one single-quoted word of a POSIX shell command.
inline std::string shellQuote(const std::string &s) {
  std::string q = "'";
  for (char c : s)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// The python3 that imports numpy: $GRAPH_TEST_PYTHON, else the first of
/// python3 (on the PATH) and /usr/bin/python3 that does; empty if none does.
/// The PATH's python3 may be a shim of another python without numpy, hence
/// the fallback.
inline const std::string &fixturePython() {
  static const std::string found = [] {
    std::vector<std::string> candidates;
    if (const char *env = std::getenv("GRAPH_TEST_PYTHON"))
      candidates.push_back(env);
    candidates.push_back("python3");
    candidates.push_back("/usr/bin/python3");
    for (const std::string &c : candidates)
      if (std::system(
              (shellQuote(c) + " -c 'import numpy' >/dev/null 2>&1").c_str()) ==
          0)
        return c;
    return std::string();
  }();
  return found;
}

/// Writes `script` to `dir`/fixture.py after a prelude that imports sys, os,
/// struct, gzip, zipfile and numpy (as np) and binds `d` to `dir`, and runs
/// it with `dir` as sys.argv[1]. Fails, with the script's output, when no
/// python imports numpy or the script exits non-zero.
inline ::testing::AssertionResult runPython(const std::string &dir,
                                            const std::string &script) {
  const std::string &python = fixturePython();
  if (python.empty())
    return ::testing::AssertionFailure()
           << "no python3 with numpy (tried $GRAPH_TEST_PYTHON, python3, "
              "/usr/bin/python3): NumPy is these tests' oracle; install "
              "python3-numpy or point GRAPH_TEST_PYTHON at a python with it";
  std::string path = dir + "/fixture.py";
  {
    std::ofstream f(path);
    f << "import sys, os, struct, gzip, zipfile\nimport numpy as np\n"
         "d = sys.argv[1]\n"
      << script;
    if (!f.good())
      return ::testing::AssertionFailure() << "cannot write " << path;
  }
  std::string command = shellQuote(python) + " -W ignore " + shellQuote(path) +
                        " " + shellQuote(dir) + " 2>&1";
  FILE *p = ::popen(command.c_str(), "r");
  if (!p)
    return ::testing::AssertionFailure() << "cannot run " << command;
  std::string output;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p))
    output.append(buf, n);
  int rc = ::pclose(p);
  if (rc != 0)
    return ::testing::AssertionFailure()
           << command << " failed (" << rc << "):\n"
           << output;
  return ::testing::AssertionSuccess();
}

/// The raw values at `path`, as a fixture wrote them with NumPy's
/// `astype('<f4').tofile(...)` (host byte order, little-endian here).
template <typename T> std::vector<T> readValues(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)),
                    std::istreambuf_iterator<char>());
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

} // namespace graph::runtime::data::test

#endif // TEST_RUNTIME_DATA_PYTHONFIXTURE_H

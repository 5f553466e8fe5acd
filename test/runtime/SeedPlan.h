//===- SeedPlan.h - the seed CNN's plan for the runtime tests ---*- C++ -*-===//
//
// examples/fashion_mnist_cnn.json at global batch 64, compiled for 1 and 2
// replicas with the build's graph-import and graphc (the seed schedule
// test, test/runtime/cuda; the GPU seed-model test, test/runtime/gpu). A
// machine without the compiler (a GPU machine given only the runtime,
// bench/gpu-deps.sh) names the same plan compiled elsewhere in
// GRAPH_TEST_SEED_PLAN. Needs GRAPH_SOURCE_DIR and GRAPH_BINARY_DIR.
//
//===----------------------------------------------------------------------===//

#ifndef TEST_RUNTIME_SEEDPLAN_H
#define TEST_RUNTIME_SEEDPLAN_H

#include <cstdlib>
#include <filesystem>
#include <string>

namespace graph::runtime::testplan {

enum class SeedPlan { ready, noTools, failed };

/// The seed plan's path in `plan`, compiled into the temporary directory
/// `dirName` unless GRAPH_TEST_SEED_PLAN names one; otherwise the reason in
/// `why`: the tools are not built (a test skips) or compiling failed.
inline SeedPlan seedPlanPath(const std::string &dirName,
                             std::filesystem::path &plan, std::string &why) {
  namespace fs = std::filesystem;
  if (const char *prebuilt = std::getenv("GRAPH_TEST_SEED_PLAN")) {
    plan = prebuilt;
    return SeedPlan::ready;
  }
  fs::path tools = fs::path(GRAPH_BINARY_DIR) / "bin";
  if (!fs::exists(tools / "graph-import") || !fs::exists(tools / "graphc")) {
    why = "graph-import/graphc are not built in " + tools.string();
    return SeedPlan::noTools;
  }
  fs::path dir = fs::temp_directory_path() / dirName;
  fs::create_directories(dir);
  plan = dir / "seed.plan";
  std::string command =
      (tools / "graph-import").string() + " " + GRAPH_SOURCE_DIR +
      "/examples/fashion_mnist_cnn.json --batch-size 64 -o " +
      (dir / "seed.mlir").string() + " && " + (tools / "graphc").string() +
      " " + (dir / "seed.mlir").string() + " -o " + plan.string() +
      " --replicas 1,2";
  if (std::system(command.c_str()) != 0) {
    why = "compiling the seed plan failed: " + command;
    return SeedPlan::failed;
  }
  return SeedPlan::ready;
}

} // namespace graph::runtime::testplan

#endif // TEST_RUNTIME_SEEDPLAN_H

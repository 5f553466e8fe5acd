//===- PlanLoaderFuzzer.cpp - libFuzzer target for the plan loader --------===//
//
// Every input must give a clean Status; the sanitizers catch the rest.
// Built by test/fuzz/CMakeLists.txt (the graph-fuzzers step of the main
// build), run by test/fuzz/plan-loader.test and test/fuzz/run-fuzzer.sh.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/PlanLoader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const graph::plan::Plan *plan = nullptr;
  graph::runtime::Status status =
      graph::runtime::verifyPlan(data, size, "fuzz.plan", plan);
  // A plan that passes must be safe to walk as the executor will.
  if (status.isOk())
    for (const graph::plan::Program *program : *plan->programs())
      for (const graph::plan::Op *op : *program->ops())
        if (op->ins())
          for (int32_t index : *op->ins())
            (void)program->buffers()->Get(index)->shape();
  return 0;
}

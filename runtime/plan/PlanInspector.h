//===- PlanInspector.h - a human-readable summary of a plan -----*- C++ -*-===//

#ifndef RUNTIME_PLAN_PLANINSPECTOR_H
#define RUNTIME_PLAN_PLANINSPECTOR_H

#include "runtime/plan/plan_generated.h"

#include <string>

namespace graph::runtime {

/// Programs, op counts by kind and kernel, buckets with their bytes,
/// streams, and arena sizes against the sum of their buffers.
std::string describePlan(const plan::Plan &plan);

} // namespace graph::runtime

#endif // RUNTIME_PLAN_PLANINSPECTOR_H

//===- HostSchedule.h - the order a host device's thread runs ops -*- C++
//-*-===//
//
// On the host backends each device's ops run on one thread, which serves
// both of the device's streams; scheduleHostOps merges them. Its own file,
// so that tests can check the order without running a program.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_HOSTSCHEDULE_H
#define RUNTIME_CORE_HOSTSCHEDULE_H

#include "runtime/core/Device.h"

#include <vector>

namespace graph::runtime {

/// Each host device's ops, in the order its thread runs them: its compute
/// ops in program order, and each op of its comm stream (every all-reduce
/// is on every device's comm stream) as soon as the comm stream's wait
/// before it is satisfied by a record the thread already ran. Program
/// order alone would not do: replica 0's whole backward precedes replica
/// 1's there, so every all-reduce would wait for replica 0's last bucket
/// and replica 1's backward would run after replica 0's instead of beside
/// it. A wait for another device's event keeps its place in program order.
std::vector<std::vector<const PreparedOp *>>
scheduleHostOps(const std::vector<PreparedOp> &ops, int devices, int numEvents);

} // namespace graph::runtime

#endif // RUNTIME_CORE_HOSTSCHEDULE_H

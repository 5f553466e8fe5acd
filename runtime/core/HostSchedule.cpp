//===- HostSchedule.cpp - the order a host device's thread runs ops -------===//

#include "runtime/core/HostSchedule.h"

#include <deque>

namespace graph::runtime {

std::vector<std::vector<const PreparedOp *>>
scheduleHostOps(const std::vector<PreparedOp> &ops, int devices,
                int numEvents) {
  struct Recorder {
    int device = -1;
    plan::StreamKind stream = plan::StreamKind::compute;
  };
  std::vector<Recorder> recorder(static_cast<size_t>(numEvents));
  for (const PreparedOp &op : ops)
    if (op.kind == plan::OpKind::record && op.event >= 0 &&
        op.event < numEvents)
      recorder[op.event] = {op.device, op.stream};
  auto recordedBy = [&](const PreparedOp &op, int device,
                        plan::StreamKind stream) -> bool {
    return op.event >= 0 && op.event < numEvents &&
           recorder[op.event].device == device &&
           recorder[op.event].stream == stream;
  };

  std::vector<std::vector<const PreparedOp *>> lists(
      static_cast<size_t>(devices));
  for (int d = 0; d < devices; ++d) {
    std::vector<const PreparedOp *> &list = lists[d];
    std::deque<size_t> comm;
    std::vector<size_t> compute;
    for (size_t i = 0; i < ops.size(); ++i) {
      const PreparedOp &op = ops[i];
      if (op.kind == plan::OpKind::all_reduce ||
          (op.device == d && op.stream == plan::StreamKind::comm))
        comm.push_back(i);
      else if (op.device == d)
        compute.push_back(i);
    }
    std::vector<bool> recorded(static_cast<size_t>(numEvents), false);
    auto place = [&](size_t i) {
      const PreparedOp &op = ops[i];
      list.push_back(&op);
      if (op.kind == plan::OpKind::record && op.event >= 0 &&
          op.event < numEvents)
        recorded[op.event] = true;
    };
    // A comm op may run ahead of program order when it is not a wait, or
    // waits for this device's compute and that record has run. Any other
    // wait keeps its place in program order.
    auto early = [&](size_t i) {
      const PreparedOp &op = ops[i];
      if (op.kind != plan::OpKind::wait)
        return true;
      return recordedBy(op, d, plan::StreamKind::compute) && recorded[op.event];
    };
    for (size_t i : compute) {
      // Whatever program order puts before this op runs before it: a
      // compute wait for a reduction thus finds the reduction done.
      while (!comm.empty() && comm.front() < i) {
        place(comm.front());
        comm.pop_front();
      }
      place(i);
      while (!comm.empty() && early(comm.front())) {
        place(comm.front());
        comm.pop_front();
      }
    }
    for (size_t i : comm)
      place(i);
  }
  return lists;
}

} // namespace graph::runtime

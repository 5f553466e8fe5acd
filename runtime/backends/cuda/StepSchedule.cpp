//===- StepSchedule.cpp - the order a GPU step is issued in ---------------===//

#include "runtime/backends/cuda/StepSchedule.h"

#include <string>

namespace graph::runtime::cuda {

Status scheduleOps(const PreparedProgram &program, StepLauncher &launcher) {
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const PreparedOp &op = program.ops[i];
    Status s;
    switch (op.kind) {
    case plan::OpKind::launch:
      s = launcher.kernel(i, op);
      break;
    case plan::OpKind::all_reduce:
      // One call per local replica, as on the host; the last enqueues.
      for (int r = 0; r < program.replicas && s; ++r)
        s = launcher.allReduce(i, op, r);
      break;
    case plan::OpKind::copy:
      s = launcher.copy(i, op);
      break;
    case plan::OpKind::record:
      s = launcher.record(i, op);
      break;
    case plan::OpKind::wait:
      s = launcher.wait(i, op);
      break;
    case plan::OpKind::timestamp:
      s = launcher.timestamp(i, op);
      break;
    case plan::OpKind::output:
      s = launcher.output(i, op);
      break;
    default:
      s = Status::error("program '" + program.name + "', op " +
                        std::to_string(op.index) + ": unknown op kind");
    }
    if (!s)
      return s;
  }
  return Status::ok();
}

Status scheduleEagerEnd(const PreparedProgram &program,
                        StepLauncher &launcher) {
  for (int r = 0; r < program.replicas; ++r) {
    for (plan::StreamKind kind :
         {plan::StreamKind::comm, plan::StreamKind::copy})
      if (Status s = launcher.join(r, kind); !s)
        return s;
    if (Status s = launcher.done(r); !s)
      return s;
  }
  return Status::ok();
}

} // namespace graph::runtime::cuda

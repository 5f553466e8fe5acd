//===- FusedOpParts.h - a fused op run as the ops it joined ------*- C++
//-*-===//
//
// A backend without a direct kernel for a fused op (or for one of its
// launches) runs the ops graph-fuse joined, its own kernels for them, in
// the order the unfused plan ran them, through the fused op's workspace.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_FUSEDOPPARTS_H
#define RUNTIME_CORE_FUSEDOPPARTS_H

#include "runtime/core/Kernel.h"

#include <functional>
#include <vector>

namespace graph::runtime {

/// fused_conv2d_pool_grad_kernel (ins: input, argmax, output, output_grad;
/// outs: kernel_grad, workspace, optionally bias_grad) as
/// max_pool2d_argmax_grad into the workspace (with the bias gradient), then
/// conv2d_grad_kernel from it, `backend`'s kernels: the workspace holds the
/// dense gradient afterwards, with or without writes_workspace. `out` runs
/// both launches.
Status convPoolGradThroughWorkspace(
    Backend backend, const KernelContext &ctx, const KernelConfig &cfg,
    const std::vector<TensorRef> &ins, const std::vector<TensorRef> &outs,
    std::function<Status(const KernelContext &)> &out);

} // namespace graph::runtime

#endif // RUNTIME_CORE_FUSEDOPPARTS_H

//===- FusedOpParts.cpp - a fused op run as the ops it joined ---------===//

#include "runtime/core/FusedOpParts.h"

#include "runtime/core/WindowGeometry.h"

namespace graph::runtime {

Status convPoolGradThroughWorkspace(
    Backend backend, const KernelContext &ctx, const KernelConfig &cfg,
    const std::vector<TensorRef> &ins, const std::vector<TensorRef> &outs,
    std::function<Status(const KernelContext &)> &out) {
  if (ins.size() != 4 || (outs.size() != 2 && outs.size() != 3))
    return Status::error(
        "fused_conv2d_pool_grad_kernel: takes the input, argmax, output and "
        "output_grad, and writes kernel_grad, the workspace and optionally "
        "the bias gradient");
  KernelConfig routeCfg = fusedPoolConfig(cfg);
  routeCfg.set("relu_grad", cfg.getInt("relu_grad", 0));
  const std::vector<TensorRef> routeIns = {ins[1], ins[2], ins[3]};
  std::vector<TensorRef> routeOuts = {outs[1]};
  if (outs.size() == 3)
    routeOuts.push_back(outs[2]);
  // The convolution's strides, padding, dilations, groups and
  // filter_layout keep their names in the fused config.
  const std::vector<TensorRef> gradIns = {ins[0], outs[1]},
                               gradOuts = {outs[0]};
  const KernelRegistry &registry = KernelRegistry::global();
  KernelFn route, grad;
  if (Status s = registry.instantiate("max_pool2d_argmax_grad", backend, ctx,
                                      routeCfg, routeIns, routeOuts, route);
      !s)
    return s;
  if (Status s = registry.instantiate("conv2d_grad_kernel", backend, ctx, cfg,
                                      gradIns, gradOuts, grad);
      !s)
    return s;
  out = [=](const KernelContext &ctx) {
    if (Status s = route(ctx, routeCfg, routeIns, routeOuts); !s)
      return s;
    return grad(ctx, cfg, gradIns, gradOuts);
  };
  return Status::ok();
}

} // namespace graph::runtime

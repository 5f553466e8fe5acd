//===- DnnlDenseKernels.cpp - dense layers on oneDNN matmul ---------------===//
//
// dense, fused_dense (bias and activation as matmul's bias and eltwise
// post-op), dense_grad_input and dense_grad_kernel. oneDNN's matmul takes
// the [in, out] kernel as it is, and the transposes the gradients need as
// strided views (format_tag::ba) of the same buffers, so no launch copies
// anything. Inputs of rank > 2 are [rows, K] matrices: the dense ops
// contract the last axis only. On the bf16 path (DnnlContext.h: takesBf16)
// the same matmuls take bf16 operands and accumulate in float32.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/DnnlContext.h"

namespace graph::runtime::cpu {

namespace {

using dnnl::memory;
using Tensors = std::vector<TensorRef>;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

/// A row-major [rows, cols] matrix of `type`, or its transpose ([cols,
/// rows] read through strides) when `transposed`.
memory::desc matrix(memory::data_type type, int64_t rows, int64_t cols,
                    bool transposed = false) {
  return transposed ? memory::desc({cols, rows}, type, Tag::ba)
                    : memory::desc({rows, cols}, type, Tag::ab);
}

Status fail(const char *kName, const std::string &message) {
  return Status::error(std::string(kName) + ": " + message);
}

/// One matmul launch: dst = src * weights (+ bias, then the epilogue).
Status makeMatmul(const char *kName, const KernelContext &ctx,
                  const memory::desc &src, void *srcData,
                  const memory::desc &weights, void *weightsData,
                  const memory::desc &dst, void *dstData,
                  const dnnl::post_ops &ops, const TensorRef *bias,
                  KernelFn &out) {
  // A small product (the classifier's) runs on one thread: see kSerialMacs.
  int64_t macs = src.dims()[0] * src.dims()[1] * weights.dims()[1];
  int serial = macs < kSerialMacs ? 1 : 0;
  ReplicaThreadsScope threads(ctx, serial);
  try {
    dnnl::primitive_attr attr = userScratchpad();
    attr.set_post_ops(ops);
    memory::desc biasDesc;
    if (bias)
      biasDesc = matrix(dst.data_type(), 1, dst.dims()[1]);
    dnnl::matmul::primitive_desc pd(
        bias ? dnnl::matmul::desc(src, weights, biasDesc, dst)
             : dnnl::matmul::desc(src, weights, dst),
        attr, dnnlEngine());
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, bind(src, srcData)},
        {DNNL_ARG_WEIGHTS, bind(weights, weightsData)},
        {DNNL_ARG_DST, bind(dst, dstData)}};
    if (bias)
      args.emplace(DNNL_ARG_BIAS, bind(biasDesc, bias->data));
    DnnlLaunch launch(kName);
    launch.add(dnnl::matmul(pd), pd, std::move(args), serial);
    out = std::move(launch);
  } catch (const dnnl::error &e) {
    return fail(kName, std::string("oneDNN refused the matmul: ") + e.what());
  }
  return Status::ok();
}

Status makeForward(const char *kName, bool fused, const KernelContext &ctx,
                   const KernelConfig &cfg, const Tensors &ins,
                   const Tensors &outs, KernelFn &out) {
  if (Status s =
          checkOperands(kName, ins, outs, 2, fused ? 3 : 2, 1, kDnnlOperands);
      !s)
    return s;
  memory::data_type type;
  if (Status s = dnnlOperandType(kName, ins, outs, type); !s)
    return s;
  const TensorRef &x = ins[0], &k = ins[1];
  if (k.shape.size() != 2 || x.shape.empty() || x.shape.back() != k.shape[0])
    return fail(kName, "input " + shapeText(x.shape) + " and kernel " +
                           shapeText(k.shape) + " do not chain");
  int64_t in = k.shape[0], units = k.shape[1], rows = x.elements() / in;
  std::vector<int64_t> expected = x.shape;
  expected.back() = units;
  if (outs[0].shape != expected)
    return fail(kName, "output is " + shapeText(outs[0].shape) + ", expected " +
                           shapeText(expected));
  const TensorRef *bias = ins.size() == 3 ? &ins[2] : nullptr;
  if (bias && bias->elements() != units)
    return fail(kName, "bias " + shapeText(bias->shape) + " does not match " +
                           std::to_string(units) + " units");
  dnnl::post_ops ops;
  if (fused)
    if (Status s = appendEpilogue(kName, cfg, ops); !s)
      return s;
  return makeMatmul(kName, ctx, matrix(type, rows, in), x.data,
                    matrix(type, in, units), k.data, matrix(type, rows, units),
                    outs[0].data, ops, bias, out);
}

Status makeDense(const KernelContext &ctx, const KernelConfig &cfg,
                 const Tensors &ins, const Tensors &outs, KernelFn &out) {
  return makeForward("dense", false, ctx, cfg, ins, outs, out);
}

Status makeFusedDense(const KernelContext &ctx, const KernelConfig &cfg,
                      const Tensors &ins, const Tensors &outs, KernelFn &out) {
  return makeForward("fused_dense", true, ctx, cfg, ins, outs, out);
}

/// dx[rows, K] = dy[rows, N] * kernel[K, N]^T.
Status makeDenseGradInput(const KernelContext &ctx, const KernelConfig &,
                          const Tensors &ins, const Tensors &outs,
                          KernelFn &out) {
  static constexpr const char *kName = "dense_grad_input";
  if (Status s = checkOperands(kName, ins, outs, 2, 2, 1, kDnnlOperands); !s)
    return s;
  memory::data_type type;
  if (Status s = dnnlOperandType(kName, ins, outs, type); !s)
    return s;
  const TensorRef &dy = ins[0], &k = ins[1];
  if (k.shape.size() != 2 || dy.shape.empty() || dy.shape.back() != k.shape[1])
    return fail(kName, "output_grad " + shapeText(dy.shape) + " and kernel " +
                           shapeText(k.shape) + " do not chain");
  int64_t in = k.shape[0], units = k.shape[1], rows = dy.elements() / units;
  if (outs[0].shape.empty() || outs[0].shape.back() != in ||
      outs[0].elements() != rows * in)
    return fail(kName, "input_grad " + shapeText(outs[0].shape) + " is not " +
                           std::to_string(rows) + " rows of " +
                           std::to_string(in));
  return makeMatmul(kName, ctx, matrix(type, rows, units), dy.data,
                    matrix(type, in, units, /*transposed=*/true), k.data,
                    matrix(type, rows, in), outs[0].data, {}, nullptr, out);
}

/// dk[K, N] = x[rows, K]^T * dy[rows, N].
Status makeDenseGradKernel(const KernelContext &ctx, const KernelConfig &,
                           const Tensors &ins, const Tensors &outs,
                           KernelFn &out) {
  static constexpr const char *kName = "dense_grad_kernel";
  if (Status s = checkOperands(kName, ins, outs, 2, 2, 1, kDnnlOperands); !s)
    return s;
  memory::data_type type;
  if (Status s = dnnlOperandType(kName, ins, outs, type); !s)
    return s;
  const TensorRef &x = ins[0], &dy = ins[1];
  if (x.shape.empty() || dy.shape.empty())
    return fail(kName, "needs ranked operands");
  int64_t in = x.shape.back(), units = dy.shape.back();
  int64_t rows = in ? x.elements() / in : 0;
  if (dy.elements() != rows * units)
    return fail(kName, "input " + shapeText(x.shape) + " and output_grad " +
                           shapeText(dy.shape) + " differ in rows");
  if (outs[0].shape != std::vector<int64_t>{in, units})
    return fail(kName, "kernel_grad is " + shapeText(outs[0].shape) +
                           ", expected " + shapeText({in, units}));
  return makeMatmul(kName, ctx, matrix(type, rows, in, /*transposed=*/true),
                    x.data, matrix(type, rows, units), dy.data,
                    matrix(type, in, units), outs[0].data, {}, nullptr, out);
}

} // namespace

void registerDnnlDenseKernels(KernelRegistry &registry) {
  registry.addFactory("dense", Backend::cpu, makeDense, takesBf16);
  registry.addFactory("fused_dense", Backend::cpu, makeFusedDense, takesBf16);
  registry.addFactory("dense_grad_input", Backend::cpu, makeDenseGradInput,
                      takesBf16);
  registry.addFactory("dense_grad_kernel", Backend::cpu, makeDenseGradKernel,
                      takesBf16);
}

} // namespace graph::runtime::cpu

//===- DnnlNormKernels.cpp - batch normalisation on oneDNN ----------------===//
//
// batch_norm (moving statistics), batch_norm_train (batch statistics, plus
// the moving-statistics update and 1/sqrt(var + epsilon) in own loops over
// the channels) and batch_norm_grad. A [..., C] tensor is oneDNN's 2-D
// [rows, C] (format nc), which is what NHWC is to a channel-last op.
//
// Optional gamma and beta follow the reference: a launch's configuration
// does not say which operand is missing, so 3 inputs mean neither, 4 gamma
// only, 5 both.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/DnnlContext.h"

#include <cmath>
#include <memory>

namespace graph::runtime::cpu {

namespace {

using dnnl::memory;
using Tensors = std::vector<TensorRef>;
using Flags = dnnl::normalization_flags;
constexpr auto kF32 = memory::data_type::f32;

/// As the reference backend's kUnbiasedMovingVariance (GraphOps.td: the
/// moving variance takes the unbiased batch variance, as tf.keras 2 does);
/// the conformance suite fails if the two disagree.
constexpr bool kUnbiasedMovingVariance = true;

Status fail(const char *kName, const std::string &message) {
  return Status::error(std::string(kName) + ": " + message);
}

/// [rows, C] of a [..., C] tensor, and one [C] vector.
struct NormShape {
  int64_t rows = 0, channels = 0;
  memory::desc data() const {
    return {{rows, channels}, kF32, memory::format_tag::nc};
  }
  memory::desc vector() const {
    return {{channels}, kF32, memory::format_tag::x};
  }
};

/// Checks that `x` is [..., C], that `sameAsX` have its size and
/// `perChannel` are [C].
Status normShape(const char *kName, const TensorRef &x,
                 std::vector<const TensorRef *> sameAsX,
                 std::vector<const TensorRef *> perChannel, NormShape &s) {
  if (x.shape.empty() || x.shape.back() == 0)
    return fail(kName, "needs a [..., C] input, got " + shapeText(x.shape));
  s.channels = x.shape.back();
  s.rows = x.elements() / s.channels;
  for (const TensorRef *t : sameAsX)
    if (t->elements() != x.elements())
      return fail(kName, shapeText(t->shape) + " does not match the input " +
                             shapeText(x.shape));
  for (const TensorRef *t : perChannel)
    if (t->elements() != s.channels)
      return fail(kName, "statistic " + shapeText(t->shape) + " must be [" +
                             std::to_string(s.channels) + "], one per channel");
  return Status::ok();
}

std::vector<const TensorRef *> refs(const Tensors &ts, size_t from, size_t to) {
  std::vector<const TensorRef *> r;
  for (size_t i = from; i < to && i < ts.size(); ++i)
    r.push_back(&ts[i]);
  return r;
}

dnnl::batch_normalization_forward::desc forwardDesc(dnnl::prop_kind prop,
                                                    const NormShape &s,
                                                    double epsilon,
                                                    Flags flags) {
  return {prop, s.data(), static_cast<float>(epsilon), flags};
}

Status makeBatchNorm(const KernelContext &ctx, const KernelConfig &cfg,
                     const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "batch_norm";
  if (Status s = checkOperands(kName, ins, outs, 3, 5, 1); !s)
    return s;
  NormShape shape;
  if (Status s = normShape(kName, ins[0], {&outs[0]}, refs(ins, 1, 5), shape);
      !s)
    return s;
  bool gamma = ins.size() >= 4, beta = ins.size() == 5;
  Flags flags = Flags::use_global_stats;
  if (gamma)
    flags |= Flags::use_scale;
  if (beta)
    flags |= Flags::use_shift;
  ReplicaThreadsScope threads(ctx);
  try {
    dnnl::batch_normalization_forward::primitive_desc pd(
        forwardDesc(dnnl::prop_kind::forward_inference, shape,
                    cfg.getFloat("epsilon", 1e-3), flags),
        userScratchpad(), dnnlEngine());
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, bind(shape.data(), ins[0].data)},
        {DNNL_ARG_MEAN, bind(shape.vector(), ins[1].data)},
        {DNNL_ARG_VARIANCE, bind(shape.vector(), ins[2].data)},
        {DNNL_ARG_DST, bind(shape.data(), outs[0].data)}};
    if (gamma)
      args.emplace(DNNL_ARG_SCALE, bind(shape.vector(), ins[3].data));
    if (beta)
      args.emplace(DNNL_ARG_SHIFT, bind(shape.vector(), ins[4].data));
    DnnlLaunch launch(kName);
    launch.add(dnnl::batch_normalization_forward(pd), pd, std::move(args));
    out = std::move(launch);
  } catch (const dnnl::error &e) {
    return fail(kName,
                std::string("oneDNN refused the batch norm: ") + e.what());
  }
  return Status::ok();
}

/// outs: y, batch_mean, batch_inv_std, new_moving_mean, new_moving_variance
/// (the last two may alias the moving inputs: an in-place update).
Status makeBatchNormTrain(const KernelContext &ctx, const KernelConfig &cfg,
                          const Tensors &ins, const Tensors &outs,
                          KernelFn &out) {
  static constexpr const char *kName = "batch_norm_train";
  if (Status s = checkOperands(kName, ins, outs, 3, 5, 5); !s)
    return s;
  std::vector<const TensorRef *> perChannel = refs(ins, 1, 5);
  for (const TensorRef *t : refs(outs, 1, 5))
    perChannel.push_back(t);
  NormShape shape;
  if (Status s = normShape(kName, ins[0], {&outs[0]}, perChannel, shape); !s)
    return s;
  bool gamma = ins.size() >= 4, beta = ins.size() == 5;
  Flags flags = Flags::none;
  if (gamma)
    flags |= Flags::use_scale;
  if (beta)
    flags |= Flags::use_shift;
  double epsilon = cfg.getFloat("epsilon", 1e-3);
  double momentum = cfg.getFloat("momentum", 0.99);
  ReplicaThreadsScope threads(ctx);
  try {
    dnnl::batch_normalization_forward::primitive_desc pd(
        forwardDesc(dnnl::prop_kind::forward_training, shape, epsilon, flags),
        userScratchpad(), dnnlEngine());
    // oneDNN gives the biased batch variance; the op returns 1/sqrt(var +
    // epsilon) instead, so the variance goes to scratch.
    memory variance(shape.vector(), dnnlEngine());
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, bind(shape.data(), ins[0].data)},
        {DNNL_ARG_MEAN, bind(shape.vector(), outs[1].data)},
        {DNNL_ARG_VARIANCE, variance},
        {DNNL_ARG_DST, bind(shape.data(), outs[0].data)}};
    if (gamma)
      args.emplace(DNNL_ARG_SCALE, bind(shape.vector(), ins[3].data));
    if (beta)
      args.emplace(DNNL_ARG_SHIFT, bind(shape.vector(), ins[4].data));
    DnnlLaunch launch(kName);
    launch.add(dnnl::batch_normalization_forward(pd), pd, std::move(args));
    const float *var = static_cast<const float *>(variance.get_data_handle());
    const float *mean = outs[1].f32();
    const float *movingMean = ins[1].f32(), *movingVar = ins[2].f32();
    float *invStd = outs[2].f32(), *newMean = outs[3].f32(),
          *newVar = outs[4].f32();
    int64_t channels = shape.channels, n = shape.rows;
    double bessel =
        kUnbiasedMovingVariance && n > 1 ? double(n) / double(n - 1) : 1.0;
    launch.addLoop([=] {
      for (int64_t c = 0; c < channels; ++c) {
        double v = var[c];
        invStd[c] = static_cast<float>(1.0 / std::sqrt(v + epsilon));
        // Read both moving statistics before writing: they may alias.
        double m = movingMean[c], mv = movingVar[c];
        newMean[c] =
            static_cast<float>(m * momentum + mean[c] * (1 - momentum));
        newVar[c] =
            static_cast<float>(mv * momentum + v * bessel * (1 - momentum));
      }
    });
    out = std::move(launch);
  } catch (const dnnl::error &e) {
    return fail(kName,
                std::string("oneDNN refused the batch norm: ") + e.what());
  }
  return Status::ok();
}

/// ins: dy, x, batch_mean, batch_inv_std, [gamma]; outs: dx, gamma_grad,
/// beta_grad (both always written: sum dy * xhat and sum dy).
Status makeBatchNormGrad(const KernelContext &ctx, const KernelConfig &,
                         const Tensors &ins, const Tensors &outs,
                         KernelFn &out) {
  static constexpr const char *kName = "batch_norm_grad";
  if (Status s = checkOperands(kName, ins, outs, 4, 5, 3); !s)
    return s;
  std::vector<const TensorRef *> perChannel = refs(ins, 2, 5);
  perChannel.push_back(&outs[1]);
  perChannel.push_back(&outs[2]);
  NormShape shape;
  if (Status s =
          normShape(kName, ins[1], {&ins[0], &outs[0]}, perChannel, shape);
      !s)
    return s;
  Flags flags = Flags::use_scale | Flags::use_shift;
  ReplicaThreadsScope threads(ctx);
  try {
    // The op carries 1/sqrt(var + epsilon), not epsilon: oneDNN gets
    // var' = 1/inv_std^2 with epsilon 0, the same normaliser.
    dnnl::batch_normalization_forward::primitive_desc hint(
        forwardDesc(dnnl::prop_kind::forward_training, shape, 0.0, flags),
        dnnlEngine());
    dnnl::batch_normalization_backward::primitive_desc pd(
        {dnnl::prop_kind::backward, shape.data(), shape.data(), 0.0f, flags},
        userScratchpad(), dnnlEngine(), hint);
    memory variance(shape.vector(), dnnlEngine());
    memory scale = ins.size() == 5 ? bind(shape.vector(), ins[4].data)
                                   : memory(shape.vector(), dnnlEngine());
    if (ins.size() == 4) {
      float *ones = static_cast<float *>(scale.get_data_handle());
      std::fill(ones, ones + shape.channels, 1.0f);
    }
    // Read by oneDNN's backward pass under use_shift although dx does not
    // depend on it.
    memory shift(shape.vector(), dnnlEngine());
    float *zeros = static_cast<float *>(shift.get_data_handle());
    std::fill(zeros, zeros + shape.channels, 0.0f);
    DnnlLaunch launch(kName);
    float *var = static_cast<float *>(variance.get_data_handle());
    const float *invStd = ins[3].f32();
    int64_t channels = shape.channels;
    launch.addLoop([=] {
      for (int64_t c = 0; c < channels; ++c)
        var[c] = static_cast<float>(1.0 / (double(invStd[c]) * invStd[c]));
    });
    launch.add(dnnl::batch_normalization_backward(pd), pd,
               {{DNNL_ARG_DIFF_DST, bind(shape.data(), ins[0].data)},
                {DNNL_ARG_SRC, bind(shape.data(), ins[1].data)},
                {DNNL_ARG_MEAN, bind(shape.vector(), ins[2].data)},
                {DNNL_ARG_VARIANCE, variance},
                {DNNL_ARG_SCALE, scale},
                {DNNL_ARG_SHIFT, shift},
                {DNNL_ARG_DIFF_SRC, bind(shape.data(), outs[0].data)},
                {DNNL_ARG_DIFF_SCALE, bind(shape.vector(), outs[1].data)},
                {DNNL_ARG_DIFF_SHIFT, bind(shape.vector(), outs[2].data)}});
    out = std::move(launch);
  } catch (const dnnl::error &e) {
    return fail(kName,
                std::string("oneDNN refused the batch norm: ") + e.what());
  }
  return Status::ok();
}

} // namespace

void registerDnnlNormKernels(KernelRegistry &registry) {
  registry.addFactory("batch_norm", Backend::cpu, makeBatchNorm);
  registry.addFactory("batch_norm_train", Backend::cpu, makeBatchNormTrain);
  registry.addFactory("batch_norm_grad", Backend::cpu, makeBatchNormGrad);
}

} // namespace graph::runtime::cpu

//===- DnnlContext.cpp - what the oneDNN kernels share --------------------===//

#include "runtime/backends/cpu/DnnlContext.h"

#include "runtime/backends/cpu/CpuKernels.h"

#include <omp.h>

#include <algorithm>

namespace graph::runtime::cpu {

using dnnl::memory;

const dnnl::engine &dnnlEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream &dnnlStream() {
  thread_local dnnl::stream stream(dnnlEngine());
  return stream;
}

ReplicaThreadsScope::ReplicaThreadsScope(const KernelContext &ctx)
    : saved_(omp_get_max_threads()) {
  omp_set_num_threads(threadsPerReplica(ctx.replicas));
}

ReplicaThreadsScope::~ReplicaThreadsScope() { omp_set_num_threads(saved_); }

dnnl::primitive_attr userScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

memory bind(const memory::desc &desc, void *data) {
  return memory(desc, dnnlEngine(), data);
}

void DnnlLaunch::addReorder(std::vector<Step> &to, const memory &from,
                            const memory &dst) {
  dnnl::reorder::primitive_desc pd(from, dst, userScratchpad());
  Step step{dnnl::reorder(pd), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, dst}}, {}};
  step.args.emplace(DNNL_ARG_SCRATCHPAD,
                    memory(pd.scratchpad_desc(), dnnlEngine()));
  to.push_back(std::move(step));
}

memory DnnlLaunch::input(const memory::desc &want, const memory &user) {
  if (want == user.get_desc())
    return user;
  memory converted(want, dnnlEngine());
  addReorder(before_, user, converted);
  return converted;
}

memory DnnlLaunch::output(const memory::desc &want, const memory &user) {
  if (want == user.get_desc())
    return user;
  memory converted(want, dnnlEngine());
  addReorder(after_, converted, user);
  return converted;
}

void DnnlLaunch::add(const dnnl::primitive &primitive,
                     const dnnl::primitive_desc_base &pd,
                     std::unordered_map<int, memory> args) {
  args.emplace(DNNL_ARG_SCRATCHPAD, memory(pd.scratchpad_desc(), dnnlEngine()));
  steps_.push_back({primitive, std::move(args), {}});
}

void DnnlLaunch::addLoop(std::function<void()> loop) {
  steps_.push_back({dnnl::primitive(), {}, std::move(loop)});
}

Status DnnlLaunch::operator()(const KernelContext &ctx, const KernelConfig &,
                              const std::vector<TensorRef> &,
                              const std::vector<TensorRef> &) const {
  useReplicaThreads(ctx);
  dnnl::stream &stream = dnnlStream();
  try {
    for (const std::vector<Step> *list : {&before_, &steps_, &after_})
      for (const Step &step : *list) {
        if (step.loop) {
          stream.wait();
          step.loop();
        } else {
          step.primitive.execute(stream, step.args);
        }
      }
    stream.wait();
  } catch (const dnnl::error &e) {
    return Status::error(std::string(kernel_) + ": oneDNN failed: " + e.what());
  }
  return Status::ok();
}

namespace {
std::pair<int64_t, int64_t> pairOf(const KernelConfig &config,
                                   const std::string &name, int64_t fallback) {
  std::vector<int64_t> v = config.getInts(name);
  if (v.size() == 2)
    return {v[0], v[1]};
  if (v.size() == 1)
    return {v[0], v[0]};
  return {fallback, fallback};
}

bool resolveAxis(WindowAxis &a, bool same) {
  if (a.stride < 1 || a.dilation < 1 || a.window < 1 || a.in < 1)
    return false;
  int64_t effective = (a.window - 1) * a.dilation + 1;
  if (same) {
    a.out = (a.in + a.stride - 1) / a.stride;
    int64_t total =
        std::max<int64_t>((a.out - 1) * a.stride + effective - a.in, 0);
    a.padBefore = total / 2;
  } else {
    if (a.in < effective)
      return false;
    a.out = (a.in - effective) / a.stride + 1;
    a.padBefore = 0;
  }
  // Whatever the last window leaves of the input is never read.
  a.padAfter = std::max<int64_t>(
      (a.out - 1) * a.stride + effective - a.in - a.padBefore, 0);
  return true;
}
} // namespace

Status resolveWindow(const char *kernel, const KernelConfig &config,
                     const std::vector<int64_t> &input, int64_t kh, int64_t kw,
                     bool dilated, WindowGeometry &g) {
  std::string name(kernel);
  if (input.size() != 4)
    return Status::error(name + ": needs an NHWC input, got " +
                         shapeText(input));
  std::string padding = config.getString("padding", "valid");
  if (padding != "valid" && padding != "same")
    return Status::error(name + ": unknown padding '" + padding + "'");
  auto [sh, sw] = pairOf(config, "strides", 1);
  auto [dh, dw] = dilated ? pairOf(config, "dilations", 1)
                          : std::pair<int64_t, int64_t>{1, 1};
  g.n = input[0];
  g.c = input[3];
  g.h = {input[1], kh, sh, dh};
  g.w = {input[2], kw, sw, dw};
  if (!resolveAxis(g.h, padding == "same") ||
      !resolveAxis(g.w, padding == "same"))
    return Status::error(
        name + ": window " + std::to_string(kh) + "x" + std::to_string(kw) +
        " (strides " + std::to_string(sh) + "x" + std::to_string(sw) +
        ", dilations " + std::to_string(dh) + "x" + std::to_string(dw) +
        ", padding " + padding + ") does not fit input " + shapeText(input));
  return Status::ok();
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Status checkOperands(const char *kernel, const std::vector<TensorRef> &ins,
                     const std::vector<TensorRef> &outs, size_t minIns,
                     size_t maxIns, size_t numOuts) {
  std::string name(kernel);
  if (ins.size() < minIns || ins.size() > maxIns)
    return Status::error(
        name + ": takes " + std::to_string(minIns) +
        (maxIns != minIns ? ".." + std::to_string(maxIns) : "") +
        " inputs, got " + std::to_string(ins.size()));
  if (outs.size() != numOuts)
    return Status::error(name + ": writes " + std::to_string(numOuts) +
                         " outputs, got " + std::to_string(outs.size()));
  for (size_t i = 0; i < ins.size() + outs.size(); ++i) {
    const TensorRef &t = i < ins.size() ? ins[i] : outs[i - ins.size()];
    std::string what = i < ins.size()
                           ? "input " + std::to_string(i)
                           : "output " + std::to_string(i - ins.size());
    if (t.dtype != plan::DType::f32)
      return Status::error(name + ": " + what +
                           " is not f32 (the cpu backend computes in f32)");
    if (!t.data && t.elements() != 0)
      return Status::error(name + ": " + what + " has no buffer");
  }
  return Status::ok();
}

Status appendEpilogue(const char *kernel, const KernelConfig &config,
                      dnnl::post_ops &ops) {
  std::string activation = config.getString("activation", "none");
  if (activation == "none" || activation == "linear")
    return Status::ok();
  dnnl::algorithm alg;
  if (activation == "relu")
    alg = dnnl::algorithm::eltwise_relu;
  else if (activation == "sigmoid")
    alg = dnnl::algorithm::eltwise_logistic;
  else if (activation == "tanh")
    alg = dnnl::algorithm::eltwise_tanh;
  else
    return Status::error(std::string(kernel) + ": unknown activation '" +
                         activation + "' (relu, sigmoid, tanh or none)");
  ops.append_eltwise(1.0f, alg, 0.0f, 0.0f);
  return Status::ok();
}

memory::desc nhwcDesc(int64_t n, int64_t h, int64_t w, int64_t c) {
  return memory::desc({n, c, h, w}, memory::data_type::f32,
                      memory::format_tag::nhwc);
}

} // namespace graph::runtime::cpu

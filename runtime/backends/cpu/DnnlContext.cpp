//===- DnnlContext.cpp - what the oneDNN kernels share --------------------===//

#include "runtime/backends/cpu/DnnlContext.h"

#include "runtime/backends/cpu/CpuKernels.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <string>

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

ReplicaThreadsScope::ReplicaThreadsScope(const KernelContext &ctx, int threads)
    : saved_(omp_get_max_threads()) {
  omp_set_num_threads(threads > 0 ? threads : threadsPerReplica(ctx.replicas));
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
  int threads =
      static_cast<int64_t>(dst.get_desc().get_size()) < kSerialReorderBytes ? 1
                                                                            : 0;
  int saved = omp_get_max_threads();
  if (threads > 0)
    omp_set_num_threads(threads);
  dnnl::reorder::primitive_desc pd(from, dst, userScratchpad());
  omp_set_num_threads(saved);
  Step step{dnnl::reorder(pd),
            {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, dst}},
            {},
            {},
            threads};
  step.args.emplace(DNNL_ARG_SCRATCHPAD,
                    memory(pd.scratchpad_desc(), dnnlEngine()));
  push(to, std::move(step));
}

void DnnlLaunch::push(std::vector<Step> &to, Step step) {
  for (const auto &[kind, mem] : step.args)
    step.cArgs.push_back({kind, mem.get()});
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
                     std::unordered_map<int, memory> args, int threads) {
  args.emplace(DNNL_ARG_SCRATCHPAD, memory(pd.scratchpad_desc(), dnnlEngine()));
  push(steps_, {primitive, std::move(args), {}, {}, threads});
}

void DnnlLaunch::addSplit(const dnnl::primitive &primitive,
                          const dnnl::primitive_desc_base &pd,
                          std::vector<std::unordered_map<int, memory>> args) {
  Step step;
  for (std::unordered_map<int, memory> &part : args) {
    part.emplace(DNNL_ARG_SCRATCHPAD,
                 memory(pd.scratchpad_desc(), dnnlEngine()));
    push(step.split, {primitive, std::move(part), {}, {}, 1});
  }
  steps_.push_back(std::move(step));
}

dnnl_status_t DnnlLaunch::execute(const Step &step, dnnl::stream &stream) {
  return dnnl_primitive_execute(step.primitive.get(), stream.get(),
                                static_cast<int>(step.cArgs.size()),
                                step.cArgs.data());
}

void DnnlLaunch::addLoop(std::function<void()> loop) {
  steps_.push_back({dnnl::primitive(), {}, {}, std::move(loop)});
}

Status DnnlLaunch::operator()(const KernelContext &ctx, const KernelConfig &,
                              const std::vector<TensorRef> &,
                              const std::vector<TensorRef> &) const {
  useReplicaThreads(ctx);
  const int replicaThreads = omp_get_max_threads();
  dnnl::stream &stream = dnnlStream();
  try {
    for (const std::vector<Step> *list : {&before_, &steps_, &after_})
      for (const Step &step : *list) {
        // The CPU stream runs a primitive inside execute(), on the calling
        // thread's OpenMP team size.
        omp_set_num_threads(step.threads > 0 ? step.threads : replicaThreads);
        if (step.loop) {
          stream.wait();
          step.loop();
        } else if (!step.split.empty()) {
          // Inside the parallel region oneDNN runs each copy on its
          // calling thread (omp_in_parallel), on that thread's stream.
          stream.wait();
          dnnl_status_t status = dnnl_success;
          const int parts = static_cast<int>(step.split.size());
#pragma omp parallel for num_threads(parts) schedule(static, 1)
          for (int part = 0; part < parts; ++part) {
            dnnl::stream &own = dnnlStream();
            dnnl_status_t s = execute(step.split[part], own);
            if (s == dnnl_success)
              s = dnnl_stream_wait(own.get());
            if (s != dnnl_success)
#pragma omp critical(dnnl_split_status)
              status = s;
          }
          if (status != dnnl_success)
            throw dnnl::error(status, "could not execute a primitive");
        } else if (dnnl_status_t status = execute(step, stream);
                   status != dnnl_success) {
          throw dnnl::error(status, "could not execute a primitive");
        }
      }
    omp_set_num_threads(replicaThreads);
    stream.wait();
  } catch (const dnnl::error &e) {
    return Status::error(std::string(kernel_) + ": oneDNN failed: " + e.what());
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

memory::desc nhwcDesc(int64_t n, int64_t h, int64_t w, int64_t c,
                      memory::data_type type) {
  return memory::desc({n, c, h, w}, type, memory::format_tag::nhwc);
}

namespace {

/// Whether oneDNN's effective ISA includes `feature`: oneDNN 2.6's ISA
/// values are bit sets, each one's bits including those it extends.
bool cpuHas(dnnl::cpu_isa feature) {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto bits = static_cast<unsigned>(feature);
  return (isa & bits) == bits;
}

/// Whether the CPU has AVX512-BF16 (AMX includes it), whose instructions
/// take bfloat16 dot products.
bool cpuComputesBf16() { return cpuHas(dnnl::cpu_isa::avx512_core_bf16); }

} // namespace

Status bf16Path(Bf16Path &path) {
  static const std::pair<Status, Bf16Path> chosen = [] {
    const char *env = std::getenv("GRAPH_CPU_BF16");
    std::string want = env ? env : "auto";
    // oneDNN takes bfloat16 on AVX-512 CPUs only (it emulates AVX512-BF16
    // with AVX-512 instructions); elsewhere it refuses every bf16 primitive.
    if (want == "onednn" && !cpuHas(dnnl::cpu_isa::avx512_core))
      return std::pair{Status::error("GRAPH_CPU_BF16=onednn: oneDNN computes "
                                     "bfloat16 only on AVX-512 CPUs, and this "
                                     "one has no AVX-512"),
                       Bf16Path::widened};
    if (want == "onednn")
      return std::pair{Status::ok(), Bf16Path::onednn};
    if (want == "widened")
      return std::pair{Status::ok(), Bf16Path::widened};
    if (want != "auto")
      return std::pair{Status::error("GRAPH_CPU_BF16 is '" + want +
                                     "': expected auto, onednn or widened"),
                       Bf16Path::widened};
    return std::pair{Status::ok(),
                     cpuComputesBf16() ? Bf16Path::onednn : Bf16Path::widened};
  }();
  path = chosen.second;
  return chosen.first;
}

Status describeBf16Path(std::string &description) {
  Bf16Path path;
  if (Status s = bf16Path(path); !s)
    return s;
  const bool native = cpuComputesBf16();
  description =
      path == Bf16Path::onednn
          ? std::string("convolutions and matmuls on oneDNN's bf16 "
                        "primitives") +
                (native ? "" : ", emulated: this CPU has no AVX512-BF16")
          : std::string("float32 kernels on widened copies") +
                (native ? ", as GRAPH_CPU_BF16 asks"
                        : ", this CPU has no AVX512-BF16 or AMX");
  return Status::ok();
}

bool allBf16(const std::vector<TensorRef> &ins,
             const std::vector<TensorRef> &outs) {
  bool anyBf16 = false;
  for (const std::vector<TensorRef> *list : {&ins, &outs})
    for (const TensorRef &t : *list) {
      if (t.dtype == plan::DType::bf16)
        anyBf16 = true;
      else if (t.dtype != plan::DType::i32 && t.dtype != plan::DType::i64)
        return false;
    }
  return anyBf16;
}

bool takesBf16(const std::vector<TensorRef> &ins,
               const std::vector<TensorRef> &outs) {
  Bf16Path path;
  return allBf16(ins, outs) && (!bf16Path(path) || path == Bf16Path::onednn);
}

bool poolingTakesBf16(const std::vector<TensorRef> &ins,
                      const std::vector<TensorRef> &outs) {
  return allBf16(ins, outs) && cpuHas(dnnl::cpu_isa::avx512_core);
}

Status dnnlOperandType(const char *kernel, const std::vector<TensorRef> &ins,
                       const std::vector<TensorRef> &outs,
                       memory::data_type &type) {
  const plan::DType first = ins.empty() ? plan::DType::f32 : ins[0].dtype;
  if (first == plan::DType::bf16) {
    Bf16Path path;
    if (Status s = bf16Path(path); !s)
      return Status::error(std::string(kernel) + ": " + s.message());
  }
  for (size_t i = 0; i < ins.size() + outs.size(); ++i) {
    const TensorRef &t = i < ins.size() ? ins[i] : outs[i - ins.size()];
    if (t.dtype != first)
      return Status::error(
          std::string(kernel) + ": " +
          (i < ins.size() ? "input " + std::to_string(i)
                          : "output " + std::to_string(i - ins.size())) +
          " is " + plan::EnumNameDType(t.dtype) + ", expected " +
          plan::EnumNameDType(first) + " as input 0");
  }
  type = first == plan::DType::bf16 ? memory::data_type::bf16
                                    : memory::data_type::f32;
  return Status::ok();
}

memory sliceOf(const memory::desc &desc, const TensorRef &t, int part,
               int parts) {
  const int64_t bytes = t.dtype == plan::DType::bf16 ? 2 : 4;
  return bind(desc, static_cast<char *>(t.data) +
                        part * (t.elements() / parts) * bytes);
}

} // namespace graph::runtime::cpu

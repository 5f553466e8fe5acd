//===- Kernel.cpp - kernel configuration and registry ---------------------===//

#include "runtime/core/Kernel.h"
#include "runtime/core/ReducedPrecision.h"

namespace graph::runtime {

const char *backendName(Backend backend) {
  switch (backend) {
  case Backend::reference:
    return "reference";
  case Backend::cpu:
    return "cpu";
  case Backend::cuda:
    return "cuda";
  }
  return "unknown";
}

std::optional<Backend> parseBackend(const std::string &name) {
  for (Backend b : {Backend::reference, Backend::cpu, Backend::cuda})
    if (name == backendName(b))
      return b;
  return std::nullopt;
}

KernelConfig KernelConfig::fromPlan(
    const flatbuffers::Vector<flatbuffers::Offset<plan::Attr>> *attrs) {
  KernelConfig config;
  if (!attrs)
    return config;
  for (const plan::Attr *a : *attrs) {
    std::string name = a->name()->str();
    switch (a->kind()) {
    case plan::AttrKind::int_:
      config.set(name, static_cast<int64_t>(a->i()));
      break;
    case plan::AttrKind::float_:
      config.set(name, a->f());
      break;
    case plan::AttrKind::string:
      config.set(name, a->s() ? a->s()->str() : std::string());
      break;
    case plan::AttrKind::ints:
      config.set(name, a->ints() ? std::vector<int64_t>(a->ints()->begin(),
                                                        a->ints()->end())
                                 : std::vector<int64_t>());
      break;
    case plan::AttrKind::floats:
      config.set(name, a->floats() ? std::vector<double>(a->floats()->begin(),
                                                         a->floats()->end())
                                   : std::vector<double>());
      break;
    }
  }
  return config;
}

int64_t KernelConfig::getInt(const std::string &name, int64_t fallback) const {
  auto it = entries.find(name);
  if (it == entries.end())
    return fallback;
  if (auto *i = std::get_if<int64_t>(&it->second))
    return *i;
  if (auto *f = std::get_if<double>(&it->second))
    return static_cast<int64_t>(*f);
  return fallback;
}

double KernelConfig::getFloat(const std::string &name, double fallback) const {
  auto it = entries.find(name);
  if (it == entries.end())
    return fallback;
  if (auto *f = std::get_if<double>(&it->second))
    return *f;
  if (auto *i = std::get_if<int64_t>(&it->second))
    return static_cast<double>(*i);
  return fallback;
}

std::string KernelConfig::getString(const std::string &name,
                                    const std::string &fallback) const {
  auto it = entries.find(name);
  if (it == entries.end())
    return fallback;
  if (auto *s = std::get_if<std::string>(&it->second))
    return *s;
  return fallback;
}

std::vector<int64_t> KernelConfig::getInts(const std::string &name) const {
  auto it = entries.find(name);
  if (it == entries.end())
    return {};
  if (auto *v = std::get_if<std::vector<int64_t>>(&it->second))
    return *v;
  return {};
}

std::vector<double> KernelConfig::getFloats(const std::string &name) const {
  auto it = entries.find(name);
  if (it == entries.end())
    return {};
  if (auto *v = std::get_if<std::vector<double>>(&it->second))
    return *v;
  if (auto *v = std::get_if<std::vector<int64_t>>(&it->second))
    return std::vector<double>(v->begin(), v->end());
  return {};
}

std::pair<int64_t, int64_t> KernelConfig::getPair(const std::string &name,
                                                  int64_t fallback) const {
  std::vector<int64_t> v = getInts(name);
  if (v.size() == 2)
    return {v[0], v[1]};
  if (v.size() == 1)
    return {v[0], v[0]};
  return {fallback, fallback};
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

KernelRegistry &KernelRegistry::global() {
  static KernelRegistry registry;
  return registry;
}

void KernelRegistry::add(const std::string &name, Backend backend,
                         KernelFn fn) {
  addFactory(name, backend,
             [fn = std::move(fn)](const KernelContext &, const KernelConfig &,
                                  const std::vector<TensorRef> &,
                                  const std::vector<TensorRef> &,
                                  KernelFn &out) {
               out = fn;
               return Status::ok();
             });
}

void KernelRegistry::addFactory(const std::string &name, Backend backend,
                                KernelFactory factory,
                                TakesReduced takesReduced) {
  kernels[{name, backend}] = std::move(factory);
  if (takesReduced)
    reducedPrecision[{name, backend}] = std::move(takesReduced);
  else
    reducedPrecision.erase({name, backend});
}

void KernelRegistry::addReducedPrecision(const std::string &name,
                                         Backend backend, KernelFn fn) {
  add(name, backend, std::move(fn));
  reducedPrecision[{name, backend}] = [](const std::vector<TensorRef> &,
                                         const std::vector<TensorRef> &) {
    return true;
  };
}

bool KernelRegistry::takesReduced(const std::string &name, Backend backend,
                                  const std::vector<TensorRef> &ins,
                                  const std::vector<TensorRef> &outs) const {
  auto it = reducedPrecision.find({name, backend});
  return it != reducedPrecision.end() && it->second(ins, outs);
}

bool KernelRegistry::has(const std::string &name, Backend backend) const {
  return kernels.count({name, backend}) != 0;
}

int64_t
KernelRegistry::widenedElements(const std::string &name, Backend backend,
                                const std::vector<TensorRef> &ins,
                                const std::vector<TensorRef> &outs) const {
  if (backend == Backend::cuda || takesReduced(name, backend, ins, outs))
    return 0;
  return widenedCopyElements(ins, outs);
}

Status KernelRegistry::instantiate(const std::string &name, Backend backend,
                                   const KernelContext &ctx,
                                   const KernelConfig &config,
                                   const std::vector<TensorRef> &ins,
                                   const std::vector<TensorRef> &outs,
                                   KernelFn &out) const {
  auto it = kernels.find({name, backend});
  if (it == kernels.end())
    return Status::error(std::string("the ") + backendName(backend) +
                         " backend has no kernel '" + name + "'");
  if (hasReducedFloats(ins, outs) && !takesReduced(name, backend, ins, outs)) {
    // A mixed-precision plan: the host backends run their float32 kernel
    // with the reference rounding; device buffers are out of their reach.
    if (backend == Backend::cuda)
      return Status::error(
          "has bfloat16 or float16 operands, and the cuda backend has no "
          "reduced-precision kernels yet: mixed precision runs on the "
          "reference and cpu backends");
    return instantiateWidened(it->second, ctx, config, ins, outs, out);
  }
  return it->second(ctx, config, ins, outs, out);
}

std::vector<std::string> KernelRegistry::names(Backend backend) const {
  std::vector<std::string> out;
  for (auto &[key, fn] : kernels)
    if (key.second == backend)
      out.push_back(key.first);
  return out;
}

Status checkOperands(const char *kernel, const std::vector<TensorRef> &ins,
                     const std::vector<TensorRef> &outs, size_t minIns,
                     size_t maxIns, size_t numOuts, const OperandRule &rule) {
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
    bool input = i < ins.size();
    const TensorRef &t = input ? ins[i] : outs[i - ins.size()];
    std::string what = input ? "input " + std::to_string(i)
                             : "output " + std::to_string(i - ins.size());
    if (!t.data && t.elements() != 0)
      return Status::error(name + ": " + what + " has no buffer");
    bool labels = input && static_cast<int>(i) == rule.labels;
    bool integer = t.dtype == plan::DType::i32 || t.dtype == plan::DType::i64;
    bool allowed = t.dtype == plan::DType::f32 ||
                   (rule.bf16 && t.dtype == plan::DType::bf16) ||
                   (rule.f16 && t.dtype == plan::DType::f16) ||
                   (rule.numeric && (t.dtype == plan::DType::f64 || integer)) ||
                   (labels && integer);
    if (!allowed)
      return Status::error(name + ": " + what + " is " +
                           plan::EnumNameDType(t.dtype) +
                           (rule.numeric ? ", expected f32, f64, i32 or i64"
                            : labels     ? ", expected f32, i32 or i64"
                            : rule.f16   ? ", expected f32, bf16 or f16"
                            : rule.bf16  ? ", expected f32 or bf16"
                                         : ", expected f32") +
                           rule.why);
  }
  return Status::ok();
}

} // namespace graph::runtime

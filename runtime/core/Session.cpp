//===- Session.cpp - the training loop -----------------------------------===//

#include "runtime/core/Session.h"

#include <cmath>

namespace graph::runtime {

double EvalResult::value(const std::string &name) const {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name)
      return values[i];
  return std::nan("");
}

Status EvaluationHook::afterStep(const StepContext &ctx) {
  if (every_ <= 0 || ctx.step % every_ != 0)
    return Status::ok();
  return evaluate_(ctx.step);
}

Status Session::setGlobalStep(int64_t step) {
  if (step < 0)
    return Status::error("global step " + std::to_string(step) +
                         " is negative");
  globalStep_ = step;
  return Status::ok();
}

ExecutorOptions SessionOptions::executorOptions() const {
  ExecutorOptions eo;
  eo.backend = backend;
  eo.seed = seed;
  eo.timeout = timeout;
  eo.learningRate = learningRate;
  eo.cudaGraph = cudaGraph;
  eo.maxPhysicalDevices = maxPhysicalDevices;
  return eo;
}

Status Session::create(const LoadedPlan &plan, const SessionOptions &options,
                       std::unique_ptr<Session> &out) {
  std::unique_ptr<Session> s(new Session(plan, options));
  const plan::Program *program = nullptr;
  if (Status st = findProgram(*plan.plan, plan::ProgramKind::train,
                              options.replicas, plan.path, program);
      !st)
    return st;
  if (Status st =
          s->variables_.initialize(*plan.plan, options.replicas, options.seed);
      !st)
    return Status::error(plan.path + ": " + st.message());
  ExecutorOptions eo = options.executorOptions();
  if (Status st =
          Executor::create(*plan.plan, *program, s->variables_, eo, s->train_);
      !st)
    return Status::error(plan.path + ": " + st.message());
  out = std::move(s);
  return Status::ok();
}

Status Session::train(data::BatchIterator &batches, int64_t maxSteps,
                      const std::vector<Hook *> &hooks) {
  SessionInfo info;
  info.model = plan_.plan->model() ? plan_.plan->model()->str() : "";
  info.program = train_->program().name()->str();
  info.replicas = train_->replicas();
  info.backend = options_.backend;
  info.globalBatch = train_->globalBatch();
  info.initialStep = globalStep_;
  info.plannedSteps = maxSteps;
  for (Hook *h : hooks)
    if (Status st = h->begin(info); !st)
      return st;
  auto start = std::chrono::steady_clock::now();
  // Two batches: the step's and the next one's. The next is fetched and
  // staged while the step runs, so on a GPU its copy overlaps the step.
  data::Batch batch[2];
  int current = 0;
  StepResult result;
  StepContext ctx;
  Status status;
  bool dataEnd = maxSteps == 0;
  ctx.begin = start; // the first step's time includes its batch
  if (!dataEnd) {
    status = batches.next(batch[current], dataEnd);
    if (status && !dataEnd)
      status = train_->stage(batch[current]);
  }
  for (int64_t i = 0; status && !dataEnd; ++i) {
    ctx.step = globalStep_ + 1;
    ctx.globalBatch = info.globalBatch;
    ctx.replicas = info.replicas;
    ctx.result = nullptr;
    for (Hook *h : hooks)
      if (status = h->beforeStep(ctx); !status)
        break;
    if (!status)
      break;
    if (status = train_->launch(ctx.step, result); !status)
      break;
    Status ahead;
    dataEnd = maxSteps >= 0 && i + 1 >= maxSteps;
    if (!dataEnd) {
      ahead = batches.next(batch[1 - current], dataEnd);
      if (ahead && !dataEnd)
        ahead = train_->stage(batch[1 - current]);
    }
    if (status = train_->wait(); !status)
      break;
    ++globalStep_;
    ctx.end = std::chrono::steady_clock::now();
    ctx.result = &result;
    ctx.metrics.clear();
    ctx.loss = std::nan("");
    for (size_t o = 0; o < result.names.size(); ++o) {
      if (result.names[o] == "loss")
        ctx.loss = result.mean[o];
      else
        ctx.metrics.emplace_back(result.names[o], result.mean[o]);
    }
    for (Hook *h : hooks)
      if (status = h->afterStep(ctx); !status)
        break;
    // The step ran and its hooks saw it; a failure fetching the next batch
    // ends the run after it.
    if (status)
      status = ahead;
    current = 1 - current;
    ctx.begin = std::chrono::steady_clock::now();
  }
  // A run that stopped early may leave the next batch staged.
  train_->discardStaged();
  info.stepsDone = globalStep_ - info.initialStep;
  info.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (status)
    for (Hook *h : hooks)
      if (status = h->end(info); !status)
        break;
  return status;
}

Status
Session::cacheTrainingData(std::shared_ptr<const data::Dataset> dataset) {
  return train_->cacheDataset(std::move(dataset));
}

Status Session::evaluate(data::BatchIterator &batches, EvalResult &out,
                         int64_t maxBatches) {
  if (!eval_) {
    const plan::Program *program = nullptr;
    if (Status st = findProgram(*plan_.plan, plan::ProgramKind::eval,
                                options_.replicas, plan_.path, program);
        !st)
      return st;
    ExecutorOptions eo = options_.executorOptions();
    if (Status st =
            Executor::create(*plan_.plan, *program, variables_, eo, eval_);
        !st)
      return Status::error(plan_.path + ": " + st.message());
  }
  out = EvalResult();
  data::Batch batch;
  StepResult result;
  while (maxBatches < 0 || out.batches < maxBatches) {
    bool end = false;
    if (Status s = batches.next(batch, end); !s)
      return s;
    if (end)
      break;
    if (Status s = eval_->run(batch, globalStep_, result); !s)
      return s;
    if (out.names.empty()) {
      out.names = result.names;
      out.values.assign(result.names.size(), 0.0);
    }
    for (size_t o = 0; o < result.mean.size(); ++o)
      out.values[o] += result.mean[o];
    ++out.batches;
    out.examples += batch.size;
  }
  if (out.batches == 0)
    return Status::error("evaluation: the test data gave no batch (fewer "
                         "examples than the global batch?)");
  for (double &v : out.values)
    v /= static_cast<double>(out.batches);
  return Status::ok();
}

} // namespace graph::runtime

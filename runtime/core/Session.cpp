//===- Session.cpp - the training loop -----------------------------------===//

#include "runtime/core/Session.h"

#include "runtime/collectives/Workers.h"
#include "runtime/core/ConfusionMetrics.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace graph::runtime {

double EvalResult::value(const std::string &name) const {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name)
      return values[i];
  return std::nan("");
}

Status EvaluationHook::afterStep(const StepContext &ctx) {
  if (!due(ctx.step))
    return Status::ok();
  return evaluate_(ctx.step);
}

double MetricSpec::value(const std::vector<double> &state) const {
  if (state.empty())
    return std::nan("");
  switch (reduction) {
  case plan::MetricReduction::root_mean:
    return std::sqrt(std::max(state[0], 0.0));
  case plan::MetricReduction::precision:
  case plan::MetricReduction::recall:
  case plan::MetricReduction::auc: {
    ConfusionMetric metric = reduction == plan::MetricReduction::precision
                                 ? ConfusionMetric::precision
                             : reduction == plan::MetricReduction::recall
                                 ? ConfusionMetric::recall
                                 : ConfusionMetric::auc;
    return confusionMetric(
        metric, curve == plan::AucCurve::pr ? AucCurve::pr : AucCurve::roc,
        static_cast<AucSummation>(summation), state.data(),
        static_cast<int64_t>(state.size() / 4));
  }
  default:
    return state[0];
  }
}

std::vector<MetricSpec> metricSpecs(const plan::Plan &plan) {
  std::vector<MetricSpec> specs;
  const plan::Training *t = plan.training();
  if (!t || !t->metrics())
    return specs;
  for (const flatbuffers::String *name : *t->metrics()) {
    MetricSpec spec;
    spec.name = name->str();
    if (t->metric_specs())
      for (const plan::Metric *m : *t->metric_specs())
        if (m->name()->str() == spec.name) {
          spec.reduction = m->reduction();
          spec.curve = m->curve();
          spec.summation = m->summation();
        }
    specs.push_back(std::move(spec));
  }
  return specs;
}

int Session::totalReplicas() const {
  return options_.replicas *
         (options_.workers ? std::max(1, options_.workers->size()) : 1);
}

Status Session::countsOf(const StepResult &result,
                         std::vector<std::vector<double>> &counts) const {
  counts.assign(specs_.size(), {});
  for (size_t m = 0; m < specs_.size(); ++m) {
    if (!specs_[m].counted())
      continue;
    auto named = std::find(result.tensorNames.begin(), result.tensorNames.end(),
                           specs_[m].name);
    if (named == result.tensorNames.end())
      return Status::error(plan_.path + ": the step has no output '" +
                           specs_[m].name + "' (the metric's counts)");
    size_t t = static_cast<size_t>(named - result.tensorNames.begin());
    std::vector<double> &sum = counts[m];
    for (const std::vector<std::vector<float>> &replica : result.tensors) {
      const std::vector<float> &c = replica[t];
      if (sum.empty())
        sum.assign(c.size(), 0.0);
      if (c.size() != sum.size() || c.size() % 4 != 0)
        return Status::error(plan_.path + ": output '" + specs_[m].name +
                             "' holds " + std::to_string(c.size()) +
                             " counts, not [4, thresholds] on every replica");
      for (size_t i = 0; i < c.size(); ++i)
        sum[i] += c[i];
    }
  }
  return Status::ok();
}

Status Session::meanOverWorkers(StepResult &result,
                                std::vector<std::vector<double>> &counts,
                                bool vote, int &votes) {
  votes = vote ? 1 : 0;
  Workers *workers = options_.workers;
  if (!workers || workers->size() < 2)
    return Status::ok();
  // Sums over this worker's replicas; summed over the workers, divided by
  // the job's replicas. The counts and the stop votes ride along: no
  // collective of their own.
  const size_t outputs = result.names.size();
  std::vector<double> sums(outputs, 0.0);
  for (const std::vector<double> &replica : result.perReplica)
    for (size_t o = 0; o < outputs; ++o)
      sums[o] += replica[o];
  for (const std::vector<double> &c : counts)
    sums.insert(sums.end(), c.begin(), c.end());
  sums.push_back(votes);
  if (Status s =
          workers->allReduceSum(sums.data(), static_cast<int64_t>(sums.size()));
      !s)
    return Status::error("step outputs across workers: " + s.message());
  for (size_t o = 0; o < outputs; ++o)
    result.mean[o] = sums[o] / totalReplicas();
  size_t at = outputs;
  for (std::vector<double> &c : counts)
    for (double &v : c)
      v = sums[at++];
  votes = static_cast<int>(sums[at]);
  return Status::ok();
}

void Session::readOutputs(const StepResult &result,
                          std::vector<std::vector<double>> &counts,
                          StepContext &ctx) const {
  ctx.metrics.clear();
  ctx.metricSpecs.clear();
  ctx.metricStates.clear();
  ctx.loss = result.value("loss");
  ctx.gradNorm = result.value("grad_norm");
  ctx.lossScale = result.value("loss_scale");
  for (size_t m = 0; m < specs_.size(); ++m) {
    const MetricSpec &spec = specs_[m];
    std::vector<double> state =
        spec.counted() ? std::move(counts[m])
                       : std::vector<double>{result.value(spec.name)};
    ctx.metrics.emplace_back(spec.name, spec.value(state));
    ctx.metricSpecs.push_back(&spec);
    ctx.metricStates.push_back(std::move(state));
  }
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
  eo.workers = workers;
  eo.allReduceWire = allReduceWire;
  eo.backend = backend;
  eo.seed = seed;
  eo.timeout = timeout;
  eo.learningRate = learningRate;
  eo.flushDenormals = flushDenormals;
  eo.cudaGraph = cudaGraph;
  eo.maxPhysicalDevices = maxPhysicalDevices;
  eo.firstPhysicalDevice = firstPhysicalDevice;
  eo.precision = precision;
  eo.convAlgoCachePath = convAlgoCachePath;
  return eo;
}

Status Session::create(const LoadedPlan &plan, const SessionOptions &options,
                       std::unique_ptr<Session> &out) {
  std::unique_ptr<Session> s(new Session(plan, options));
  const plan::Program *program = nullptr;
  if (Status st = findProgram(*plan.plan, plan::ProgramKind::train,
                              s->totalReplicas(), plan.path, program);
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
  s->specs_ = metricSpecs(*plan.plan);
  out = std::move(s);
  return Status::ok();
}

namespace {
/// Of the three batch buffers of a loop with up to two steps in flight
/// (each keeps its batch until its hooks ran) and one staged batch, one
/// that none of the `count` steps in flight holds (`heldBy(i)`: step i's).
template <typename HeldBy> int freeBatch(int count, HeldBy heldBy) {
  for (int b = 0; b < 3; ++b) {
    bool held = false;
    for (int i = 0; i < count; ++i)
      held = held || heldBy(i) == b;
    if (!held)
      return b;
  }
  return 0;
}
} // namespace

int Session::stepsInFlight() const {
  const bool gpu = options_.backend == Backend::cuda;
  // On the host backends a launch runs the step, its collectives across
  // workers included: a worker whose hooks hold the next launch back (the
  // chief's checkpoint) would meet the others' next all-reduce with its
  // own outputs' exchange. So several workers there run one at a time.
  if (!gpu && options_.workers && options_.workers->size() > 1)
    return 1;
  int want =
      options_.stepsInFlight > 0 ? options_.stepsInFlight : (gpu ? 2 : 1);
  return std::clamp(want, 1, train_->maxStepsInFlight());
}

Status Session::train(data::BatchIterator &batches, int64_t maxSteps,
                      const std::vector<Hook *> &hooks) {
  SessionInfo info;
  info.model = plan_.plan->model() ? plan_.plan->model()->str() : "";
  info.program = train_->program().name()->str();
  info.outputs = train_->prepared().outputNames;
  info.replicas = totalReplicas();
  info.backend = options_.backend;
  info.globalBatch = train_->globalBatch();
  info.initialStep = globalStep_;
  info.plannedSteps = maxSteps;
  info.stepsInFlight = stepsInFlight();
  for (Hook *h : hooks)
    if (Status st = h->begin(info); !st)
      return st;
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  auto start = Clock::now();

  // A launched step, kept until its hooks saw it.
  struct Launched {
    StepContext ctx;
    StepResult result;
    int batch = 0;       // its batch in `batch`
    bool waited = false; // the executor's wait() returned for it
    Status waitStatus;   // what that wait() returned
    // The fetch of the batch after it, made while it ran.
    Clock::time_point fetchBegin, fetchEnd;
  };
  // Steps in flight, oldest at `head`; a ring of two, as the executor's
  // queue (Executor::maxStepsInFlight) holds at most two.
  std::array<Launched, 2> steps;
  int head = 0, count = 0;
  const int depth = std::min(info.stepsInFlight, 2);
  // The batches of the steps in flight (their hooks read them) and the
  // staged one.
  data::Batch batch[3];
  int stagedBatch = -1; // -1: nothing staged
  // A failure fetching a batch ahead ends the run once the steps in flight
  // finished and their hooks saw them.
  Status status, ahead;
  bool dataEnd = maxSteps == 0;
  int64_t launched = 0;
  if (!dataEnd) {
    status = batches.next(batch[0], dataEnd);
    if (status && !dataEnd)
      status = train_->stage(batch[0]);
    if (status && !dataEnd)
      stagedBatch = 0;
  }
  double firstInput = seconds(start, Clock::now());

  auto at = [&](int i) -> Launched & { return steps[(head + i) % 2]; };
  auto finish = [&](Launched &l) -> Status {
    if (!l.waited) {
      l.waited = true;
      l.waitStatus = train_->wait();
    }
    return l.waitStatus;
  };
  // StepContext::settle: the steps launched after the oldest (whose hooks
  // are running) finish on the devices.
  auto settle = [&]() -> Status {
    for (int i = 1; i < count; ++i)
      if (Status st = finish(at(i)); !st)
        return st;
    return Status::ok();
  };
  auto needsState = [&](int64_t step) {
    for (Hook *h : hooks)
      if (h->needsStateAfter(step))
        return true;
    return false;
  };

  while (status) {
    // Launch while the depth allows, unless a hook needs the devices'
    // state after the last step launched.
    while (status && stagedBatch >= 0 && count < depth &&
           (count == 0 || !needsState(at(count - 1).ctx.step))) {
      Launched &l = at(count);
      StepContext &ctx = l.ctx;
      ctx.step = globalStep_ + count + 1;
      ctx.globalBatch = info.globalBatch;
      ctx.replicas = info.replicas;
      ctx.result = nullptr;
      ctx.loss = ctx.gradNorm = std::nan("");
      ctx.stopVotes = 0;
      ctx.metrics.clear();
      ctx.batch = &batch[stagedBatch];
      if (!ctx.settle)
        ctx.settle = settle;
      // The first step's time includes its batch.
      ctx.begin = launched == 0 ? start : Clock::now();
      ctx.inputReady = Clock::now();
      l.batch = stagedBatch;
      if (options_.workers)
        options_.workers->progress(ctx.step);
      for (Hook *h : hooks)
        if (status = h->beforeStep(ctx); !status)
          break;
      if (!status)
        break;
      ctx.hooksBeforeSeconds = seconds(ctx.inputReady, Clock::now());
      if (status = train_->launch(ctx.step, l.result); !status)
        break;
      l.waited = false;
      ++count;
      ++launched;
      stagedBatch = -1;
      // The next batch is fetched and staged while the step runs, so on a
      // GPU its copy overlaps the step; never one beyond maxSteps.
      l.fetchBegin = Clock::now();
      dataEnd = dataEnd || (maxSteps >= 0 && launched >= maxSteps);
      if (!dataEnd && ahead) {
        int free = freeBatch(count, [&](int i) { return at(i).batch; });
        ahead = batches.next(batch[free], dataEnd);
        if (ahead && !dataEnd)
          ahead = train_->stage(batch[free]);
        if (ahead && !dataEnd)
          stagedBatch = free;
      }
      l.fetchEnd = Clock::now();
    }
    if (!status || count == 0)
      break;

    // The oldest step: wait for it, then its hooks.
    Launched &l = at(0);
    StepContext &ctx = l.ctx;
    if (status = finish(l); !status)
      break;
    // Every worker sees the job's loss and metrics, so that all make the
    // same decision on them (the NaN guard stops all or none), and the
    // votes to stop.
    bool vote = false;
    for (Hook *h : hooks)
      vote = vote || h->votesToStop();
    std::vector<std::vector<double>> counts;
    if (status = countsOf(l.result, counts); !status)
      break;
    if (status = meanOverWorkers(l.result, counts, vote, ctx.stopVotes);
        !status)
      break;
    ++globalStep_;
    ctx.end = Clock::now();
    // The devices waited for the fetch made after this step's launch once
    // they were done with it.
    auto devicesDone = l.fetchBegin;
    for (const std::vector<Timestamp> &timeline : l.result.timestamps)
      for (const Timestamp &t : timeline)
        devicesDone = std::max(devicesDone, std::min(t.at, l.fetchEnd));
    ctx.inputWaitSeconds = (ctx.step == info.initialStep + 1 ? firstInput : 0) +
                           seconds(devicesDone, l.fetchEnd);
    ctx.result = &l.result;
    readOutputs(l.result, counts, ctx);
    for (Hook *h : hooks)
      if (status = h->afterStep(ctx); !status)
        break;
    head = (head + 1) % 2;
    --count;
    if (status && !dataEnd)
      for (Hook *h : hooks)
        if (h->stopRequested()) {
          dataEnd = true;
          stagedBatch = -1; // discardStaged() below forgets it
          break;
        }
  }
  // The steps launched ahead of a failure still finish: nothing may run on
  // the variables once train() returns. They ran, so they count, though
  // no hook saw them.
  while (count > 0) {
    Status st = finish(at(0));
    head = (head + 1) % 2;
    --count;
    if (!st)
      break;
    ++globalStep_;
  }
  while (count > 0) { // after a failed one, the executor reports its own
    (void)finish(at(0));
    head = (head + 1) % 2;
    --count;
  }
  // A fetch that failed ahead ends a run whose steps all ran.
  if (status)
    status = ahead;
  // A run that stopped early may leave the next batch staged.
  train_->discardStaged();
  info.stepsDone = globalStep_ - info.initialStep;
  info.seconds = seconds(start, Clock::now());
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

Status Session::programExecutor(plan::ProgramKind kind,
                                std::unique_ptr<Executor> &out) {
  if (out)
    return Status::ok();
  const plan::Program *program = nullptr;
  if (Status st =
          findProgram(*plan_.plan, kind, totalReplicas(), plan_.path, program);
      !st)
    return st;
  ExecutorOptions eo = options_.executorOptions();
  if (Status st = Executor::create(*plan_.plan, *program, variables_, eo, out);
      !st)
    return Status::error(plan_.path + ": " + st.message());
  return Status::ok();
}

namespace {

/// Adds `batch`'s examples to a confusion matrix from the replicas'
/// predictions (replica r holds rows [r * rows, (r + 1) * rows) of the
/// batch). Padding rows are left out.
Status countConfusion(const data::Batch &batch, const StepResult &result,
                      size_t predictions, EvalResult &out) {
  int64_t replicas = static_cast<int64_t>(result.tensors.size());
  if (replicas == 0 || batch.size % replicas != 0)
    return Status::ok();
  int64_t rows = batch.size / replicas;
  for (int64_t r = 0; r < replicas; ++r) {
    const std::vector<float> &values = result.tensors[r][predictions];
    if (rows == 0 || values.size() % rows != 0)
      return Status::error(
          "evaluation: replica " + std::to_string(r) + "'s predictions hold " +
          std::to_string(values.size()) +
          " values, not a whole number per row of " + std::to_string(rows));
    int64_t classes = static_cast<int64_t>(values.size()) / rows;
    if (out.classes == 0) {
      out.classes = classes;
      out.confusion.assign(static_cast<size_t>(classes * classes), 0);
    }
    if (classes != out.classes)
      return Status::error("evaluation: predictions of " +
                           std::to_string(classes) + " classes after " +
                           std::to_string(out.classes));
    for (int64_t i = 0; i < rows; ++i) {
      int64_t row = r * rows + i;
      if (row >= batch.examples())
        break;
      int64_t label = 0;
      if (!batch.sparseLabels.empty()) {
        label = batch.sparseLabels[row];
      } else {
        const float *oneHot = batch.oneHotLabels.data() + row * classes;
        label = std::max_element(oneHot, oneHot + classes) - oneHot;
      }
      const float *p = values.data() + i * classes;
      int64_t predicted = std::max_element(p, p + classes) - p;
      if (label >= 0 && label < classes)
        ++out.confusion[label * classes + predicted];
    }
  }
  return Status::ok();
}

} // namespace

Status Session::evaluate(data::BatchIterator &batches, EvalResult &out,
                         int64_t maxBatches) {
  if (Status st = programExecutor(plan::ProgramKind::eval, eval_); !st)
    return st;
  out = EvalResult();
  // Sized before the first batch, so that every worker's matrix has the
  // same size even when its share of the data is empty.
  const int64_t rows = eval_->localBatch() / eval_->replicas();
  // Targets (an element-wise loss: regression, binary labels) have no
  // classes to confuse.
  const bool classes = eval_->labelFormat() != data::LabelFormat::Dense;
  if (int64_t n = eval_->tensorOutputElements("predictions");
      classes && n > 0 && rows > 0 && n % rows == 0) {
    out.classes = n / rows;
    out.confusion.assign(static_cast<size_t>(out.classes * out.classes), 0);
  }
  // Every output of the evaluation step is a weighted mean over its
  // replica's rows, sum_i w_i v_i / rows (the loss's sample weights, the
  // metrics' 1 an example; padding rows weigh 0): the sums over all
  // batches, divided by the examples, are the means Keras' evaluate
  // reports (its loss tracker weighs a batch by its size).
  const double rowsPerReplica = static_cast<double>(eval_->localBatch()) /
                                static_cast<double>(eval_->replicas());
  // Keras' reduction="sum": a batch's loss is the sum over its examples,
  // which the step's loss outputs give times the static rows over the
  // examples; the loss tracker still weighs it by its examples, so the
  // short last batch counts with its own.
  const bool summedLosses =
      trainingHyperParameter(*plan_.plan, "reduction_sum", 0) != 0;
  // The loss, and each output's of a model of several ("<output>_loss").
  auto isLossName = [&](const std::string &name) {
    if (name == "loss")
      return true;
    const plan::Training *training = plan_.plan->training();
    if (!training || !training->outputs())
      return false;
    for (const plan::Output *output : *training->outputs())
      if (output->name() && name == output->name()->str() + "_loss")
        return true;
    return false;
  };
  std::vector<bool> isLoss;
  // The confusion metrics' counts add up over the batches instead.
  std::vector<std::string> sumNames;
  std::vector<double> sums;
  std::vector<std::vector<double>> counts(specs_.size());
  Status run = runBatches(
      *eval_, batches, maxBatches,
      [&](const data::Batch &batch, const StepResult &result) -> Status {
        if (sumNames.empty()) {
          sumNames = result.names;
          sums.assign(result.names.size(), 0.0);
          for (const std::string &name : sumNames)
            isLoss.push_back(isLossName(name));
        }
        const double examples = static_cast<double>(batch.examples());
        for (size_t o = 0; o < result.names.size(); ++o) {
          const double weight =
              summedLosses && isLoss[o]
                  ? rowsPerReplica * examples / static_cast<double>(batch.size)
                  : rowsPerReplica;
          for (const std::vector<double> &replica : result.perReplica)
            sums[o] += replica[o] * weight;
        }
        std::vector<std::vector<double>> batchCounts;
        if (Status s = countsOf(result, batchCounts); !s)
          return s;
        for (size_t m = 0; m < counts.size(); ++m) {
          if (counts[m].empty())
            counts[m].assign(batchCounts[m].size(), 0.0);
          for (size_t i = 0; i < batchCounts[m].size(); ++i)
            counts[m][i] += batchCounts[m][i];
        }
        for (size_t t = 0; t < result.tensorNames.size(); ++t)
          if (classes && result.tensorNames[t] == "predictions" &&
              !batch.indicesOnly())
            if (Status s = countConfusion(batch, result, t, out); !s)
              return s;
        ++out.batches;
        out.examples += batch.examples();
        return Status::ok();
      });
  if (!run)
    return run;
  // Every worker's sums and examples: the whole test set's means.
  if (options_.workers && options_.workers->size() > 1) {
    std::vector<double> all = sums;
    for (const std::vector<double> &c : counts)
      all.insert(all.end(), c.begin(), c.end());
    // The confusion counts travel as doubles: exact up to 2^53.
    for (int64_t c : out.confusion)
      all.push_back(static_cast<double>(c));
    all.push_back(static_cast<double>(out.examples));
    all.push_back(static_cast<double>(out.batches));
    // A worker without a batch knows no sizes: the job's sizes are every
    // worker's (sent ahead), so that all add vectors of one length.
    std::vector<double> sizes{static_cast<double>(sums.size())};
    for (const std::vector<double> &c : counts)
      sizes.push_back(static_cast<double>(c.size()));
    std::vector<double> most = sizes;
    if (Status s = options_.workers->allReduceSum(
            most.data(), static_cast<int64_t>(most.size()));
        !s)
      return Status::error("evaluation across workers: " + s.message());
    const double workers = static_cast<double>(options_.workers->size());
    for (size_t i = 0; i < sizes.size(); ++i)
      if (sizes[i] != 0 && sizes[i] * workers != most[i])
        return Status::error("evaluation across workers: the workers' "
                             "evaluation programs have different outputs");
    if (sums.empty() && most[0] > 0) {
      // This worker evaluated nothing: zeros of the others' sizes.
      sums.assign(static_cast<size_t>(most[0] / workers), 0.0);
      for (size_t m = 0; m < counts.size(); ++m)
        counts[m].assign(static_cast<size_t>(most[m + 1] / workers), 0.0);
      all = sums;
      for (const std::vector<double> &c : counts)
        all.insert(all.end(), c.begin(), c.end());
      for (int64_t c : out.confusion)
        all.push_back(static_cast<double>(c));
      all.push_back(static_cast<double>(out.examples));
      all.push_back(static_cast<double>(out.batches));
    }
    if (Status s = options_.workers->allReduceSum(
            all.data(), static_cast<int64_t>(all.size()));
        !s)
      return Status::error("evaluation across workers: " + s.message());
    size_t at = 0;
    for (double &v : sums)
      v = all[at++];
    for (std::vector<double> &c : counts)
      for (double &v : c)
        v = all[at++];
    for (int64_t &c : out.confusion)
      c = static_cast<int64_t>(all[at++]);
    out.examples = static_cast<int64_t>(all[at++]);
    out.batches = static_cast<int64_t>(all[at++]);
  }
  if (out.examples == 0)
    return Status::error("evaluation: the test data gave no example");
  const double examples = static_cast<double>(out.examples);
  auto meanOf = [&](const std::string &name) {
    for (size_t o = 0; o < sumNames.size(); ++o)
      if (sumNames[o] == name)
        return sums[o] / examples;
    return std::nan("");
  };
  out.names = {"loss"};
  out.values = {meanOf("loss")};
  for (size_t m = 0; m < specs_.size(); ++m) {
    const MetricSpec &spec = specs_[m];
    out.names.push_back(spec.name);
    out.values.push_back(spec.value(
        spec.counted() ? counts[m] : std::vector<double>{meanOf(spec.name)}));
  }
  return Status::ok();
}

Status Session::predict(data::BatchIterator &batches,
                        const PredictionFn &consume) {
  if (options_.workers && options_.workers->size() > 1)
    return Status::error("prediction runs in one process: start graphrun "
                         "--predict without mpirun");
  if (Status st = programExecutor(plan::ProgramKind::predict, predict_); !st)
    return st;
  const int64_t rows = predict_->localBatch() / predict_->replicas();
  // One buffer an output: "predictions", or "predictions:<output>" for
  // each output of a model of several.
  std::vector<std::vector<float>> values;
  std::vector<OutputRows> outputs;
  return runBatches(
      *predict_, batches, -1,
      [&](const data::Batch &batch, const StepResult &result) -> Status {
        outputs.clear();
        values.resize(result.tensorNames.size());
        for (size_t t = 0; t < result.tensorNames.size(); ++t) {
          std::string_view name = result.tensorNames[t];
          if (name != "predictions" && !name.starts_with("predictions:"))
            continue;
          // Replica after replica, their rows are the batch's rows in order.
          values[t].clear();
          for (const std::vector<std::vector<float>> &replica : result.tensors)
            values[t].insert(values[t].end(), replica[t].begin(),
                             replica[t].end());
          int64_t width =
              rows > 0
                  ? static_cast<int64_t>(result.tensors[0][t].size()) / rows
                  : 0;
          if (width <= 0)
            return Status::error(plan_.path + ": the predictions of '" +
                                 std::string(name) + "' are empty");
          name.remove_prefix(std::min(name.size(), sizeof("predictions")));
          outputs.push_back({name, values[t].data(), width});
        }
        if (outputs.empty())
          return Status::error(plan_.path + ": the prediction program has no "
                                            "'predictions' output");
        return consume(outputs, batch.examples(), batch.sourceIndices.data());
      });
}

Status Session::runBatches(
    Executor &executor, data::BatchIterator &batches, int64_t maxBatches,
    const std::function<Status(const data::Batch &, const StepResult &)>
        &consume) {
  const int depth = std::min(stepsInFlight(), executor.maxStepsInFlight());
  // The batches of the steps in flight (consume reads them) and the staged
  // one; each step's result.
  data::Batch batch[3];
  StepResult result[2];
  int batchOf[2] = {0, 0};
  int head = 0, count = 0, staged = -1;
  int64_t launched = 0;
  bool end = maxBatches == 0;
  auto fetch = [&]() -> Status {
    end = end || (maxBatches >= 0 && launched >= maxBatches);
    if (end)
      return Status::ok();
    int free = freeBatch(count, [&](int i) { return batchOf[(head + i) % 2]; });
    Status s = batches.next(batch[free], end);
    if (s && !end)
      s = executor.stage(batch[free]);
    if (s && !end)
      staged = free;
    return s;
  };
  Status status = fetch();
  while (status) {
    // Launch while the depth allows; the next batch is fetched and staged
    // while the steps run.
    while (status && staged >= 0 && count < depth) {
      int slot = (head + count) % 2;
      if (status = executor.launch(globalStep_, result[slot]); !status)
        break;
      batchOf[slot] = staged;
      staged = -1;
      ++count;
      ++launched;
      status = fetch();
    }
    if (!status || count == 0)
      break;
    int slot = head;
    head = (head + 1) % 2;
    --count;
    if (status = executor.wait(); !status)
      break;
    status = consume(batch[batchOf[slot]], result[slot]);
  }
  // Nothing runs once this returns.
  for (; count > 0; --count)
    (void)executor.wait();
  executor.discardStaged();
  return status;
}

} // namespace graph::runtime

//===- PlanEmitter.cpp - exec programs to a plan file ---------------------===//

#include "compiler/PlanEmitter.h"

#include "dialects/exec/ExecOps.h"
#include "dialects/graph/GraphOps.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/plan/plan_generated.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
namespace fb = flatbuffers;
namespace plan = ::graph::plan;

namespace {

FailureOr<plan::DType> dtypeOf(Location loc, Type type) {
  if (type.isF32())
    return plan::DType::f32;
  if (type.isF16())
    return plan::DType::f16;
  if (type.isBF16())
    return plan::DType::bf16;
  if (type.isF64())
    return plan::DType::f64;
  if (type.isSignlessInteger(32))
    return plan::DType::i32;
  if (type.isSignlessInteger(64))
    return plan::DType::i64;
  return emitError(loc) << "the plan has no element type " << type;
}

class Emitter {
public:
  explicit Emitter(ModuleOp module) : module(module) {}

  LogicalResult emit(std::vector<uint8_t> &bytes) {
    std::vector<fb::Offset<plan::Variable>> variables;
    for (auto var : module.getOps<mlir::graph::VariableOp>()) {
      auto dtype = dtypeOf(var.getLoc(), var.getTensorType().getElementType());
      if (failed(dtype))
        return failure();
      variableIndex[var.getSymName()] = variables.size();
      mlir::graph::InitializerAttr init = var.getInitializer();
      auto initializer = plan::CreateInitializer(
          fbb, static_cast<plan::InitKind>(init.getKind()),
          init.getMean().convertToDouble(), init.getStddev().convertToDouble(),
          init.getMinval().convertToDouble(),
          init.getMaxval().convertToDouble(), init.getValue().convertToDouble(),
          init.getSeed().value_or(0), init.getSeed().has_value());
      fb::Offset<fb::Vector<int64_t>> logicalShape;
      fb::Offset<fb::Vector<int32_t>> logicalPermutation;
      if (std::optional<ArrayRef<int64_t>> shape = var.getLogicalShape()) {
        logicalShape = fbb.CreateVector(shape->vec());
        std::vector<int32_t> permutation;
        // A copy: ranging over *getLogicalPermutation() would dangle.
        ArrayRef<int64_t> axes = *var.getLogicalPermutation();
        for (int64_t axis : axes)
          permutation.push_back(static_cast<int32_t>(axis));
        logicalPermutation = fbb.CreateVector(permutation);
      }
      variables.push_back(plan::CreateVariable(
          fbb, fbb.CreateString(var.getSymName().str()),
          fbb.CreateVector(var.getTensorType().getShape().vec()), *dtype,
          initializer, var.getTrainable(), logicalShape, logicalPermutation));
    }

    auto trainings = llvm::to_vector(module.getOps<mlir::graph::TrainingOp>());
    if (trainings.size() != 1)
      return module.emitError("a plan needs exactly one graph.training, got ")
             << trainings.size();
    mlir::graph::TrainingOp training = trainings.front();

    SmallVector<exec::ProgramOp> programOps(module.getOps<exec::ProgramOp>());
    if (programOps.empty())
      return module.emitError("no exec.program to emit: run the lowering "
                              "pipeline first");
    // Inputs at the global batch: collected from every program, which must
    // agree.
    for (exec::ProgramOp program : programOps)
      if (failed(collectInputs(program)))
        return failure();
    std::vector<fb::Offset<plan::Input>> inputs;
    for (auto &entry : inputList)
      inputs.push_back(plan::CreateInput(fbb, fbb.CreateString(entry.name),
                                         fbb.CreateVector(entry.shape),
                                         entry.dtype));

    std::vector<fb::Offset<plan::Program>> programs;
    for (exec::ProgramOp program : programOps) {
      auto emitted = emitProgram(program);
      if (failed(emitted))
        return failure();
      programs.push_back(*emitted);
    }

    fb::Offset<fb::String> kerasConfig;
    if (auto config =
            module->getAttrOfType<StringAttr>(mlir::graph::kKerasConfigAttr))
      kerasConfig = fbb.CreateString(config.getValue().str());
    auto root = plan::CreatePlan(
        fbb, ::graph::runtime::kPlanVersion,
        fbb.CreateString(training.getModel().str()),
        fbb.CreateVector(variables), fbb.CreateVector(inputs),
        emitTraining(training), fbb.CreateVector(programs), kerasConfig);
    plan::FinishPlanBuffer(fbb, root);
    bytes.assign(fbb.GetBufferPointer(),
                 fbb.GetBufferPointer() + fbb.GetSize());
    // The checksum loadPlan checks before anything else.
    ::graph::runtime::appendPlanChecksum(bytes);
    return success();
  }

private:
  struct InputEntry {
    std::string name;
    std::vector<int64_t> shape;
    plan::DType dtype;
  };

  LogicalResult collectInputs(exec::ProgramOp program) {
    for (auto input : program.getBody().getOps<exec::InputOp>()) {
      MemRefType type = input.getBuffer().getType();
      std::vector<int64_t> shape = type.getShape().vec();
      if (shape.empty())
        return input.emitOpError("a batch input needs a batch dimension");
      shape[0] *= program.getReplicas();
      auto dtype = dtypeOf(input.getLoc(), type.getElementType());
      if (failed(dtype))
        return failure();
      auto [it, inserted] =
          inputIndex.try_emplace(input.getName(), inputList.size());
      if (inserted) {
        inputList.push_back({input.getName().str(), shape, *dtype});
      } else if (inputList[it->second].shape != shape) {
        return input.emitOpError("input '")
               << input.getName()
               << "' has a different global shape in another program";
      }
    }
    return success();
  }

  fb::Offset<plan::Attr> makeAttr(StringRef name, Attribute value) {
    auto key = fbb.CreateString(name.str());
    if (auto i = dyn_cast<IntegerAttr>(value))
      return plan::CreateAttr(fbb, key, plan::AttrKind::int_, i.getInt());
    if (auto b = dyn_cast<BoolAttr>(value))
      return plan::CreateAttr(fbb, key, plan::AttrKind::int_, b.getValue());
    if (isa<UnitAttr>(value))
      return plan::CreateAttr(fbb, key, plan::AttrKind::int_, 1);
    if (auto f = dyn_cast<FloatAttr>(value))
      return plan::CreateAttr(fbb, key, plan::AttrKind::float_, 0,
                              f.getValueAsDouble());
    if (auto s = dyn_cast<StringAttr>(value))
      return plan::CreateAttr(fbb, key, plan::AttrKind::string, 0, 0,
                              fbb.CreateString(s.str()));
    if (auto a = dyn_cast<DenseI64ArrayAttr>(value))
      return plan::CreateAttr(fbb, key, plan::AttrKind::ints, 0, 0, 0,
                              fbb.CreateVector(a.asArrayRef().vec()));
    if (auto a = dyn_cast<DenseF64ArrayAttr>(value))
      return plan::CreateAttr(fbb, key, plan::AttrKind::floats, 0, 0, 0, 0,
                              fbb.CreateVector(a.asArrayRef().vec()));
    if (auto a = dyn_cast<ArrayAttr>(value)) {
      std::vector<int64_t> ints;
      std::vector<double> floats;
      for (Attribute e : a) {
        if (auto i = dyn_cast<IntegerAttr>(e))
          ints.push_back(i.getInt());
        else if (auto f = dyn_cast<FloatAttr>(e))
          floats.push_back(f.getValueAsDouble());
      }
      if (floats.empty())
        return plan::CreateAttr(fbb, key, plan::AttrKind::ints, 0, 0, 0,
                                fbb.CreateVector(ints));
      return plan::CreateAttr(fbb, key, plan::AttrKind::floats, 0, 0, 0, 0,
                              fbb.CreateVector(floats));
    }
    // Anything else (an enum attribute) by its printed form.
    std::string text;
    llvm::raw_string_ostream os(text);
    value.print(os);
    return plan::CreateAttr(fbb, key, plan::AttrKind::string, 0, 0,
                            fbb.CreateString(text));
  }

  /// An optimizer attribute as its kind plus one float entry per
  /// hyper-parameter (booleans as 0/1).
  std::pair<plan::OptimizerKind, std::vector<fb::Offset<plan::Attr>>>
  optimizerAttrs(Attribute optimizer) {
    std::vector<fb::Offset<plan::Attr>> attrs;
    auto add = [&](StringRef name, double value) {
      attrs.push_back(plan::CreateAttr(fbb, fbb.CreateString(name.str()),
                                       plan::AttrKind::float_, 0, value));
    };
    // Clipping and weight decay, whichever optimizer: 0 is off, and only
    // what is on is written, so plans without them read as before.
    mlir::graph::OptimizerOptions options =
        mlir::graph::getOptimizerOptions(optimizer);
    for (auto [name, value] :
         {std::pair<StringRef, double>{"clipnorm", options.clipnorm},
          {"global_clipnorm", options.globalClipnorm},
          {"clipvalue", options.clipvalue},
          {"weight_decay", options.weightDecay},
          {"gradient_accumulation_steps",
           static_cast<double>(options.gradientAccumulationSteps)}})
      if (value != 0)
        add(name, value);
    // A learning-rate schedule: its kind (runtime LearningRateSchedule::Kind)
    // and parameters, evaluated by the update kernel every step.
    if (Attribute schedule = options.schedule) {
      auto addList = [&](StringRef name, ArrayRef<double> values) {
        attrs.push_back(plan::CreateAttr(
            fbb, fbb.CreateString(name.str()), plan::AttrKind::floats, 0, 0, 0,
            0, fbb.CreateVector(values.data(), values.size())));
      };
      if (auto e = dyn_cast<mlir::graph::ExponentialDecayAttr>(schedule)) {
        add("lr_schedule", 1);
        add("lr_decay_steps", e.getDecaySteps().convertToDouble());
        add("lr_decay_rate", e.getDecayRate().convertToDouble());
        add("lr_staircase", e.getStaircase());
      } else if (auto i =
                     dyn_cast<mlir::graph::InverseTimeDecayAttr>(schedule)) {
        add("lr_schedule", 2);
        add("lr_decay_steps", i.getDecaySteps().convertToDouble());
        add("lr_decay_rate", i.getDecayRate().convertToDouble());
        add("lr_staircase", i.getStaircase());
      } else if (auto pc = dyn_cast<mlir::graph::PiecewiseConstantDecayAttr>(
                     schedule)) {
        add("lr_schedule", 3);
        addList("lr_boundaries", pc.getBoundaries().asArrayRef());
        addList("lr_values", pc.getValues().asArrayRef());
      } else if (auto p =
                     dyn_cast<mlir::graph::PolynomialDecayAttr>(schedule)) {
        add("lr_schedule", 4);
        add("lr_decay_steps", p.getDecaySteps().convertToDouble());
        add("lr_end_learning_rate", p.getEndLearningRate().convertToDouble());
        add("lr_power", p.getPower().convertToDouble());
        add("lr_cycle", p.getCycle());
      } else if (auto r =
                     dyn_cast<mlir::graph::CosineDecayRestartsAttr>(schedule)) {
        add("lr_schedule", 6);
        add("lr_decay_steps", r.getFirstDecaySteps().convertToDouble());
        add("lr_t_mul", r.getTMul().convertToDouble());
        add("lr_m_mul", r.getMMul().convertToDouble());
        add("lr_alpha", r.getAlpha().convertToDouble());
      } else {
        auto c = cast<mlir::graph::CosineDecayAttr>(schedule);
        add("lr_schedule", 5);
        add("lr_decay_steps", c.getDecaySteps().convertToDouble());
        add("lr_alpha", c.getAlpha().convertToDouble());
        add("lr_warmup_target", c.getWarmupTarget().convertToDouble());
        add("lr_warmup_steps", c.getWarmupSteps().convertToDouble());
      }
    }
    if (auto sgd = dyn_cast<mlir::graph::SGDAttr>(optimizer)) {
      add("learning_rate", sgd.getLearningRate().convertToDouble());
      add("momentum", sgd.getMomentum().convertToDouble());
      add("nesterov", sgd.getNesterov());
      return {plan::OptimizerKind::sgd, attrs};
    }
    if (auto adam = dyn_cast<mlir::graph::AdamAttr>(optimizer)) {
      add("learning_rate", adam.getLearningRate().convertToDouble());
      add("beta_1", adam.getBeta_1().convertToDouble());
      add("beta_2", adam.getBeta_2().convertToDouble());
      add("epsilon", adam.getEpsilon().convertToDouble());
      add("amsgrad", adam.getAmsgrad());
      return {plan::OptimizerKind::adam, attrs};
    }
    if (auto adagrad = dyn_cast<mlir::graph::AdagradAttr>(optimizer)) {
      add("learning_rate", adagrad.getLearningRate().convertToDouble());
      add("initial_accumulator_value",
          adagrad.getInitialAccumulatorValue().convertToDouble());
      add("epsilon", adagrad.getEpsilon().convertToDouble());
      return {plan::OptimizerKind::adagrad, attrs};
    }
    if (auto adamax = dyn_cast<mlir::graph::AdamaxAttr>(optimizer)) {
      add("learning_rate", adamax.getLearningRate().convertToDouble());
      add("beta_1", adamax.getBeta_1().convertToDouble());
      add("beta_2", adamax.getBeta_2().convertToDouble());
      add("epsilon", adamax.getEpsilon().convertToDouble());
      return {plan::OptimizerKind::adamax, attrs};
    }
    if (auto nadam = dyn_cast<mlir::graph::NadamAttr>(optimizer)) {
      add("learning_rate", nadam.getLearningRate().convertToDouble());
      add("beta_1", nadam.getBeta_1().convertToDouble());
      add("beta_2", nadam.getBeta_2().convertToDouble());
      add("epsilon", nadam.getEpsilon().convertToDouble());
      return {plan::OptimizerKind::nadam, attrs};
    }
    auto rms = cast<mlir::graph::RMSpropAttr>(optimizer);
    add("learning_rate", rms.getLearningRate().convertToDouble());
    add("rho", rms.getRho().convertToDouble());
    add("momentum", rms.getMomentum().convertToDouble());
    add("epsilon", rms.getEpsilon().convertToDouble());
    add("centered", rms.getCentered());
    return {plan::OptimizerKind::rmsprop, attrs};
  }

  fb::Offset<plan::Training> emitTraining(mlir::graph::TrainingOp training) {
    auto [kind, hyper] = optimizerAttrs(training.getOptimizer());
    // Keras' use_ema: the runtime replaces the variables with their averages
    // (slots `<var>/average`) when training ends.
    if (std::optional<llvm::APFloat> momentum = training.getEmaMomentum()) {
      auto add = [&](StringRef name, double value) {
        hyper.push_back(plan::CreateAttr(fbb, fbb.CreateString(name.str()),
                                         plan::AttrKind::float_, 0, value));
      };
      add("use_ema", 1);
      add("ema_momentum", momentum->convertToDouble());
      add("ema_overwrite_frequency",
          static_cast<double>(training.getEmaOverwriteFrequency().value_or(0)));
    }
    // Keras' LossScaleOptimizer given to compile: the Keras files graphrun
    // writes keep its layout (the growth steps live in the graph's
    // loss_scale_update and in the model's Keras config).
    if (std::optional<llvm::APFloat> scale = training.getLossScale())
      hyper.push_back(plan::CreateAttr(fbb, fbb.CreateString("loss_scale"),
                                       plan::AttrKind::float_, 0,
                                       scale->convertToDouble()));
    // Keras' reduction="sum": an epoch's short batch sums its examples'
    // losses as they are (the runtime does not scale their weights). The
    // verifier has made the outputs agree on it.
    SmallVector<mlir::graph::OutputLossAttr> losses = training.getLossList();
    if (losses.front().getSumReduction())
      hyper.push_back(plan::CreateAttr(fbb, fbb.CreateString("reduction_sum"),
                                       plan::AttrKind::float_, 0, 1.0));
    auto model = SymbolTable::lookupNearestSymbolFrom<mlir::graph::ModelOp>(
        training, training.getModelAttr());
    ArrayAttr names = model ? model.getOutputOp().getNamesAttr() : ArrayAttr();
    std::vector<fb::Offset<fb::String>> metrics;
    std::vector<fb::Offset<plan::Metric>> specs;
    for (const mlir::graph::LoggedValue &value :
         mlir::graph::loggedValues(training, names)) {
      if (value.output < 0)
        continue; // the loss
      metrics.push_back(fbb.CreateString(value.name));
      specs.push_back(plan::CreateMetric(
          fbb, fbb.CreateString(value.name), metricReduction(value.metric),
          curveOf(value.metric), summationOf(value.metric)));
    }
    std::vector<fb::Offset<plan::Output>> outputs;
    for (auto [i, loss] : llvm::enumerate(losses)) {
      std::string name, labels = "labels", predictions = "predictions";
      if (losses.size() > 1) {
        name = cast<StringAttr>(names[i]).getValue().str();
        labels += ":" + name;
        predictions += ":" + name;
      }
      std::optional<int64_t> ignore = loss.getIgnoreClass();
      outputs.push_back(plan::CreateOutput(
          fbb, name.empty() ? 0 : fbb.CreateString(name),
          static_cast<plan::LossKind>(loss.getKind()), loss.getFromLogits(),
          fbb.CreateString(labels), fbb.CreateString(predictions),
          ignore.value_or(0), ignore.has_value()));
    }
    return plan::CreateTraining(
        fbb, static_cast<plan::LossKind>(losses.front().getKind()),
        losses.front().getFromLogits(), kind, fbb.CreateVector(hyper),
        fbb.CreateVector(metrics), training.getGlobalBatchSize(),
        fbb.CreateVector(specs), fbb.CreateVector(outputs));
  }

  /// How the runtime makes `metric`'s logged value (null: a loss, a mean).
  static plan::MetricReduction metricReduction(mlir::graph::MetricAttr metric) {
    using K = mlir::graph::MetricKind;
    if (!metric)
      return plan::MetricReduction::mean;
    switch (metric.getKind()) {
    case K::root_mean_squared_error:
      return plan::MetricReduction::root_mean;
    case K::precision:
      return plan::MetricReduction::precision;
    case K::recall:
      return plan::MetricReduction::recall;
    case K::auc:
      return plan::MetricReduction::auc;
    default:
      return plan::MetricReduction::mean;
    }
  }
  static plan::AucCurve curveOf(mlir::graph::MetricAttr metric) {
    return metric && metric.getCurve() == mlir::graph::AucCurve::pr
               ? plan::AucCurve::pr
               : plan::AucCurve::roc;
  }
  static plan::AucSummation summationOf(mlir::graph::MetricAttr metric) {
    if (!metric)
      return plan::AucSummation::interpolation;
    return static_cast<plan::AucSummation>(metric.getSummation());
  }

  plan::StreamKind streamKind(exec::StreamKind kind) {
    return static_cast<plan::StreamKind>(kind);
  }

  FailureOr<fb::Offset<plan::Program>> emitProgram(exec::ProgramOp program) {
    if (!program.getArenaBytes())
      return program.emitOpError("has no arena sizes: run exec-plan-memory");
    llvm::DenseMap<Value, int32_t> bufferIndex;
    llvm::DenseMap<Value, int32_t> eventIndex;
    std::vector<fb::Offset<plan::Buffer>> buffers;
    std::vector<fb::Offset<plan::Op>> ops;

    auto indices = [&](ValueRange values) {
      std::vector<int32_t> out;
      for (Value v : values)
        out.push_back(bufferIndex.lookup(v));
      return fbb.CreateVector(out);
    };
    auto addBuffer = [&](Value value, plan::BufferKind kind, int64_t device,
                         int64_t offset, int32_t variable, int32_t input,
                         int32_t replica, int32_t source) -> LogicalResult {
      auto type = cast<MemRefType>(value.getType());
      auto dtype = dtypeOf(value.getLoc(), type.getElementType());
      if (failed(dtype))
        return failure();
      bufferIndex[value] = buffers.size();
      buffers.push_back(plan::CreateBuffer(
          fbb, kind, device, fbb.CreateVector(type.getShape().vec()), *dtype,
          offset, variable, input, replica, source));
      return success();
    };

    for (Operation &op : program.getBody().front()) {
      LogicalResult result = success();
      if (auto alloc = dyn_cast<exec::AllocOp>(op)) {
        if (!alloc.getOffset())
          return alloc.emitOpError("has no offset: run exec-plan-memory");
        result =
            addBuffer(alloc.getBuffer(), plan::BufferKind::arena,
                      alloc.getDevice(), *alloc.getOffset(), -1, -1, -1, -1);
      } else if (auto var = dyn_cast<exec::VariableOp>(op)) {
        auto it = variableIndex.find(var.getVariable());
        if (it == variableIndex.end())
          return var.emitOpError("names no graph.variable");
        result = addBuffer(var.getBuffer(), plan::BufferKind::variable,
                           var.getDevice(), 0, it->second, -1, -1, -1);
      } else if (auto input = dyn_cast<exec::InputOp>(op)) {
        result = addBuffer(
            input.getBuffer(), plan::BufferKind::input, input.getDevice(), 0,
            -1, inputIndex.lookup(input.getName()), input.getReplica(), -1);
      } else if (auto view = dyn_cast<exec::ViewOp>(op)) {
        std::optional<int64_t> device = exec::getBufferDevice(view.getSource());
        result = addBuffer(view.getBuffer(), plan::BufferKind::view,
                           device.value_or(0), view.getOffset(), -1, -1, -1,
                           bufferIndex.lookup(view.getSource()));
      } else if (auto launch = dyn_cast<exec::LaunchOp>(op)) {
        std::vector<fb::Offset<plan::Attr>> config;
        for (NamedAttribute entry : launch.getConfig()) {
          if (entry.getName() == "optimizer") {
            auto [kind, hyper] = optimizerAttrs(entry.getValue());
            config.push_back(plan::CreateAttr(
                fbb, fbb.CreateString("optimizer"), plan::AttrKind::string, 0,
                0, fbb.CreateString(plan::EnumNameOptimizerKind(kind))));
            config.insert(config.end(), hyper.begin(), hyper.end());
            continue;
          }
          config.push_back(makeAttr(entry.getName(), entry.getValue()));
        }
        exec::StreamAttr stream = launch.getStream();
        ops.push_back(plan::CreateOp(
            fbb, plan::OpKind::launch, streamKind(stream.getKind()),
            stream.getDevice(), fbb.CreateString(launch.getKernel().str()),
            indices(launch.getIns()), indices(launch.getOuts()),
            fbb.CreateVector(config)));
      } else if (auto reduce = dyn_cast<exec::AllReduceOp>(op)) {
        ops.push_back(plan::CreateOp(
            fbb, plan::OpKind::all_reduce, plan::StreamKind::comm, -1, 0,
            indices(reduce.getBuffers()), 0, 0, -1, 0, -1, reduce.getBucket(),
            fbb.CreateString(reduce.getReduction().str())));
      } else if (auto copy = dyn_cast<exec::CopyOp>(op)) {
        ops.push_back(plan::CreateOp(
            fbb, plan::OpKind::copy, streamKind(copy.getStream().getKind()),
            copy.getStream().getDevice(), 0, indices(copy.getSource()),
            indices(copy.getTarget())));
      } else if (auto record = dyn_cast<exec::RecordOp>(op)) {
        int32_t event = eventIndex.size();
        eventIndex[record.getEvent()] = event;
        ops.push_back(plan::CreateOp(
            fbb, plan::OpKind::record, streamKind(record.getStream().getKind()),
            record.getStream().getDevice(), 0, 0, 0, 0, event));
      } else if (auto wait = dyn_cast<exec::WaitOp>(op)) {
        auto it = eventIndex.find(wait.getEvent());
        if (it == eventIndex.end())
          return wait.emitOpError("waits for an event recorded later");
        ops.push_back(plan::CreateOp(
            fbb, plan::OpKind::wait, streamKind(wait.getStream().getKind()),
            wait.getStream().getDevice(), 0, 0, 0, 0, it->second));
      } else if (auto stamp = dyn_cast<exec::TimestampOp>(op)) {
        ops.push_back(plan::CreateOp(fbb, plan::OpKind::timestamp,
                                     streamKind(stamp.getStream().getKind()),
                                     stamp.getStream().getDevice(), 0, 0, 0, 0,
                                     -1,
                                     fbb.CreateString(stamp.getName().str())));
      } else if (auto output = dyn_cast<exec::OutputOp>(op)) {
        std::optional<int64_t> device =
            exec::getBufferDevice(output.getValue());
        ops.push_back(plan::CreateOp(
            fbb, plan::OpKind::output, plan::StreamKind::compute,
            device.value_or(output.getReplica()), 0, indices(output.getValue()),
            0, 0, -1, fbb.CreateString(output.getName().str()),
            output.getReplica()));
      } else {
        return op.emitOpError("cannot be written to a plan");
      }
      if (failed(result))
        return failure();
    }
    return plan::CreateProgram(
        fbb, fbb.CreateString(program.getSymName().str()),
        static_cast<plan::ProgramKind>(program.getKind()),
        program.getReplicas(), fbb.CreateVector(buffers), fbb.CreateVector(ops),
        eventIndex.size(), fbb.CreateVector(program.getArenaBytes()->vec()));
  }

  ModuleOp module;
  fb::FlatBufferBuilder fbb;
  llvm::StringMap<int32_t> variableIndex;
  llvm::StringMap<int32_t> inputIndex;
  std::vector<InputEntry> inputList;
};

} // namespace

LogicalResult mlir::graphc::emitPlan(ModuleOp module,
                                     std::vector<uint8_t> &bytes) {
  return Emitter(module).emit(bytes);
}

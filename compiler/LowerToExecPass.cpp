//===- LowerToExecPass.cpp - replicated steps to exec programs ------------===//
//
// `graph.model @train_step` / `@eval_step` (replicated, all-reduces inserted)
// become `exec.program @train` / `@eval`. Every tensor value gets a buffer:
// an `exec.input`, an `exec.variable` (one per variable and device), a view
// into an all-reduce bucket, or an `exec.alloc` placed right before the launch
// that writes it (so the memory planner sees it live from its first write).
// Every other op becomes an `exec.launch` on its device's compute stream.
//
// Overlap of the all-reduce with backward: each bucket's gradients are
// written in place into views of the bucket. At replica r's `dist.pack` (right
// after the bucket's last producer) <compute, r> records an event; at the
// `dist.all_reduce` <comm, r> waits for it, the comm streams reduce, and they
// record the event <compute, r> waits on only right before its first op that
// touches the bucket again (the optimizer update). So the rest of backward
// runs while the bucket is reduced, on every replica. Both placements
// matter, since replica 0's backward precedes replica 1's in program order:
// recording at the all-reduce would make the event mark the end of replica
// 0's whole backward, and waiting at the pack would queue every bucket's
// wait on <comm, 0> ahead of the first reduction, which then starts only
// after replica 0's last bucket.
//
//===----------------------------------------------------------------------===//

#include "compiler/ElementwiseBodyEncoding.h"
#include "compiler/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <charconv>

namespace mlir::graphc {
#define GEN_PASS_DEF_LOWERTOEXEC
#include "compiler/Passes.h.inc"
} // namespace mlir::graphc

using namespace mlir;

namespace {
/// Where a gradient lives inside an all-reduce bucket.
struct BucketSlot {
  dist::PackOp pack;
  int64_t offset; // in elements
};

using VariableKey = std::pair<StringAttr, int64_t>; // (variable, device)

/// A variable written at the end of the step by a copy, because the value
/// could not be computed in place.
struct DeferredAssign {
  graph::AssignVariableOp assign;
  int64_t device;
};
} // namespace

/// The memref a tensor lowers to: same shape and element type.
static MemRefType bufferType(Type tensor) {
  auto ranked = cast<RankedTensorType>(tensor);
  return MemRefType::get(ranked.getShape(), ranked.getElementType());
}

/// The alloc, variable or input a buffer is (through views).
static Value rootBuffer(Value buffer) {
  while (auto view = buffer.getDefiningOp<exec::ViewOp>())
    buffer = view.getSource();
  return buffer;
}

/// Whether `op` becomes an exec.launch (rather than a buffer or a collective).
static bool isLaunched(Operation *op) {
  return isa_and_nonnull<graph::GraphDialect>(op->getDialect()) &&
         !isa<graph::InputOp, graph::ReadVariableOp, graph::AssignVariableOp,
              graph::OutputOp>(op);
}

/// Ops whose lowering reads their operands at the end of the step wherever
/// they stand: outputs, and assignments (copies at the end when not in place).
static bool readsAtStepEnd(Operation *op) {
  return isa<graph::AssignVariableOp, graph::OutputOp>(op);
}

/// Kernels that read a variable and write its new value in the same buffer
/// element by element, so their outs may alias their ins.
static bool updatesInPlace(Operation *op) {
  return isa<graph::OptimizerUpdateOp, graph::BatchNormTrainOp>(op);
}

/// An attribute as the runtime reads it in a launch's config: enums become
/// their names, everything else stays as it is.
static Attribute configValue(Attribute attr) {
  MLIRContext *ctx = attr.getContext();
  if (auto padding = dyn_cast<graph::PaddingAttr>(attr))
    return StringAttr::get(ctx, graph::stringifyPadding(padding.getValue()));
  if (auto activation = dyn_cast<graph::EpilogueActivationAttr>(attr))
    return StringAttr::get(
        ctx, graph::stringifyEpilogueActivation(activation.getValue()));
  if (auto layout = dyn_cast<graph::FilterLayoutAttr>(attr))
    return StringAttr::get(ctx,
                           graph::stringifyFilterLayout(layout.getValue()));
  if (auto loss = dyn_cast<graph::LossKindAttr>(attr))
    return StringAttr::get(ctx, graph::stringifyLossKind(loss.getValue()));
  return attr;
}

/// Whether `op` is a convolution (or its gradient) with groups = 1.
static bool isUngroupedConvolution(Operation *op) {
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case<graph::Conv2DOp, graph::Conv2DGradInputOp,
            graph::Conv2DGradKernelOp, graph::FusedConv2DOp,
            graph::FusedConv2DPoolOp, graph::FusedConv2DPoolGradKernelOp>(
          [](auto conv) { return conv.getGroups() == 1; })
      .Default([](Operation *) { return false; });
}

/// The op's attributes without the ones that only describe the IR (operand
/// segments, placement).
static SmallVector<NamedAttribute> kernelAttributes(Operation *op) {
  SmallVector<NamedAttribute> attrs;
  for (NamedAttribute attr : op->getAttrs()) {
    StringRef name = attr.getName().getValue();
    if (name == dist::DistDialect::kDeviceAttrName ||
        name == "operandSegmentSizes" || name == "resultSegmentSizes")
      continue;
    // A convolution's groups only when grouped (the kernels default to 1),
    // so the plans of ungrouped models stay as they were.
    if (name == "groups" && isUngroupedConvolution(op))
      continue;
    // Likewise its filter layout only when not Keras' HWIO.
    if (auto layout = dyn_cast<graph::FilterLayoutAttr>(attr.getValue());
        layout && layout.getValue() == graph::FilterLayout::hwio)
      continue;
    attrs.emplace_back(attr.getName(), configValue(attr.getValue()));
  }
  // A batch norm's gamma and beta are both optional: with four inputs the
  // kernel could not tell which one it has (Keras center without scale).
  auto scaleAndShift = [&](Value gamma, Value beta) {
    Builder b(op->getContext());
    attrs.emplace_back(b.getStringAttr("has_gamma"),
                       b.getI64IntegerAttr(gamma != nullptr));
    attrs.emplace_back(b.getStringAttr("has_beta"),
                       b.getI64IntegerAttr(beta != nullptr));
  };
  if (auto bn = dyn_cast<graph::BatchNormOp>(op))
    scaleAndShift(bn.getGamma(), bn.getBeta());
  // A batch norm's row mask comes last, after gamma and beta: said only
  // when there, so that the plans of unmasked ones stay as they were.
  auto rowMask = [&](Value mask) {
    if (!mask)
      return;
    Builder b(op->getContext());
    attrs.emplace_back(b.getStringAttr("has_row_mask"), b.getI64IntegerAttr(1));
  };
  if (auto bn = dyn_cast<graph::BatchNormTrainOp>(op)) {
    scaleAndShift(bn.getGamma(), bn.getBeta());
    rowMask(bn.getRowMask());
  }
  // batch_norm_grad's gamma is told apart from its row mask.
  if (auto grad = dyn_cast<graph::BatchNormGradOp>(op);
      grad && grad.getRowMask()) {
    Builder b(op->getContext());
    attrs.emplace_back(b.getStringAttr("has_gamma"),
                       b.getI64IntegerAttr(grad.getGamma() != nullptr));
    rowMask(grad.getRowMask());
  }
  if (auto ln = dyn_cast<graph::LayerNormOp>(op))
    scaleAndShift(ln.getGamma(), ln.getBeta());
  // Its ins end with (scale, norm, iterations) under loss scaling.
  if (auto update = dyn_cast<graph::OptimizerUpdateOp>(op);
      update && !update.getLossScale().empty()) {
    Builder b(op->getContext());
    attrs.emplace_back(b.getStringAttr("loss_scaled"), b.getI64IntegerAttr(1));
  }
  return attrs;
}

/// A config literal of the elementwise body encoding (see
/// encodeElementwiseBody).
static std::string bodyLiteral(Attribute attr) {
  if (auto f = dyn_cast<FloatAttr>(attr)) {
    // Shortest text that reads back as the same double.
    char text[32];
    auto [end, error] =
        std::to_chars(std::begin(text), std::end(text), f.getValueAsDouble());
    return std::string(text, end);
  }
  if (auto b = dyn_cast<BoolAttr>(attr))
    return b.getValue() ? "true" : "false";
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return std::to_string(i.getInt());
  if (isa<UnitAttr>(attr))
    return "true";
  if (auto s = dyn_cast<StringAttr>(attr))
    return s.getValue().str();
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

/// Encodes a graph.elementwise body as one string, which the runtime's
/// elementwise kernel interprets per element:
///
///   body  := stmt ('; ' stmt)*
///   stmt  := op '(' value (', ' value)* ')' attrs? ' -> t' N
///          | 'yield ' value
///   attrs := ' {' name '=' literal (', ' name '=' literal)* '}'
///   value := 'a' N        (element of the launch's in #N)
///          | 't' N        (result of statement #N)
///
/// `op` is the graph op's name without `graph.` (`relu_grad`, `add`, ...);
/// literals are integers, floats in shortest round-trip form (`0.2`), `true`
/// or `false` (unit attributes print `true`) and enum names. Example:
/// "relu_grad(a0, a1) -> t0; add(t0, a2) -> t1; yield t1".
FailureOr<std::string> graphc::encodeElementwiseBody(graph::ElementwiseOp op) {
  Block &body = op.getBody().front();
  llvm::DenseMap<Value, std::string> names;
  for (BlockArgument arg : body.getArguments())
    names[arg] = ("a" + Twine(arg.getArgNumber())).str();
  std::string text;
  llvm::raw_string_ostream os(text);
  unsigned next = 0;
  for (Operation &inner : body) {
    if (!text.empty())
      os << "; ";
    if (auto yield = dyn_cast<graph::YieldOp>(inner)) {
      os << "yield " << names[yield.getValue()];
      continue;
    }
    if (inner.getNumResults() != 1)
      return inner.emitOpError(
          "needs exactly one result inside a graph.elementwise body");
    os << inner.getName().stripDialect() << "(";
    llvm::interleaveComma(inner.getOperands(), os,
                          [&](Value v) { os << names[v]; });
    os << ")";
    SmallVector<NamedAttribute> attrs = kernelAttributes(&inner);
    if (!attrs.empty()) {
      os << " {";
      llvm::interleaveComma(attrs, os, [&](NamedAttribute attr) {
        os << attr.getName().getValue() << "=" << bodyLiteral(attr.getValue());
      });
      os << "}";
    }
    std::string result = ("t" + Twine(next++)).str();
    os << " -> " << result;
    names[inner.getResult(0)] = result;
  }
  return text;
}

namespace {
/// Lowers one step model into one (empty, given) exec.program.
class StepLowering {
public:
  StepLowering(graph::ModelOp model, exec::ProgramOp program, int64_t replicas,
               ArrayRef<std::string> outputNames)
      : model(model), program(program), replicas(replicas),
        outputNames(outputNames), builder(program.getContext()) {}

  LogicalResult run();

private:
  LogicalResult checkPlacement();
  void planBuckets();
  void planInPlaceAssigns();

  LogicalResult lower(Operation *op);
  LogicalResult lowerLaunch(Operation *op);
  LogicalResult lowerPack(dist::PackOp pack);
  LogicalResult lowerAllReduce(dist::AllReduceOp allReduce);
  LogicalResult lowerUnpack(dist::UnpackOp unpack);
  LogicalResult lowerReshape(Operation *reshape);
  LogicalResult lowerAssign(graph::AssignVariableOp assign);
  LogicalResult lowerOutput(graph::OutputOp output);

  int64_t deviceOf(Operation *op) { return dist::getReplica(op).value_or(0); }
  exec::StreamAttr stream(exec::StreamKind kind, int64_t device) {
    return exec::StreamAttr::get(builder.getContext(), kind, device);
  }
  Value getVariable(FlatSymbolRefAttr variable, int64_t device, Type tensor,
                    Location loc);
  Value getBucket(dist::PackOp pack);
  Value resultBuffer(OpResult result, int64_t device);
  /// Emits the waits a compute op of `device` touching `buffers` needs: the
  /// end of the all-reduce of any bucket among them.
  void waitForReductions(int64_t device, ValueRange buffers);
  /// Lets <comm, device> start on `buffer` once <compute, device> has
  /// written it: a record on compute and a wait on comm.
  void handToComm(Value buffer, int64_t device, Location loc);

  graph::ModelOp model;
  exec::ProgramOp program;
  int64_t replicas;
  ArrayRef<std::string> outputNames;
  OpBuilder builder;

  llvm::DenseMap<Value, Value> buffers; // tensor -> buffer
  llvm::DenseMap<VariableKey, Value> variables;
  llvm::DenseMap<Value, BucketSlot> bucketSlots; // gradient written in place
  llvm::DenseMap<Operation *, Value> buckets;    // pack -> its alloc
  llvm::DenseMap<Value, FlatSymbolRefAttr> inPlaceAssigns;
  llvm::DenseSet<Operation *> elidedAssigns;
  SmallVector<DeferredAssign> deferredAssigns;
  /// Bucket alloc -> the comm stream's event its reduction ends with, until
  /// the compute stream has waited for it.
  llvm::DenseMap<Value, Value> pendingReductions;
  /// Buffers the comm stream may reduce: the event compute recorded once it
  /// was done with them, which the comm stream waits for at the all-reduce.
  llvm::DenseMap<Value, Value> handedToComm;
  int64_t nextBucket = 0;
};

LogicalResult StepLowering::checkPlacement() {
  for (Operation &op : model.getBlock()) {
    if (isa<dist::AllReduceOp, graph::OutputOp>(op))
      continue;
    std::optional<int64_t> device = dist::getReplica(&op);
    if (!device) {
      if (replicas > 1)
        return op.emitOpError("is not placed on a device (dist.device) in a "
                              "model of ")
               << replicas << " replicas";
      continue;
    }
    if (*device < 0 || *device >= replicas)
      return op.emitOpError("is placed on device ")
             << *device << ", outside the model's " << replicas
             << " replica(s)";
  }
  return success();
}

/// Gradients go straight into their bucket when nothing reads them after the
/// reduction has started (the reduction overwrites them in place).
void StepLowering::planBuckets() {
  for (auto pack : model.getBlock().getOps<dist::PackOp>()) {
    Operation *reduction = nullptr;
    for (Operation *user : pack->getUsers())
      if (isa<dist::AllReduceOp>(user))
        reduction = user;
    int64_t offset = 0;
    for (Value gradient : pack.getInputs()) {
      int64_t elements =
          cast<RankedTensorType>(gradient.getType()).getNumElements();
      Operation *producer = gradient.getDefiningOp();
      bool inPlace = producer && isLaunched(producer) &&
                     !bucketSlots.count(gradient) &&
                     deviceOf(producer) == deviceOf(pack);
      for (Operation *user : gradient.getUsers())
        if (user != pack.getOperation() && reduction &&
            (readsAtStepEnd(user) || !user->isBeforeInBlock(reduction)))
          inPlace = false;
      if (inPlace)
        bucketSlots[gradient] = {pack, offset};
      offset += elements;
    }
  }
}

/// A new variable value is computed straight into the variable's buffer when
/// its producer is the last op to read the variable and the only one to
/// write it; otherwise it is copied in at the end of the step.
void StepLowering::planInPlaceAssigns() {
  llvm::MapVector<VariableKey, SmallVector<graph::AssignVariableOp>> assigns;
  llvm::DenseMap<VariableKey, SmallVector<Operation *>> readers;
  for (Operation &op : model.getBlock()) {
    if (auto assign = dyn_cast<graph::AssignVariableOp>(op))
      assigns[{assign.getVariableAttr().getAttr(), deviceOf(assign)}].push_back(
          assign);
    if (auto read = dyn_cast<graph::ReadVariableOp>(op))
      for (Operation *user : read->getUsers())
        readers[{read.getVariableAttr().getAttr(), deviceOf(read)}].push_back(
            user);
  }
  for (auto &[key, list] : assigns) {
    for (graph::AssignVariableOp assign : list) {
      Value value = assign.getValue();
      if (auto read = value.getDefiningOp<graph::ReadVariableOp>();
          read && read.getVariableAttr().getAttr() == key.first &&
          deviceOf(read) == key.second) {
        elidedAssigns.insert(assign); // writes the value it already has
        continue;
      }
      Operation *producer = value.getDefiningOp();
      bool inPlace = list.size() == 1 && producer && isLaunched(producer) &&
                     deviceOf(producer) == key.second &&
                     !bucketSlots.count(value) && !inPlaceAssigns.count(value);
      for (Operation *reader : readers.lookup(key)) {
        if (reader == producer
                ? !updatesInPlace(producer)
                : readsAtStepEnd(reader) || !reader->isBeforeInBlock(producer))
          inPlace = false;
      }
      if (inPlace) {
        inPlaceAssigns[value] = assign.getVariableAttr();
        elidedAssigns.insert(assign);
      }
    }
  }
}

Value StepLowering::getVariable(FlatSymbolRefAttr variable, int64_t device,
                                Type tensor, Location loc) {
  Value &buffer = variables[{variable.getAttr(), device}];
  if (!buffer)
    buffer =
        exec::VariableOp::create(builder, loc, bufferType(tensor), variable,
                                 builder.getI64IntegerAttr(device));
  return buffer;
}

Value StepLowering::getBucket(dist::PackOp pack) {
  Value &bucket = buckets[pack];
  if (!bucket)
    bucket = exec::AllocOp::create(builder, pack.getLoc(),
                                   bufferType(pack.getBucket().getType()),
                                   IntegerAttr(), deviceOf(pack));
  return bucket;
}

Value StepLowering::resultBuffer(OpResult result, int64_t device) {
  Location loc = result.getOwner()->getLoc();
  MemRefType type = bufferType(result.getType());
  if (auto it = bucketSlots.find(result); it != bucketSlots.end())
    return exec::ViewOp::create(builder, loc, type, getBucket(it->second.pack),
                                it->second.offset);
  if (FlatSymbolRefAttr variable = inPlaceAssigns.lookup(result))
    return getVariable(variable, device, result.getType(), loc);
  return exec::AllocOp::create(builder, loc, type, IntegerAttr(), device);
}

void StepLowering::waitForReductions(int64_t device, ValueRange touched) {
  for (Value buffer : touched) {
    auto it = pendingReductions.find(rootBuffer(buffer));
    if (it == pendingReductions.end())
      continue;
    exec::WaitOp::create(builder, buffer.getLoc(), it->second,
                         stream(exec::StreamKind::compute, device));
    pendingReductions.erase(it);
  }
}

void StepLowering::handToComm(Value buffer, int64_t device, Location loc) {
  waitForReductions(device, buffer);
  handedToComm[rootBuffer(buffer)] = exec::RecordOp::create(
      builder, loc, stream(exec::StreamKind::compute, device));
}

LogicalResult StepLowering::lowerLaunch(Operation *op) {
  int64_t device = deviceOf(op);
  SmallVector<Value> ins, outs;
  for (Value operand : op->getOperands())
    ins.push_back(buffers.lookup(operand));
  for (OpResult result : op->getResults()) {
    outs.push_back(resultBuffer(result, device));
    buffers[result] = outs.back();
  }
  SmallVector<NamedAttribute> config;
  if (auto elementwise = dyn_cast<graph::ElementwiseOp>(op)) {
    FailureOr<std::string> body = graphc::encodeElementwiseBody(elementwise);
    if (failed(body))
      return failure();
    config.push_back(
        builder.getNamedAttr("body", builder.getStringAttr(*body)));
  } else if (op->getNumRegions()) {
    return op->emitOpError("has a region graph-lower-to-exec cannot lower");
  } else {
    config = kernelAttributes(op);
  }
  SmallVector<Value> touched(ins);
  touched.append(outs);
  waitForReductions(device, touched);
  exec::LaunchOp::create(builder, op->getLoc(), op->getName().stripDialect(),
                         stream(exec::StreamKind::compute, device), ins, outs,
                         builder.getDictionaryAttr(config));
  return success();
}

LogicalResult StepLowering::lowerPack(dist::PackOp pack) {
  int64_t device = deviceOf(pack);
  Value bucket = getBucket(pack);
  int64_t offset = 0;
  for (Value gradient : pack.getInputs()) {
    auto type = cast<RankedTensorType>(gradient.getType());
    auto slot = bucketSlots.find(gradient);
    if (slot == bucketSlots.end() || slot->second.pack != pack ||
        slot->second.offset != offset) {
      // Not written in place (an input, a variable, a value read after the
      // reduction starts): copied into its slot.
      Value view = exec::ViewOp::create(builder, pack.getLoc(),
                                        bufferType(type), bucket, offset);
      Value source = buffers.lookup(gradient);
      waitForReductions(device, {source, view});
      exec::CopyOp::create(builder, pack.getLoc(),
                           stream(exec::StreamKind::compute, device), source,
                           view);
    }
    offset += type.getNumElements();
  }
  buffers[pack.getBucket()] = bucket;
  // The compute stream marks the bucket filled here, not at the all-reduce,
  // which comes after the other replicas' backward in program order.
  if (llvm::any_of(pack->getUsers(), llvm::IsaPred<dist::AllReduceOp>))
    handToComm(bucket, device, pack.getLoc());
  return success();
}

LogicalResult StepLowering::lowerAllReduce(dist::AllReduceOp allReduce) {
  Location loc = allReduce.getLoc();
  SmallVector<Value> reduced;
  for (auto [r, input] : llvm::enumerate(allReduce.getInputs())) {
    Value buffer = buffers.lookup(input);
    int64_t device = static_cast<int64_t>(r);
    if (exec::getBufferDevice(buffer) != device)
      return allReduce.emitOpError("operand #")
             << r << " must come from replica " << r;
    // The reduction overwrites its buffers: anything but a bucket (which
    // only the reduction reads) is reduced in a copy.
    if (!input.getDefiningOp<dist::PackOp>()) {
      Value copy = exec::AllocOp::create(builder, loc, buffer.getType(),
                                         IntegerAttr(), device);
      waitForReductions(device, {buffer, copy});
      exec::CopyOp::create(builder, loc,
                           stream(exec::StreamKind::compute, device), buffer,
                           copy);
      buffer = copy;
    }
    reduced.push_back(buffer);
  }
  int64_t bucket = allReduce.getBucket().value_or(nextBucket);
  nextBucket = std::max(nextBucket, bucket + 1);
  // Copies are handed over here, buckets at their dist.pack; each comm
  // stream waits here, right before the reduction, for its replica's part.
  for (int64_t r = 0, e = reduced.size(); r < e; ++r)
    if (!handedToComm.contains(rootBuffer(reduced[r])))
      handToComm(reduced[r], r, loc);
  for (int64_t r = 0, e = reduced.size(); r < e; ++r)
    exec::WaitOp::create(builder, loc, handedToComm[rootBuffer(reduced[r])],
                         stream(exec::StreamKind::comm, r));
  exec::AllReduceOp::create(builder, loc,
                            dist::stringifyReduceKind(allReduce.getKind()),
                            reduced, bucket);
  // The compute stream waits for this only where it next touches the bucket.
  for (int64_t r = 0, e = reduced.size(); r < e; ++r) {
    handedToComm.erase(rootBuffer(reduced[r]));
    pendingReductions[rootBuffer(reduced[r])] =
        exec::RecordOp::create(builder, loc, stream(exec::StreamKind::comm, r));
    buffers[allReduce.getOutputs()[r]] = reduced[r];
  }
  return success();
}

LogicalResult StepLowering::lowerUnpack(dist::UnpackOp unpack) {
  Value bucket = buffers.lookup(unpack.getBucket());
  int64_t offset = 0;
  for (Value output : unpack.getOutputs()) {
    auto type = cast<RankedTensorType>(output.getType());
    buffers[output] = exec::ViewOp::create(builder, unpack.getLoc(),
                                           bufferType(type), bucket, offset);
    offset += type.getNumElements();
  }
  return success();
}

LogicalResult StepLowering::lowerReshape(Operation *reshape) {
  // A row-major reshape moves no data: its result is a view of its operand's
  // buffer, which the memory plan keeps alive for as long as the view is
  // used. A result that must live elsewhere (a bucket slot, a variable
  // updated in place) is copied by the kernel as before.
  OpResult result = reshape->getResult(0);
  if (bucketSlots.count(result) || inPlaceAssigns.count(result))
    return lowerLaunch(reshape);
  Value source = buffers.lookup(reshape->getOperand(0));
  buffers[result] =
      exec::ViewOp::create(builder, reshape->getLoc(),
                           bufferType(cast<RankedTensorType>(result.getType())),
                           source, /*offset=*/0);
  return success();
}

LogicalResult StepLowering::lowerAssign(graph::AssignVariableOp assign) {
  if (!elidedAssigns.contains(assign))
    deferredAssigns.push_back({assign, deviceOf(assign)});
  return success();
}

LogicalResult StepLowering::lowerOutput(graph::OutputOp output) {
  // Assignments take effect at the end of the step.
  for (auto [assign, device] : deferredAssigns) {
    Value source = buffers.lookup(assign.getValue());
    Value target = getVariable(assign.getVariableAttr(), device,
                               assign.getValue().getType(), assign.getLoc());
    waitForReductions(device, {source, target});
    exec::CopyOp::create(builder, assign.getLoc(),
                         stream(exec::StreamKind::compute, device), source,
                         target);
  }
  // The step names its values; older IR gets the training config's names.
  SmallVector<std::string> names(outputNames);
  if (std::optional<ArrayAttr> named = output.getNames())
    names = llvm::map_to_vector(named->getAsValueRange<StringAttr>(),
                                [](StringRef n) { return n.str(); });
  size_t perReplica = names.size();
  if (output.getOutputs().size() != perReplica * replicas)
    return output.emitOpError("returns ")
           << output.getOutputs().size() << " values; expected " << perReplica
           << " per replica (loss, then the metrics) for " << replicas
           << " replica(s)";
  for (auto [i, value] : llvm::enumerate(output.getOutputs())) {
    Value buffer = buffers.lookup(value);
    int64_t replica = exec::getBufferDevice(buffer).value_or(i / perReplica);
    exec::OutputOp::create(builder, output.getLoc(), names[i % perReplica],
                           replica, buffer);
  }
  return success();
}

LogicalResult StepLowering::lower(Operation *op) {
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](graph::InputOp input) {
        int64_t device = deviceOf(input);
        buffers[input.getOutput()] = exec::InputOp::create(
            builder, input.getLoc(), bufferType(input.getOutput().getType()),
            input.getName(), device, device);
        return success();
      })
      .Case([&](graph::ReadVariableOp read) {
        buffers[read.getValue()] =
            getVariable(read.getVariableAttr(), deviceOf(read),
                        read.getValue().getType(), read.getLoc());
        return success();
      })
      .Case([&](graph::AssignVariableOp assign) { return lowerAssign(assign); })
      .Case([&](graph::OutputOp output) { return lowerOutput(output); })
      .Case([&](dist::PackOp pack) { return lowerPack(pack); })
      .Case([&](dist::AllReduceOp allReduce) {
        return lowerAllReduce(allReduce);
      })
      .Case([&](dist::UnpackOp unpack) { return lowerUnpack(unpack); })
      .Case<graph::FlattenOp, graph::ReshapeOp>(
          [&](Operation *reshape) { return lowerReshape(reshape); })
      .Default([&](Operation *other) -> LogicalResult {
        if (isLaunched(other))
          return lowerLaunch(other);
        return other->emitOpError("cannot be lowered to an exec program");
      });
}

LogicalResult StepLowering::run() {
  if (failed(checkPlacement()))
    return failure();
  planBuckets();
  planInPlaceAssigns();
  // An all-reduce without a bucket number (dist-replicate's of Dice's
  // sums) is numbered after those dist-insert-all-reduce numbered.
  for (auto allReduce : model.getBlock().getOps<dist::AllReduceOp>())
    if (std::optional<uint64_t> bucket = allReduce.getBucket())
      nextBucket = std::max(nextBucket, static_cast<int64_t>(*bucket) + 1);
  builder.setInsertionPointToEnd(&program.getBody().emplaceBlock());
  for (Operation &op : model.getBlock())
    if (failed(lower(&op)))
      return failure();
  return success();
}

struct LowerToExecPass : graphc::impl::LowerToExecBase<LowerToExecPass> {
  using LowerToExecBase::LowerToExecBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);

    // Outputs the step does not name are named after the training
    // configuration: the loss, then each logged value in order.
    SmallVector<std::string> outputNames;
    auto trainings = module.getOps<graph::TrainingOp>();
    bool hasTraining = !trainings.empty();
    if (hasTraining) {
      graph::TrainingOp training = *trainings.begin();
      auto forward = symbols.lookup<graph::ModelOp>(training.getModel());
      ArrayAttr names =
          forward ? forward.getOutputOp().getNamesAttr() : ArrayAttr();
      for (const graph::LoggedValue &value :
           graph::loggedValues(training, names))
        outputNames.push_back(value.name);
    }

    struct Step {
      StringRef model, program;
      exec::ProgramKind kind;
    };
    for (Step step :
         {Step{"train_step", "train", exec::ProgramKind::train},
          Step{"eval_step", "eval", exec::ProgramKind::eval},
          Step{"predict_step", "predict", exec::ProgramKind::predict}}) {
      auto model = symbols.lookup<graph::ModelOp>(step.model);
      if (!model)
        continue;
      if (!hasTraining) {
        model.emitOpError("needs a graph.training op to name its outputs");
        return signalPassFailure();
      }
      if (Operation *clash = symbols.lookup(step.program)) {
        clash->emitOpError("takes the name @")
            << step.program << " that the lowered program of @" << step.model
            << " needs";
        return signalPassFailure();
      }
      int64_t replicas = 1;
      if (auto attr = model->getAttrOfType<IntegerAttr>(
              dist::DistDialect::kReplicasAttrName))
        replicas = attr.getInt();
      if (replicas < 1) {
        model.emitOpError("has dist.replicas = ")
            << replicas << "; needs at least 1";
        return signalPassFailure();
      }
      OpBuilder builder(model);
      auto program = exec::ProgramOp::create(builder, model.getLoc(),
                                             step.program, step.kind, replicas,
                                             /*arena_bytes=*/nullptr);
      if (failed(StepLowering(model, program, replicas, outputNames).run()))
        return signalPassFailure();
      symbols.erase(model);
      symbols.insert(program);
    }
  }
};

} // namespace

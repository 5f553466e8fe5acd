//===- Passes.td - the graphc passes -----------------------*- tablegen -*-===//
//
// The training pipeline, in order (see docs/architecture.md):
//   graph-assign-precision, graph-build-training-step, graph-fuse,
//   graph-assign-filter-layout,
//   dist-replicate,
//   dist-insert-all-reduce, graph-lower-to-exec, exec-insert-timestamps,
//   exec-plan-memory; then the plan emitter.
//
//===----------------------------------------------------------------------===//

#ifndef COMPILER_PASSES_TD
#define COMPILER_PASSES_TD

include "mlir/Pass/PassBase.td"

def AssignPrecision : Pass<"graph-assign-precision", "::mlir::ModuleOp"> {
  let summary = "gives each op of a mixed-precision model its compute type";
  let description = [{
    Turns the importer's `graph.compute_type` marks (Keras' mixed_bfloat16
    and mixed_float16 policies) into tensor types and `graph.cast`s in every
    `graph.model`: marked ops compute in bf16/f16, variables and inputs stay
    f32 and are cast once for their readers, batch_norm and layer_norm
    compute in f32 (as Keras' layers do), an unmarked op reads f32, and the
    model's outputs are cast to f32 for the loss and metrics. `precision`
    replaces the model's policy (graphc --precision). Runs before
    graph-build-training-step, so gradients follow the forward types.
  }];
  let options = [
    Option<"precision", "precision", "std::string", "\"\"",
           "float32, mixed_bfloat16 or mixed_float16: replaces the "
           "model's policy (empty: the model's own)">
  ];
  let dependentDialects = ["::mlir::graph::GraphDialect"];
}

def BuildTrainingStep : Pass<"graph-build-training-step", "::mlir::ModuleOp"> {
  let summary = "builds the training, evaluation and prediction steps of a model";
  let description = [{
    From `graph.model @m` and `graph.training @m`, adds:
    - `graph.model @train_step`: a `graph.input "labels"` (one-hot
      `[B, C] f32` for categorical cross-entropy, class indices `[B] i32` for
      sparse), the forward pass in training mode (`batch_norm_train`,
      dropout), the loss and metrics, reverse-mode gradients of the loss for
      every trainable variable, one `graph.optimizer_update` per trainable
      variable and `graph.assign_variable` for every new value (batch-norm
      statistics included). Outputs: the loss, then each metric in order.
    - `graph.model @eval_step`: the forward pass in inference mode, the loss
      and the metrics, then the predictions (the model's output, from which
      the runtime counts a confusion matrix); no gradient, no update.
    - `graph.model @predict_step`: the forward pass in inference mode and
      its predictions only (no labels): Keras' `predict`.
    - one `graph.variable` per optimizer slot, named `<variable>/<slot>`
      (`conv2d/kernel/m`), zero-initialised, `trainable = false`.
    Frozen variables get no gradient, and nothing is computed that only
    feeds frozen variables (no input gradient below the first trainable
    layer). A frozen `batch_norm` (gamma and beta not trainable: Keras'
    `BatchNormalization` with `trainable = False`) stays in inference mode
    in `@train_step`; a trainable layer below it gets its gradient through
    `graph.batch_norm_inference_grad` (`dy * gamma / sqrt(var + eps)`).
  }];
  let dependentDialects = ["::mlir::graph::GraphDialect"];
}

def Fuse : Pass<"graph-fuse", "::mlir::ModuleOp"> {
  let summary = "fuses epilogues, elementwise chains, softmax with cross-entropy, optimizer updates";
  let description = [{
    In every step model: conv2d/dense + bias_add + activation
    become `fused_conv2d`/`fused_dense`; softmax feeding categorical
    cross-entropy (with its gradient and softmax_grad) becomes
    `softmax_cross_entropy`; the relu and bias gradients below a max pool
    join the pool's gradient, and a fused_conv2d read only by a max pool
    (and its gradient) becomes `fused_conv2d_pool` (and
    `max_pool2d_argmax_grad`, which with the conv2d_grad_kernel that reads
    its result becomes `fused_conv2d_pool_grad_kernel`, writing that result
    for its other readers with `writes_workspace`); chains of elementwise ops become one
    `graph.elementwise`; all `optimizer_update`s of a step become one
    multi-tensor update. Idempotent.
  }];
  let dependentDialects = ["::mlir::graph::GraphDialect"];
}

def AssignFilterLayout : Pass<"graph-assign-filter-layout", "::mlir::ModuleOp"> {
  let summary = "stores convolution kernels OHWI, the layout cuDNN reads";
  let description = [{
    A kernel variable read only by convolutions (and trained through a
    conv2d_grad_kernel or a fused_conv2d_pool_grad_kernel) is stored OHWI
    [F, kh, kw, C / groups] instead of Keras' HWIO, with its optimizer slots: the variable names its Keras form
    (`logical_shape`, `logical_permutation`) and the convolutions and the
    kernel gradient get `filter_layout = ohwi`, so no backend transposes a
    filter per step. Variables with other uses keep Keras' layout.
    Idempotent.
  }];
  let dependentDialects = ["::mlir::graph::GraphDialect"];
}

def Replicate : Pass<"dist-replicate", "::mlir::ModuleOp"> {
  let summary = "in-graph replication of the step models";
  let description = [{
    Rewrites `@train_step`, `@eval_step` and `@predict_step` into N copies in one block, each
    op placed with `dist.device = #dist.device<r>`, every input's batch
    dimension split B -> B/N (an error when N does not divide B) and every
    batch-carrying type re-derived. Variables stay symbols: each device
    reads and writes its own mirror. The step model gets `dist.replicas = N`.
  }];
  let options = [
    Option<"numReplicas", "num-replicas", "int64_t", "1",
           "number of replicas to split the global batch across">
  ];
  let dependentDialects = ["::mlir::graph::GraphDialect", "::mlir::dist::DistDialect"];
}

def InsertAllReduce : Pass<"dist-insert-all-reduce", "::mlir::ModuleOp"> {
  let summary = "averages every gradient across replicas, in buckets";
  let description = [{
    Gradients feeding `optimizer_update` are packed per replica into
    buckets of at most `bucket-bytes` bytes, in the order backward produces
    them (0 = one bucket); each bucket is one `dist.pack` per replica, one
    `dist.all_reduce mean`, one `dist.unpack` per replica, placed right after
    the bucket's last gradient so the reduction overlaps the rest of
    backward. Does nothing for one replica.
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", "4194304",
           "largest bucket in bytes (0: one bucket for all gradients)">
  ];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

def LowerToExec : Pass<"graph-lower-to-exec", "::mlir::ModuleOp"> {
  let summary = "lowers the replicated steps to exec programs";
  let description = [{
    `@train_step` -> `exec.program @train kind = train`, `@eval_step` ->
    `exec.program @eval kind = eval`, `@predict_step` -> `exec.program
    @predict kind = predict`: one buffer per tensor value
    (`exec.alloc`, `exec.variable`, `exec.input`, views into all-reduce
    buckets), one `exec.launch` per op on its device's compute stream
    (kernel = the graph op's name, config = its attributes), all-reduces on
    the comm streams with events so a bucket's reduction overlaps the
    backward of earlier layers, updates written in place into the
    variables, `exec.output` for loss, metrics and predictions.
  }];
  let dependentDialects = ["::mlir::exec::ExecDialect", "::mlir::memref::MemRefDialect"];
}

def InsertTimestamps : Pass<"exec-insert-timestamps", "::mlir::ModuleOp"> {
  let summary = "adds the timestamp points the step hooks read";
  let description = [{
    Per device: step_begin, forward_begin, backward_begin, update_begin and
    step_end on the compute stream; allreduce_begin and allreduce_end on
    the comm stream.
  }];
  let dependentDialects = ["::mlir::exec::ExecDialect"];
}

def PlanMemory : Pass<"exec-plan-memory", "::mlir::ModuleOp"> {
  let summary = "places every exec.alloc in its device's arena, reusing dead space";
  let description = [{
    Liveness over the program order (a buffer lives from its first write
    to its last use, across streams conservatively), best-fit placement
    with `alignment`-byte offsets; sets each alloc's `offset` and the
    program's `arena_bytes`. Sizes and offsets are computed with overflow
    checks, and an arena over `max-arena-bytes` (64 GiB by default) is an
    error naming its largest buffer.
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", "256", "offset alignment in bytes">,
    Option<"maxArenaBytes", "max-arena-bytes", "int64_t", "int64_t(64) << 30",
           "refuse a program whose arena on one device needs more bytes">
  ];
  let dependentDialects = ["::mlir::exec::ExecDialect"];
}

#endif // COMPILER_PASSES_TD

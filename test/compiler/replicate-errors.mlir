// RUN: graph-opt %s --split-input-file --dist-replicate=num-replicas=4 --verify-diagnostics
// RUN: not graph-opt %s --split-input-file --dist-replicate=num-replicas=0 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not graph-opt %s --split-input-file --dist-replicate=num-replicas=2 --dist-replicate=num-replicas=2 2>&1 | FileCheck %s --check-prefix=TWICE

// ZERO: error: dist-replicate: num-replicas must be >= 1, got 0

// A global batch of 6 rows cannot be dealt to 4 replicas. (Run twice with 2
// replicas, the second run finds the step replicated.)
// TWICE: [[@LINE+1]]:1: error: 'graph.model' op is already replicated (dist.replicas = 2 : i64)
graph.model @train_step {
  // expected-error@+1 {{'graph.input' op global batch 6 does not divide into 4 replicas}}
  %x = graph.input "input_layer" : tensor<6x3xf32>
  %y = graph.relu %x : tensor<6x3xf32>
  graph.output %y : tensor<6x3xf32>
}
graph.model @eval_step {
  %x = graph.input "input_layer" : tensor<6x3xf32>
  graph.output %x : tensor<6x3xf32>
}

// -----

// The evaluation step is split too, so its batch is checked as well.
graph.model @train_step {
  %x = graph.input "input_layer" : tensor<8x3xf32>
  graph.output %x : tensor<8x3xf32>
}
graph.model @eval_step {
  // expected-error@+1 {{'graph.input' op global batch 2 does not divide into 4 replicas}}
  %x = graph.input "input_layer" : tensor<2x3xf32>
  graph.output %x : tensor<2x3xf32>
}

// -----

// Running the pass on a replicated step is an error, not a second split.
// expected-error@+1 {{'graph.model' op is already replicated (dist.replicas = 2 : i64)}}
graph.model @train_step attributes {dist.replicas = 2 : i64} {
  %x0 = graph.input "input_layer" {dist.device = #dist.device<0>} : tensor<4x3xf32>
  %x1 = graph.input "input_layer" {dist.device = #dist.device<1>} : tensor<4x3xf32>
  graph.output %x0, %x1 : tensor<4x3xf32>, tensor<4x3xf32>
}
graph.model @eval_step {
  %x = graph.input "input_layer" : tensor<8x3xf32>
  graph.output %x : tensor<8x3xf32>
}

// -----

// The pass works on the steps graph-build-training-step makes.
// expected-error@+1 {{dist-replicate needs graph.model @train_step (run graph-build-training-step first)}}
module {
  graph.model @m {
    %x = graph.input "input_layer" : tensor<8x3xf32>
    graph.output %x : tensor<8x3xf32>
  }
}

// -----

// expected-error@+1 {{dist-replicate needs graph.model @eval_step (run graph-build-training-step first)}}
module {
  graph.model @train_step {
    %x = graph.input "input_layer" : tensor<8x3xf32>
    graph.output %x : tensor<8x3xf32>
  }
}

// -----

// Every input is split by the same global batch.
graph.model @train_step {
  %x = graph.input "input_layer" : tensor<8x3xf32>
  // expected-error@+1 {{'graph.input' op has batch 4, input 'input_layer' has 8: the replicas need one global batch}}
  %l = graph.input "labels" : tensor<4xi32>
  graph.output %x : tensor<8x3xf32>
}
graph.model @eval_step {
  %x = graph.input "input_layer" : tensor<8x3xf32>
  graph.output %x : tensor<8x3xf32>
}

// -----

// expected-error@+1 {{'graph.model' op has no graph.input whose batch to split}}
graph.model @train_step {
  %k = graph.read_variable @k : tensor<8x3xf32>
  graph.output %k : tensor<8x3xf32>
}
graph.model @eval_step {
  %x = graph.input "input_layer" : tensor<8x3xf32>
  graph.output %x : tensor<8x3xf32>
}
graph.variable @k : tensor<8x3xf32> = #graph.init<zeros>

// -----

// Ops that mix the rows of the batch cannot be split across replicas.
graph.model @train_step {
  %x = graph.input "input_layer" : tensor<8x3xf32>
  // expected-error@+1 {{'graph.softmax' op normalises over the batch axis, which dist-replicate splits across replicas}}
  %y = graph.softmax %x {axis = 0 : i64} : tensor<8x3xf32>
  graph.output %y : tensor<8x3xf32>
}
graph.model @eval_step {
  %x = graph.input "input_layer" : tensor<8x3xf32>
  graph.output %x : tensor<8x3xf32>
}

// -----

graph.model @train_step {
  %x = graph.input "input_layer" : tensor<8x3xf32>
  // expected-error@+1 {{'graph.slice' op slices the batch axis, which dist-replicate splits across replicas}}
  %y = graph.slice %x axis = 0 offset = 0 : tensor<8x3xf32> -> tensor<4x3xf32>
  graph.output %y : tensor<4x3xf32>
}
graph.model @eval_step {
  %x = graph.input "input_layer" : tensor<8x3xf32>
  graph.output %x : tensor<8x3xf32>
}

// -----

// An op the table says carries the batch, applied to something that does not
// (here a reshape of a variable), is reported rather than split.
graph.variable @k : tensor<3x4xf32> = #graph.init<zeros>
graph.model @train_step {
  %x = graph.input "input_layer" : tensor<8x3xf32>
  %k = graph.read_variable @k : tensor<3x4xf32>
  // expected-error@+1 {{'graph.reshape' op result #0 ('tensor<3x2x2xf32>') should carry the global batch 8 on its leading axis}}
  %r = graph.reshape %k : tensor<3x4xf32> -> tensor<3x2x2xf32>
  graph.output %x, %r : tensor<8x3xf32>, tensor<3x2x2xf32>
}
graph.model @eval_step {
  %x = graph.input "input_layer" : tensor<8x3xf32>
  graph.output %x : tensor<8x3xf32>
}

// -----

// An op from outside the graph dialect has no entry in the table.
graph.model @train_step {
  %x = graph.input "input_layer" : tensor<8x3xf32>
  // expected-error@+1 {{'dist.pack' op is not known to dist-replicate: add it to the table of batch-carrying results}}
  %p = dist.pack %x : tensor<8x3xf32> -> tensor<24xf32>
  graph.output %x : tensor<8x3xf32>
}
graph.model @eval_step {
  %x = graph.input "input_layer" : tensor<8x3xf32>
  graph.output %x : tensor<8x3xf32>
}

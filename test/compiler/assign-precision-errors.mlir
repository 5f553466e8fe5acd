// RUN: graph-opt %s --split-input-file --graph-assign-precision --verify-diagnostics

// The diagnostics of graph-assign-precision and of the graph.compute_type
// mark's verifier.

graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  // expected-error@+1 {{"graph.compute_type" must be a type, bf16 or f16 (float32 ops carry none), not f32}}
  %y = graph.relu %x {graph.compute_type = f32} : tensor<4x3xf32>
  graph.output %y : tensor<4x3xf32>
}

// -----

// A step model (after graph-build-training-step) is not the imported model
// the pass rewrites.
graph.variable @"d/kernel" : tensor<3xf32> = #graph.init<zeros>
graph.model @m {
  %k = graph.read_variable @"d/kernel" : tensor<3xf32>
  %g = graph.relu %k {graph.compute_type = bf16} : tensor<3xf32>
  // expected-error@+1 {{'graph.assign_variable' op is not a forward layer op: graph-assign-precision runs on the imported model, before graph-build-training-step}}
  graph.assign_variable @"d/kernel", %k {graph.compute_type = bf16} : tensor<3xf32>
  graph.output %g : tensor<3xf32>
}

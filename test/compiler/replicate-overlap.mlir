// RUN: graph-opt %s --graph-build-training-step | FileCheck %s --check-prefix=STEP
// RUN: graph-opt %s --graph-build-training-step --dist-replicate=num-replicas=2 | FileCheck %s
// RUN: graph-opt %s --graph-build-training-step --dist-replicate=num-replicas=1 | FileCheck %s --check-prefix=ONE

// Dice and Tversky (Keras' axis=None) are one ratio of sums over the whole
// batch. graph-build-training-step computes the sums once
// (graph.overlap_sums) for the loss and for the gradient's seed;
// dist-replicate adds the replicas' sums (dist.all_reduce sum) before
// anything reads them, moves what replica 0 computed from them (its loss,
// its backward, its updates) after that all-reduce, and scales each
// replica's gradient by the replica count, since the replicas' gradients
// are averaged while each holds its rows' part of the one global loss's.
// The loss is summed (reduction="sum"): the ratio is not multiplied by the
// weights' mean (sum_reduction on the loss and its gradient).

graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %y = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %p = graph.sigmoid %y : tensor<4x2xf32>
  graph.output %p : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = tversky, alpha = 0.25, beta = 0.75, sum_reduction = true>] optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false> global_batch_size = 4

// Neither reduction scales the one value (Keras' reduce_values).
// STEP-LABEL: graph.model @train_step
// STEP: %[[T:.*]] = graph.input "labels" : tensor<4x2xf32>
// STEP-NEXT: %[[W:.*]] = graph.input "sample_weight" : tensor<4xf32>
// STEP: %[[P:.*]] = graph.sigmoid
// STEP-NEXT: %[[S:.*]] = graph.overlap_sums %[[P]], %[[T]] weights %[[W]] : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4xf32> -> tensor<5xf32>
// STEP-NEXT: %[[L:.*]] = graph.overlap_loss tversky %[[S]] alpha = 2.500000e-01 beta = 7.500000e-01 sum_reduction : tensor<5xf32> -> tensor<f32>
// STEP-NEXT: %[[G:.*]] = graph.overlap_loss_grad tversky %[[T]], %[[S]] weights %[[W]] alpha = 2.500000e-01 beta = 7.500000e-01 sum_reduction : tensor<4x2xf32>, tensor<5xf32>, tensor<4xf32> -> tensor<4x2xf32>
// STEP-NEXT: graph.sigmoid_grad %[[G]]
// STEP-LABEL: graph.model @eval_step
// STEP: %[[ET:.*]] = graph.input "labels" : tensor<4x2xf32>
// STEP: %[[EW:.*]] = graph.input "sample_weight" : tensor<4xf32>
// STEP: %[[ES:.*]] = graph.overlap_sums %{{.*}}, %[[ET]] weights %[[EW]]
// STEP-NEXT: graph.overlap_loss tversky %[[ES]] alpha = 2.500000e-01 beta = 7.500000e-01 sum_reduction

// CHECK-LABEL: graph.model @train_step attributes {dist.replicas = 2 : i64}
// CHECK: %[[T0:.*]] = graph.input "labels" {dist.device = #dist.device<0>} : tensor<2x2xf32>
// CHECK: %[[S0:.*]] = graph.overlap_sums %{{.*}}, %[[T0]] weights %{{.*}} {dist.device = #dist.device<0>} : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32> -> tensor<5xf32>
// CHECK-NEXT: %[[X1:.*]] = graph.input "input_layer" {dist.device = #dist.device<1>} : tensor<2x3xf32>
// CHECK-NEXT: %[[T1:.*]] = graph.input "labels" {dist.device = #dist.device<1>} : tensor<2x2xf32>
// CHECK: %[[S1:.*]] = graph.overlap_sums %{{.*}}, %[[T1]] weights %{{.*}} {dist.device = #dist.device<1>} : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32> -> tensor<5xf32>
// CHECK-NEXT: %[[R:.*]]:2 = dist.all_reduce sum %[[S0]], %[[S1]] : tensor<5xf32>, tensor<5xf32>
// CHECK-NEXT: %[[L0:.*]] = graph.overlap_loss tversky %[[R]]#0 alpha = 2.500000e-01 beta = 7.500000e-01 sum_reduction {dist.device = #dist.device<0>}
// CHECK-NEXT: %[[G0:.*]] = graph.overlap_loss_grad tversky %[[T0]], %[[R]]#0 weights %{{.*}} alpha = 2.500000e-01 beta = 7.500000e-01 sum_reduction {dist.device = #dist.device<0>, replicas = 2 : i64}
// CHECK-NEXT: graph.sigmoid_grad %[[G0]], {{.*}} {dist.device = #dist.device<0>}
// CHECK: graph.optimizer_update {{.*}} {dist.device = #dist.device<0>}
// CHECK: %[[L1:.*]] = graph.overlap_loss tversky %[[R]]#1 alpha = 2.500000e-01 beta = 7.500000e-01 sum_reduction {dist.device = #dist.device<1>}
// CHECK-NEXT: graph.overlap_loss_grad tversky %[[T1]], %[[R]]#1 weights %{{.*}} alpha = 2.500000e-01 beta = 7.500000e-01 sum_reduction {dist.device = #dist.device<1>, replicas = 2 : i64}
// CHECK: graph.optimizer_update {{.*}} {dist.device = #dist.device<1>}
// CHECK: graph.output {names = ["loss", "grad_norm"]} %[[L0]], %{{.*}}, %[[L1]], %{{.*}} :
// CHECK-LABEL: graph.model @eval_step attributes {dist.replicas = 2 : i64}
// CHECK: %[[ES0:.*]] = graph.overlap_sums {{.*}} {dist.device = #dist.device<0>}
// CHECK: %[[ES1:.*]] = graph.overlap_sums {{.*}} {dist.device = #dist.device<1>}
// CHECK-NEXT: %[[ER:.*]]:2 = dist.all_reduce sum %[[ES0]], %[[ES1]]
// CHECK-NEXT: graph.overlap_loss tversky %[[ER]]#0 alpha
// CHECK: graph.overlap_loss tversky %[[ER]]#1 alpha

// One replica: nothing to add, nothing scaled.
// ONE-LABEL: graph.model @train_step attributes {dist.replicas = 1 : i64}
// ONE-NOT: dist.all_reduce
// ONE: graph.overlap_loss_grad tversky %{{.*}}, %{{.*}} weights %{{.*}} alpha = 2.500000e-01 beta = 7.500000e-01 sum_reduction {dist.device = #dist.device<0>} :
// ONE-NOT: replicas =
// ONE-LABEL: graph.model @eval_step

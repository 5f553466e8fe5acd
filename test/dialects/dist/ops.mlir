// RUN: graph-opt %s --split-input-file | graph-opt --split-input-file | FileCheck %s
// RUN: graph-opt %s --split-input-file --mlir-print-op-generic | graph-opt --split-input-file | FileCheck %s

// Round trip of every dist op and of the device attribute: the custom form,
// and the generic form read back, both print exactly the lines checked here.

// The device attribute places any op, graph ops included, on a replica.
// CHECK-LABEL: graph.model @device attributes {dist.replicas = 2 : i64} {
// CHECK-NEXT: %[[X0:.*]] = graph.input "x" {dist.device = #dist.device<0>} : tensor<2x3xf32>
// CHECK-NEXT: %[[Y0:.*]] = graph.relu %[[X0]] {dist.device = #dist.device<0>} : tensor<2x3xf32>
// CHECK-NEXT: %[[X1:.*]] = graph.input "x_1" {dist.device = #dist.device<1>} : tensor<2x3xf32>
// CHECK-NEXT: %[[Y1:.*]] = graph.relu %[[X1]] {dist.device = #dist.device<1>} : tensor<2x3xf32>
// CHECK-NEXT: graph.output %[[Y0]], %[[Y1]] : tensor<2x3xf32>, tensor<2x3xf32>
graph.model @device attributes {dist.replicas = 2 : i64} {
  %x0 = graph.input "x" {dist.device = #dist.device<0>} : tensor<2x3xf32>
  %y0 = graph.relu %x0 {dist.device = #dist.device<0>} : tensor<2x3xf32>
  %x1 = graph.input "x_1" {dist.device = #dist.device<1>} : tensor<2x3xf32>
  %y1 = graph.relu %x1 {dist.device = #dist.device<1>} : tensor<2x3xf32>
  graph.output %y0, %y1 : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// all_reduce: mean and sum, with and without a bucket, any float type, any
// number of replicas (one included).
// CHECK-LABEL: graph.model @all_reduce {
// CHECK-NEXT: %[[A:.*]] = graph.input "a" : tensor<4xf32>
// CHECK-NEXT: %[[B:.*]] = graph.input "b" : tensor<4xf32>
// CHECK-NEXT: %[[C:.*]] = graph.input "c" : tensor<2x3xf16>
// CHECK-NEXT: %[[M:.*]]:2 = dist.all_reduce mean %[[A]], %[[B]] {bucket = 0 : i64} : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT: %[[S:.*]]:2 = dist.all_reduce sum %[[A]], %[[B]] : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT: %[[H:.*]] = dist.all_reduce mean %[[C]] {bucket = 7 : i64} : tensor<2x3xf16>
// CHECK-NEXT: %[[T:.*]]:4 = dist.all_reduce sum %[[A]], %[[A]], %[[B]], %[[B]] : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT: graph.output %[[M]]#0, %[[M]]#1, %[[S]]#1, %[[H]], %[[T]]#3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x3xf16>, tensor<4xf32>
graph.model @all_reduce {
  %a = graph.input "a" : tensor<4xf32>
  %b = graph.input "b" : tensor<4xf32>
  %c = graph.input "c" : tensor<2x3xf16>
  %m:2 = dist.all_reduce mean %a, %b {bucket = 0 : i64} : tensor<4xf32>, tensor<4xf32>
  %s:2 = dist.all_reduce sum %a, %b : tensor<4xf32>, tensor<4xf32>
  %h = dist.all_reduce mean %c {bucket = 7 : i64} : tensor<2x3xf16>
  %t:4 = dist.all_reduce sum %a, %a, %b, %b : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  graph.output %m#0, %m#1, %s#1, %h, %t#3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x3xf16>, tensor<4xf32>
}

// -----

// broadcast: any root among the replicas.
// CHECK-LABEL: graph.model @broadcast {
// CHECK-NEXT: %[[A:.*]] = graph.input "a" : tensor<2x2xbf16>
// CHECK-NEXT: %[[B:.*]] = graph.input "b" : tensor<2x2xbf16>
// CHECK-NEXT: %[[R0:.*]]:2 = dist.broadcast %[[A]], %[[B]] root = 0 : tensor<2x2xbf16>, tensor<2x2xbf16>
// CHECK-NEXT: %[[R1:.*]]:2 = dist.broadcast %[[A]], %[[B]] root = 1 {dist.device = #dist.device<1>} : tensor<2x2xbf16>, tensor<2x2xbf16>
// CHECK-NEXT: graph.output %[[R0]]#1, %[[R1]]#0 : tensor<2x2xbf16>, tensor<2x2xbf16>
graph.model @broadcast {
  %a = graph.input "a" : tensor<2x2xbf16>
  %b = graph.input "b" : tensor<2x2xbf16>
  %r0:2 = dist.broadcast %a, %b root = 0 : tensor<2x2xbf16>, tensor<2x2xbf16>
  %r1:2 = dist.broadcast %a, %b root = 1 {dist.device = #dist.device<1>} : tensor<2x2xbf16>, tensor<2x2xbf16>
  graph.output %r0#1, %r1#0 : tensor<2x2xbf16>, tensor<2x2xbf16>
}

// -----

// pack and unpack: tensors of any rank (scalars included) back to back in a
// rank-1 bucket of their total element count, and back.
// CHECK-LABEL: graph.model @pack_unpack {
// CHECK-NEXT: %[[A:.*]] = graph.input "a" : tensor<2xf32>
// CHECK-NEXT: %[[B:.*]] = graph.input "b" : tensor<3x2x1x2xf32>
// CHECK-NEXT: %[[C:.*]] = graph.input "c" : tensor<1xf32>
// CHECK-NEXT: %[[P:.*]] = dist.pack %[[A]], %[[B]], %[[C]] {dist.device = #dist.device<0>} : tensor<2xf32>, tensor<3x2x1x2xf32>, tensor<1xf32> -> tensor<15xf32>
// CHECK-NEXT: %[[Q:.*]] = dist.pack %[[A]] : tensor<2xf32> -> tensor<2xf32>
// CHECK-NEXT: %[[U:.*]]:4 = dist.unpack %[[P]] {dist.device = #dist.device<0>} : tensor<15xf32> -> tensor<2xf32>, tensor<3x2x1x2xf32>, tensor<f32>, tensor<0x4xf32>
// CHECK-NEXT: graph.output %[[U]]#0, %[[U]]#1, %[[U]]#2, %[[Q]] : tensor<2xf32>, tensor<3x2x1x2xf32>, tensor<f32>, tensor<2xf32>
graph.model @pack_unpack {
  %a = graph.input "a" : tensor<2xf32>
  %b = graph.input "b" : tensor<3x2x1x2xf32>
  %c = graph.input "c" : tensor<1xf32>
  %p = dist.pack %a, %b, %c {dist.device = #dist.device<0>} : tensor<2xf32>, tensor<3x2x1x2xf32>, tensor<1xf32> -> tensor<15xf32>
  %q = dist.pack %a : tensor<2xf32> -> tensor<2xf32>
  %u:4 = dist.unpack %p {dist.device = #dist.device<0>} : tensor<15xf32> -> tensor<2xf32>, tensor<3x2x1x2xf32>, tensor<f32>, tensor<0x4xf32>
  graph.output %u#0, %u#1, %u#2, %q : tensor<2xf32>, tensor<3x2x1x2xf32>, tensor<f32>, tensor<2xf32>
}

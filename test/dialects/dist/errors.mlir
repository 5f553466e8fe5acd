// RUN: graph-opt %s --split-input-file --verify-diagnostics

// Every verifier message of the dist dialect. The all-reduce checks matter
// most: a replica whose operand differs from the others' would hang the
// collective at run time, so the compiler refuses it.

// A replica with a different shape.
graph.model @all_reduce_shapes {
  %a = graph.input "a" {dist.device = #dist.device<0>} : tensor<4xf32>
  %b = graph.input "b" {dist.device = #dist.device<1>} : tensor<5xf32>
  // expected-error@+1 {{'dist.all_reduce' op operand of replica 1 has type 'tensor<5xf32>', replica 0 has 'tensor<4xf32>': replicas must agree in shape and element type}}
  %r:2 = dist.all_reduce mean %a, %b {bucket = 0 : i64} : tensor<4xf32>, tensor<5xf32>
  graph.output %r#0 : tensor<4xf32>
}

// -----

// A replica with a different element type.
func.func @all_reduce_element_types(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error@+1 {{'dist.all_reduce' op operand of replica 2 has type 'tensor<4xf16>', replica 0 has 'tensor<4xf32>': replicas must agree in shape and element type}}
  %r:3 = dist.all_reduce sum %a, %a, %b : tensor<4xf32>, tensor<4xf32>, tensor<4xf16>
  return
}

// -----

// Same element count, other shape: still a mismatch.
func.func @all_reduce_same_size(%a: tensor<2x3xf32>, %b: tensor<6xf32>) {
  // expected-error@+1 {{'dist.all_reduce' op operand of replica 1 has type 'tensor<6xf32>', replica 0 has 'tensor<2x3xf32>'}}
  %r:2 = dist.all_reduce sum %a, %b : tensor<2x3xf32>, tensor<6xf32>
  return
}

// -----

func.func @all_reduce_none() {
  // expected-error@+1 {{'dist.all_reduce' op needs one operand per replica, got none}}
  "dist.all_reduce"() <{kind = #dist<reduce mean>}> : () -> ()
  return
}

// -----

// The generic form can spell results that differ from the operands; the
// type constraint rejects them before the verifier looks.
func.func @all_reduce_results(%a: tensor<4xf32>) {
  // expected-error@+1 {{'dist.all_reduce' op failed to verify that results mirror the operands}}
  %r = "dist.all_reduce"(%a, %a) <{kind = #dist<reduce mean>}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @all_reduce_result_type(%a: tensor<4xf32>) {
  // expected-error@+1 {{'dist.all_reduce' op failed to verify that results mirror the operands}}
  %r = "dist.all_reduce"(%a) <{kind = #dist<reduce sum>}> : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

// Collectives move statically shaped float tensors only.
func.func @all_reduce_dynamic(%a: tensor<?xf32>) {
  // expected-error@+1 {{custom op 'dist.all_reduce' 'inputs' must be variadic of statically shaped tensor of floats, but got 'tensor<?xf32>'}}
  %r = dist.all_reduce mean %a : tensor<?xf32>
  return
}

// -----

func.func @all_reduce_integer(%a: tensor<4xi32>) {
  // expected-error@+1 {{custom op 'dist.all_reduce' 'inputs' must be variadic of statically shaped tensor of floats, but got 'tensor<4xi32>'}}
  %r = dist.all_reduce sum %a : tensor<4xi32>
  return
}

// -----

func.func @all_reduce_kind(%a: tensor<4xf32>) {
  // expected-error@+2 {{expected ::mlir::dist::ReduceKind to be one of: sum, mean}}
  // expected-error@+1 {{failed to parse Dist_ReduceKindAttr parameter 'value'}}
  %r = dist.all_reduce max %a : tensor<4xf32>
  return
}

// -----

func.func @broadcast_root_too_large(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{'dist.broadcast' op root 2 is not a replica (0 to 1)}}
  %r:2 = dist.broadcast %a, %b root = 2 : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @broadcast_root_negative(%a: tensor<4xf32>) {
  // expected-error@+1 {{'dist.broadcast' op root -1 is not a replica (0 to 0)}}
  %r = dist.broadcast %a root = -1 : tensor<4xf32>
  return
}

// -----

func.func @broadcast_shapes(%a: tensor<4xf32>, %b: tensor<3xf32>) {
  // expected-error@+1 {{'dist.broadcast' op operand of replica 1 has type 'tensor<3xf32>', replica 0 has 'tensor<4xf32>': replicas must agree in shape and element type}}
  %r:2 = dist.broadcast %a, %b root = 0 : tensor<4xf32>, tensor<3xf32>
  return
}

// -----

func.func @broadcast_none() {
  // expected-error@+1 {{'dist.broadcast' op needs one operand per replica, got none}}
  "dist.broadcast"() <{root = 0 : i64}> : () -> ()
  return
}

// -----

func.func @pack_size(%a: tensor<2xf32>, %b: tensor<2x2xf32>) {
  // expected-error@+1 {{'dist.pack' op bucket of 5 elements cannot hold tensors of 6 elements}}
  %p = dist.pack %a, %b : tensor<2xf32>, tensor<2x2xf32> -> tensor<5xf32>
  return
}

// -----

func.func @pack_rank(%a: tensor<2xf32>, %b: tensor<2x2xf32>) {
  // expected-error@+1 {{'dist.pack' op bucket must be rank 1, got 'tensor<2x3xf32>'}}
  %p = dist.pack %a, %b : tensor<2xf32>, tensor<2x2xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @pack_element_type(%a: tensor<2xf32>, %b: tensor<2x2xf16>) {
  // expected-error@+1 {{'dist.pack' op tensor element type 'f16' differs from the bucket's 'f32'}}
  %p = dist.pack %a, %b : tensor<2xf32>, tensor<2x2xf16> -> tensor<6xf32>
  return
}

// -----

func.func @pack_none() {
  // expected-error@+1 {{'dist.pack' op needs at least one tensor}}
  %p = "dist.pack"() : () -> tensor<0xf32>
  return
}

// -----

func.func @unpack_size(%p: tensor<6xf32>) {
  // expected-error@+1 {{'dist.unpack' op bucket of 6 elements cannot hold tensors of 7 elements}}
  %u:2 = dist.unpack %p : tensor<6xf32> -> tensor<3xf32>, tensor<4xf32>
  return
}

// -----

func.func @unpack_rank(%p: tensor<2x3xf32>) {
  // expected-error@+1 {{'dist.unpack' op bucket must be rank 1, got 'tensor<2x3xf32>'}}
  %u:2 = dist.unpack %p : tensor<2x3xf32> -> tensor<3xf32>, tensor<3xf32>
  return
}

// -----

func.func @unpack_element_type(%p: tensor<6xf32>) {
  // expected-error@+1 {{'dist.unpack' op tensor element type 'bf16' differs from the bucket's 'f32'}}
  %u:2 = dist.unpack %p : tensor<6xf32> -> tensor<3xf32>, tensor<3xbf16>
  return
}

// -----

func.func @unpack_none(%p: tensor<0xf32>) {
  // expected-error@+1 {{'dist.unpack' op needs at least one tensor}}
  "dist.unpack"(%p) : (tensor<0xf32>) -> ()
  return
}

// -----

// The device attribute takes one integer.
// expected-error@+2 {{expected integer value}}
// expected-error@+1 {{failed to parse Dist_DeviceAttr parameter 'replica' which is to be a `int64_t`}}
graph.variable @v : tensor<2xf32> = #graph.init<zeros> {dist.device = #dist.device<gpu>}

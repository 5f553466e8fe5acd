// RUN: graph-opt %s --split-input-file --verify-diagnostics

// Every verifier message of ExecOps.cpp.

exec.program @p kind = train replicas = 2 {
  // expected-error@+1 {{'exec.alloc' op device 2 is outside this program's 2 replica(s)}}
  %a = exec.alloc device = 2 : memref<4xf32>
}

// -----

exec.program @p kind = train replicas = 1 {
  // expected-error@+1 {{'exec.variable' op device 1 is outside this program's 1 replica(s)}}
  %v = exec.variable @w device = 1 : memref<4xf32>
}

// -----

exec.program @p kind = eval replicas = 1 {
  // expected-error@+1 {{'exec.input' op device -1 is outside this program's 1 replica(s)}}
  %x = exec.input "x" replica = 0 device = -1 : memref<4xf32>
}

// -----

// expected-error@+1 {{'exec.program' op needs one arena size per device (2), got 1}}
exec.program @p kind = eval replicas = 2 attributes {arena_bytes = array<i64: 256>} {
}

// -----

exec.program @p kind = eval replicas = 1 attributes {arena_bytes = array<i64: 256>} {
  // expected-error@+1 {{'exec.alloc' op has no offset although the program is planned}}
  %a = exec.alloc device = 0 : memref<4xf32>
}

// -----

exec.program @p kind = eval replicas = 1 attributes {arena_bytes = array<i64: 256>} {
  // expected-error@+1 {{'exec.alloc' op ends at byte 320, past the arena of device 0 (256 bytes)}}
  %a = exec.alloc device = 0 offset = 256 : memref<16xf32>
}

// -----

exec.program @p kind = eval replicas = 1 {
  %a = exec.alloc device = 0 : memref<4xf32>
  // expected-error@+1 {{'exec.view' op must keep the element type}}
  %v = exec.view %a[0] : memref<4xf32> -> memref<2xi32>
}

// -----

exec.program @p kind = eval replicas = 1 {
  %a = exec.alloc device = 0 : memref<4xf32>
  // expected-error@+1 {{'exec.view' op elements [3, 5) are outside the source's 4}}
  %v = exec.view %a[3] : memref<4xf32> -> memref<2xf32>
}

// -----

exec.program @p kind = eval replicas = 1 {
  // expected-error@+1 {{'exec.launch' op needs a kernel name}}
  exec.launch "" on <compute, 0> ins() outs() config {}
}

// -----

exec.program @p kind = eval replicas = 1 {
  // expected-error@+1 {{'exec.launch' op kernels run on compute or copy streams, not comm}}
  exec.launch "relu" on <comm, 0> ins() outs() config {}
}

// -----

exec.program @p kind = eval replicas = 2 {
  %x = exec.input "x" replica = 1 device = 1 : memref<4xf32>
  %a = exec.alloc device = 0 : memref<4xf32>
  // expected-error@+1 {{'exec.launch' op buffer #0 lives on device 1 but the op runs on device 0}}
  exec.launch "relu" on <compute, 0> ins(%x : memref<4xf32>) outs(%a : memref<4xf32>) config {}
}

// -----

exec.program @p kind = eval replicas = 2 {
  %x = exec.input "x" replica = 0 device = 0 : memref<4xf32>
  %a = exec.alloc device = 0 : memref<4xf32>
  %b = exec.alloc device = 1 : memref<4xf32>
  %v = exec.view %b[0] : memref<4xf32> -> memref<4xf32>
  // expected-error@+1 {{'exec.launch' op buffer #1 lives on device 1 but the op runs on device 0}}
  exec.launch "k" on <compute, 0> ins(%x : memref<4xf32>) outs(%a, %v : memref<4xf32>, memref<4xf32>) config {}
}

// -----

exec.program @p kind = train replicas = 2 {
  %a = exec.alloc device = 0 : memref<4xf32>
  %b = exec.alloc device = 1 : memref<4xf32>
  // expected-error@+1 {{'exec.all_reduce' op reduction must be 'sum' or 'mean', got 'max'}}
  exec.all_reduce "max" %a, %b bucket = 0 : memref<4xf32>, memref<4xf32>
}

// -----

exec.program @p kind = train replicas = 1 {
  // expected-error@+1 {{'exec.all_reduce' op needs one buffer per replica}}
  "exec.all_reduce"() <{reduction = "sum", bucket = 0 : i64}> : () -> ()
}

// -----

exec.program @p kind = train replicas = 2 {
  %a = exec.alloc device = 0 : memref<4xf32>
  %b = exec.alloc device = 1 : memref<8xf32>
  // expected-error@+1 {{'exec.all_reduce' op buffer of replica 1 has type 'memref<8xf32>', replica 0 has 'memref<4xf32>'}}
  exec.all_reduce "mean" %a, %b bucket = 0 : memref<4xf32>, memref<8xf32>
}

// -----

exec.program @p kind = train replicas = 2 {
  %a = exec.alloc device = 1 : memref<4xf32>
  %b = exec.alloc device = 0 : memref<4xf32>
  // expected-error@+1 {{'exec.all_reduce' op buffer #0 lives on device 1}}
  exec.all_reduce "mean" %a, %b bucket = 0 : memref<4xf32>, memref<4xf32>
}

// -----

exec.program @p kind = train replicas = 2 {
  %a = exec.alloc device = 0 : memref<4xf32>
  %b = exec.alloc device = 1 : memref<4xf32>
  // expected-error@+1 {{'exec.copy' op buffer #1 lives on device 1 but the op runs on device 0}}
  exec.copy %a to %b on <compute, 0> : memref<4xf32>
}

// -----

// CopyOp::verify's "source and target types differ" cannot fire: the
// AllTypesMatch trait is checked first (and the custom syntax has one type).
exec.program @p kind = train replicas = 1 {
  %a = exec.alloc device = 0 : memref<4xf32>
  %b = exec.alloc device = 0 : memref<2x2xf32>
  // expected-error@+1 {{'exec.copy' op failed to verify that all of {source, target} have same type}}
  "exec.copy"(%a, %b) <{stream = #exec.stream<compute, 0>}> : (memref<4xf32>, memref<2x2xf32>) -> ()
}

// -----

exec.program @p kind = train replicas = 1 {
  %e = exec.record on <compute, 0>
  // expected-error@+1 {{'exec.wait' op waits on its own stream: the wait is a no-op}}
  exec.wait %e on <compute, 0>
}

// -----

// Buffers are statically shaped, contiguous memrefs.
exec.program @p kind = eval replicas = 1 {
  // expected-error@+1 {{'exec.alloc' op result #0 must be statically shaped, contiguous memref}}
  %a = exec.alloc device = 0 : memref<?xf32>
}

// -----

// expected-error@+1 {{'exec.alloc' op expects parent op 'exec.program'}}
%a = exec.alloc device = 0 : memref<4xf32>

// -----

exec.program @p kind = train replicas = 1 {
  // expected-error@+1 {{'exec.timestamp' op device 7 is outside this program's 1 replica(s)}}
  exec.timestamp "step_begin" on <compute, 7>
}

// -----

exec.program @p kind = train replicas = 2 {
  %a = exec.alloc device = 0 : memref<4xf32>
  // expected-error@+1 {{'exec.all_reduce' op needs one buffer per replica (2), got 1}}
  exec.all_reduce "mean" %a bucket = 0 : memref<4xf32>
}

// -----

exec.program @p kind = train replicas = 1 {
  %a = exec.alloc device = 0 : memref<f32>
  // expected-error@+1 {{'exec.output' op replica 3 is outside this program's 1 replica(s)}}
  exec.output "loss" replica = 3 %a : memref<f32>
}

// -----

exec.program @p kind = train replicas = 1 {
  %a = exec.alloc device = 0 : memref<4xf32>
  // expected-error@+1 {{'exec.view' op elements [-1, 1) are outside the source's 4}}
  %v = exec.view %a[-1] : memref<4xf32> -> memref<2xf32>
}

graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.variable @"dense/bias" : tensor<2xf32> = #graph.init<zeros>
graph.model @m {
  %x = graph.input "x" : tensor<6x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %y = graph.dense %x, %k : (tensor<6x3xf32>, tensor<3x2xf32>) -> tensor<6x2xf32>
  %b = graph.read_variable @"dense/bias" : tensor<2xf32>
  %z = graph.bias_add %y, %b : tensor<6x2xf32>, tensor<2xf32>
  %p = graph.softmax %z : tensor<6x2xf32>
  graph.output %p : tensor<6x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false> global_batch_size = 6

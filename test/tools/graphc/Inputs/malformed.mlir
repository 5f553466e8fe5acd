graph.variable @w : tensor<3xf32> = #graph.init<zeros>
graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32
}

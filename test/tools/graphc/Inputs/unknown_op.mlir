graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  %y = graph.lstm %x : tensor<2x3xf32>
  graph.output %y : tensor<2x3xf32>
}

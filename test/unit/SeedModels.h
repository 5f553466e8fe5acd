//===- SeedModels.h - the seeds' models via ModelBuilder --------*- C++ -*-===//

#ifndef TEST_UNIT_SEEDMODELS_H
#define TEST_UNIT_SEEDMODELS_H

#include "frontends/builder/ModelBuilder.h"

namespace graph::test {

/// The seed's Fashion-MNIST ConvNet as the Keras document writes it:
/// Conv2D 32 3x3 relu, MaxPool 2, Conv2D 64 3x3 relu, MaxPool 2, Conv2D 64
/// 3x3 relu, Flatten, Dense 64 relu, Dense 10 softmax; categorical
/// cross-entropy, Adam 0.001, accuracy. Model name "functional", as Keras 3
/// names a Functional model.
inline mlir::OwningOpRef<mlir::ModuleOp>
buildFashionMnistCnn(mlir::MLIRContext &context, int64_t batch) {
  using namespace graph::builder;
  ModelBuilder model(&context, "functional", batch);
  Tensor inputs = model.Input({28, 28, 1});
  Tensor x = model.Conv2D({.filters = 32,
                           .kernel_size = {3, 3},
                           .activation = Activation::relu})(inputs);
  x = model.MaxPooling2D({.pool_size = {2, 2}, .strides = {{2, 2}}})(x);
  x = model.Conv2D({.filters = 64,
                    .kernel_size = {3, 3},
                    .activation = Activation::relu})(x);
  x = model.MaxPooling2D({.pool_size = {2, 2}, .strides = {{2, 2}}})(x);
  x = model.Conv2D({.filters = 64,
                    .kernel_size = {3, 3},
                    .activation = Activation::relu})(x);
  x = model.Flatten()(x);
  x = model.Dense({.units = 64, .activation = Activation::relu})(x);
  Tensor predictions =
      model.Dense({.units = 10, .activation = Activation::softmax})(x);
  return model.finish({predictions},
                      Training{.losses = {OutputLoss{
                                   .loss = LossKind::categorical_crossentropy}},
                               .optimizer = Adam{.learning_rate = 0.001}});
}

} // namespace graph::test

#endif // TEST_UNIT_SEEDMODELS_H

//===- BuilderMatchesImporterTest.cpp - C++ and JSON give one IR ----------===//
//
// The seed Fashion-MNIST ConvNet written with ModelBuilder must print exactly
// as the same model imported from the JSON real Keras wrote.
//
//===----------------------------------------------------------------------===//

#include "frontends/builder/ModelBuilder.h"
#include "frontends/keras/KerasImporter.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace graph::builder;

namespace {

std::string print(mlir::ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return text;
}

TEST(BuilderMatchesImporter, FashionMnistCnn) {
  mlir::MLIRContext context;
  graph::keras::ImportOptions options;
  options.batchSize = 256;
  auto imported = graph::keras::importKerasFile(
      GRAPH_SOURCE_DIR "/examples/fashion_mnist_cnn.json", context, options);
  ASSERT_TRUE(imported);

  ModelBuilder model(&context, "functional", 256);
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
  auto built = model.finish({predictions}, Training{});
  ASSERT_TRUE(built);

  EXPECT_EQ(print(*built), print(*imported));
}

} // namespace

//===- BuilderMatchesImporterTest.cpp - C++ and JSON give one IR ----------===//
//
// The seed Fashion-MNIST ConvNet written with ModelBuilder must print exactly
// as the same model imported from the JSON real Keras wrote.
//
//===----------------------------------------------------------------------===//

#include "frontends/builder/ModelBuilder.h"
#include "frontends/keras/KerasImporter.h"
#include "test/unit/SeedModels.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

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

  auto built = graph::test::buildFashionMnistCnn(context, 256);
  ASSERT_TRUE(built);

  EXPECT_EQ(print(*built), print(*imported));
}

} // namespace

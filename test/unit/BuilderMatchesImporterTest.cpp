//===- BuilderMatchesImporterTest.cpp - C++ and JSON give one IR ----------===//
//
// The seed Fashion-MNIST ConvNet written with ModelBuilder must print exactly
// as the same model imported from the JSON real Keras wrote, but for the
// module attribute in which the importer keeps that JSON (for the Keras
// files graphrun writes), which must hold the file's text as it is.
//
//===----------------------------------------------------------------------===//

#include "frontends/builder/ModelBuilder.h"
#include "frontends/keras/KerasImporter.h"
#include "test/unit/SeedModels.h"

#include "dialects/graph/GraphDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

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

  auto config = (*imported)->getAttrOfType<mlir::StringAttr>(
      mlir::graph::kKerasConfigAttr);
  ASSERT_TRUE(config);
  std::ifstream file(GRAPH_SOURCE_DIR "/examples/fashion_mnist_cnn.json",
                     std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(file)),
                   std::istreambuf_iterator<char>());
  EXPECT_EQ(config.getValue().str(), text);
  EXPECT_FALSE((*built)->hasAttr(mlir::graph::kKerasConfigAttr));
  (*imported)->removeAttr(mlir::graph::kKerasConfigAttr);

  EXPECT_EQ(print(*built), print(*imported));
}

} // namespace

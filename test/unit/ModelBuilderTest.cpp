//===- ModelBuilderTest.cpp - the Keras-style C++ builder -----------------===//

#include "frontends/builder/ModelBuilder.h"
#include "test/unit/SeedModels.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace graph::builder;
using mlir::graph::InitKind;

namespace {

/// Collects every diagnostic a test provokes, instead of printing it.
class BuilderTest : public ::testing::Test {
protected:
  BuilderTest()
      : capture(&context, [this](mlir::Diagnostic &diag) {
          errors.push_back(diag.str());
          return mlir::success();
        }) {}

  static std::string print(mlir::ModuleOp module) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module.print(os);
    return text;
  }

  template <typename OpT> static int count(mlir::ModuleOp module) {
    int n = 0;
    module.walk([&](OpT) { ++n; });
    return n;
  }

  mlir::MLIRContext context;
  std::vector<std::string> errors;
  mlir::ScopedDiagnosticHandler capture;
};

using graph::test::buildFashionMnistCnn;

TEST_F(BuilderTest, FashionMnistCnnHasTheSeedShapes) {
  auto module = buildFashionMnistCnn(context, 256);
  ASSERT_TRUE(module) << (errors.empty() ? "" : errors.front());
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(count<mlir::graph::Conv2DOp>(*module), 3);
  EXPECT_EQ(count<mlir::graph::MaxPool2DOp>(*module), 2);
  EXPECT_EQ(count<mlir::graph::DenseOp>(*module), 2);
  EXPECT_EQ(count<mlir::graph::ReluOp>(*module), 4);
  EXPECT_EQ(count<mlir::graph::SoftmaxOp>(*module), 1);
  EXPECT_EQ(count<mlir::graph::VariableOp>(*module), 10);

  std::string ir = print(*module);
  // Keras' default names and layouts: HWIO conv kernels, [in, out] dense.
  EXPECT_NE(ir.find("graph.variable @\"conv2d/kernel\" : tensor<3x3x1x32xf32> "
                    "= #graph.init<glorot_uniform>"),
            std::string::npos);
  EXPECT_NE(ir.find("@\"conv2d_2/kernel\" : tensor<3x3x64x64xf32>"),
            std::string::npos);
  // 28 -> 26 -> 13 -> 11 -> 5 -> 3: the flatten feeds 3*3*64 = 576 features.
  EXPECT_NE(ir.find("@\"dense/kernel\" : tensor<576x64xf32>"),
            std::string::npos);
  EXPECT_NE(ir.find("graph.input \"input_layer\" : tensor<256x28x28x1xf32>"),
            std::string::npos);
  EXPECT_NE(ir.find("-> tensor<256x10xf32>"), std::string::npos);
  EXPECT_NE(
      ir.find("graph.training @functional losses = "
              "[#graph.output_loss<kind = categorical_crossentropy, metrics = "
              "[#graph.metric<kind = accuracy, name = \"accuracy\">]>] "
              "optimizer = #graph.adam<learning_rate = 0.001, beta_1 = "
              "0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> "
              "global_batch_size = 256"),
      std::string::npos)
      << ir;
}

TEST_F(BuilderTest, BuildingTwiceGivesIdenticalIR) {
  auto first = buildFashionMnistCnn(context, 64);
  auto second = buildFashionMnistCnn(context, 64);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(print(*first), print(*second));
}

TEST_F(BuilderTest, DefaultNamesCountPerClassAndSkipTakenNames) {
  ModelBuilder model(&context, "m", 4);
  Tensor x = model.Input({8});
  x = model.Dense({{.name = "dense_1"}, 8})(x); // taken by the user
  x = model.Dense({.units = 8})(x);             // dense
  x = model.Dense({.units = 8})(x);             // dense_2, skipping dense_1
  auto module = model.finish({x});
  ASSERT_TRUE(module);
  std::string ir = print(*module);
  EXPECT_NE(ir.find("@\"dense_1/kernel\""), std::string::npos);
  EXPECT_NE(ir.find("@\"dense/kernel\""), std::string::npos);
  EXPECT_NE(ir.find("@\"dense_2/kernel\""), std::string::npos);
  EXPECT_EQ(ir.find("@\"dense_3/kernel\""), std::string::npos);
}

TEST_F(BuilderTest, SharedLayerReusesItsVariables) {
  ModelBuilder model(&context, "m", 4);
  Tensor a = model.Input({16}, {.name = "a"});
  Tensor b = model.Input({16}, {.name = "b"});
  Layer shared = model.Dense({.units = 16});
  Tensor sum = model.Add()({shared(a), shared(b)});
  auto module = model.finish({sum});
  ASSERT_TRUE(module);
  EXPECT_EQ(count<mlir::graph::VariableOp>(*module), 2);
  EXPECT_EQ(count<mlir::graph::DenseOp>(*module), 2);
  EXPECT_EQ(count<mlir::graph::AddOp>(*module), 1);
}

TEST_F(BuilderTest, FrozenLayerMakesFrozenVariables) {
  ModelBuilder model(&context, "m", 2);
  Tensor x = model.Input({8, 8, 3});
  x = model.Conv2D({{.trainable = false}, 4, {3, 3}})(x);
  x = model.BatchNormalization()(x);
  auto module = model.finish({model.Flatten()(x)});
  ASSERT_TRUE(module);
  std::map<std::string, bool> trainable;
  module->walk([&](mlir::graph::VariableOp v) {
    trainable[v.getSymName().str()] = v.getTrainable();
  });
  EXPECT_FALSE(trainable.at("conv2d/kernel"));
  EXPECT_FALSE(trainable.at("conv2d/bias"));
  EXPECT_TRUE(trainable.at("batch_normalization/gamma"));
  EXPECT_TRUE(trainable.at("batch_normalization/beta"));
  // Statistics move with the batch, never with a gradient.
  EXPECT_FALSE(trainable.at("batch_normalization/moving_mean"));
  EXPECT_FALSE(trainable.at("batch_normalization/moving_variance"));
}

TEST_F(BuilderTest, ReshapeResolvesMinusOne) {
  ModelBuilder model(&context, "m", 3);
  Tensor x = model.Input({4, 6});
  ReshapeOptions reshape;
  reshape.target_shape = {2, -1};
  x = model.Reshape(reshape)(x);
  ASSERT_TRUE(x);
  EXPECT_EQ(x.shape().vec(), (std::vector<int64_t>{3, 2, 12}));
}

TEST_F(BuilderTest, ConcatenateAndGlobalPoolingInferShapes) {
  ModelBuilder model(&context, "m", 2);
  Tensor x = model.Input({5, 5, 3});
  Tensor a = model.Conv2D({.filters = 4,
                           .kernel_size = {3, 3},
                           .padding = mlir::graph::Padding::same})(x);
  Tensor c = model.Concatenate()({a, x});
  ASSERT_TRUE(c);
  EXPECT_EQ(c.shape().vec(), (std::vector<int64_t>{2, 5, 5, 7}));
  Tensor g = model.GlobalAveragePooling2D()(c);
  EXPECT_EQ(g.shape().vec(), (std::vector<int64_t>{2, 7}));
}

TEST_F(BuilderTest, DepthwiseSeparableAndGroupedConvolutions) {
  ModelBuilder model(&context, "m", 2);
  Tensor x = model.Input({9, 9, 4});
  Tensor d = model.DepthwiseConv2D({.kernel_size = {3, 3},
                                    .strides = {2, 2},
                                    .padding = mlir::graph::Padding::same,
                                    .depth_multiplier = 2})(x);
  ASSERT_TRUE(d) << (errors.empty() ? "" : errors.front());
  EXPECT_EQ(d.shape().vec(), (std::vector<int64_t>{2, 5, 5, 8}));
  Tensor s = model.SeparableConv2D(
      {.filters = 6, .kernel_size = {2, 2}, .depth_multiplier = 3})(d);
  ASSERT_TRUE(s);
  EXPECT_EQ(s.shape().vec(), (std::vector<int64_t>{2, 4, 4, 6}));
  Tensor g =
      model.Conv2D({.filters = 4, .kernel_size = {1, 1}, .groups = 2})(s);
  ASSERT_TRUE(g);
  EXPECT_EQ(g.shape().vec(), (std::vector<int64_t>{2, 4, 4, 4}));
  auto module = model.finish({g});
  ASSERT_TRUE(module);
  std::string ir = print(*module);
  // Keras' variables, names, shapes and order.
  for (const char *var :
       {"@\"depthwise_conv2d/kernel\" : tensor<3x3x4x2xf32>",
        "@\"depthwise_conv2d/bias\" : tensor<8xf32>",
        "@\"separable_conv2d/depthwise_kernel\" : tensor<2x2x8x3xf32>",
        "@\"separable_conv2d/pointwise_kernel\" : tensor<1x1x24x6xf32>",
        "@\"separable_conv2d/bias\" : tensor<6xf32>",
        "@\"conv2d/kernel\" : tensor<1x1x3x4xf32>"})
    EXPECT_NE(ir.find(var), std::string::npos) << var << "\n" << ir;
  EXPECT_LT(ir.find("separable_conv2d/depthwise_kernel"),
            ir.find("separable_conv2d/pointwise_kernel"));
  EXPECT_NE(ir.find("groups = 4 : (tensor<2x9x9x4xf32>, "
                    "tensor<3x3x4x2xf32>) -> tensor<2x5x5x8xf32>"),
            std::string::npos)
      << ir;
  EXPECT_NE(ir.find("groups = 8 : (tensor<2x5x5x8xf32>, "
                    "tensor<2x2x8x3xf32>) -> tensor<2x4x4x24xf32>"),
            std::string::npos);
  EXPECT_NE(ir.find("groups = 2 : (tensor<2x4x4x6xf32>, "
                    "tensor<1x1x3x4xf32>) -> tensor<2x4x4x4xf32>"),
            std::string::npos);
}

TEST_F(BuilderTest, GroupsMustDivideChannelsAndFilters) {
  ModelBuilder model(&context, "m", 1);
  Tensor x = model.Input({5, 5, 4});
  EXPECT_FALSE(
      model.Conv2D({.filters = 6, .kernel_size = {3, 3}, .groups = 4})(x));
  EXPECT_FALSE(
      model.DepthwiseConv2D({.kernel_size = {3, 3}, .depth_multiplier = 0})(x));
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0], "layer 'conv2d' (Conv2D): groups (4) must divide the "
                       "input channels (4) and filters (6)");
  EXPECT_EQ(errors[1], "layer 'depthwise_conv2d' (DepthwiseConv2D): "
                       "depth_multiplier must be positive, got 0");
}

TEST_F(BuilderTest, KernelThatDoesNotFitNamesTheLayer) {
  ModelBuilder model(&context, "m", 1);
  Tensor x = model.Input({2, 2, 1});
  x = model.Conv2D({.filters = 8, .kernel_size = {3, 3}})(x);
  EXPECT_FALSE(x);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "layer 'conv2d' (Conv2D): kernel 3x3 does not fit input "
                       "2x2 with padding valid");
  // Later layers stay quiet and the model fails as a whole.
  x = model.Flatten()(x);
  EXPECT_FALSE(model.finish({x}));
  EXPECT_EQ(errors.size(), 1u);
}

TEST_F(BuilderTest, ConvOnFlatInputIsARankError) {
  ModelBuilder model(&context, "m", 1);
  Tensor x = model.Input({10});
  x = model.Conv2D({.filters = 8, .kernel_size = {3, 3}})(x);
  EXPECT_FALSE(x);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(
      errors[0],
      "layer 'conv2d' (Conv2D): expects input of rank 4 (NHWC), got rank 2");
}

TEST_F(BuilderTest, AddOfDifferentShapesIsAnError) {
  ModelBuilder model(&context, "m", 1);
  Tensor a = model.Input({4}, {.name = "a"});
  Tensor b = model.Input({5}, {.name = "b"});
  EXPECT_FALSE(model.Add()({a, b}));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0],
            "layer 'add' (Add): inputs must have one shape or broadcast to "
            "one (each dimension equal or 1), got tensor<1x4xf32> and "
            "tensor<1x5xf32>");
}

TEST_F(BuilderTest, MultiplyBroadcastsUnitAxes) {
  // Squeeze-and-excite: [N, 1, 1, C] times [N, H, W, C], either order.
  ModelBuilder model(&context, "m", 2);
  Tensor x = model.Input({3, 4, 5}, {.name = "x"});
  Tensor s = model.Input({1, 1, 5}, {.name = "s"});
  Tensor y = model.Multiply()({s, x});
  ASSERT_TRUE(y);
  EXPECT_EQ(y.shape().vec(), (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_TRUE(errors.empty());
}

TEST_F(BuilderTest, AddOfDifferentRanksIsAnError) {
  ModelBuilder model(&context, "m", 1);
  Tensor a = model.Input({4, 5}, {.name = "a"});
  Tensor b = model.Input({5}, {.name = "b"});
  EXPECT_FALSE(model.Add()({a, b}));
  ASSERT_EQ(errors.size(), 1u);
}

TEST_F(BuilderTest, AddOfOneInputIsAnArityError) {
  ModelBuilder model(&context, "m", 1);
  Tensor a = model.Input({4});
  EXPECT_FALSE(model.Add()(a));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "layer 'add' (Add): expects at least 2 input(s), got 1");
}

TEST_F(BuilderTest, BadInitializerAndOptimizerAreReported) {
  {
    ModelBuilder model(&context, "m", 1);
    Tensor x = model.Input({4});
    Initializer bad{.kind = InitKind::random_normal, .stddev = -1.0};
    EXPECT_FALSE(model.Dense({.units = 2, .kernel_initializer = bad})(x));
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0],
              "layer 'dense' (Dense): initializer of 'kernel': "
              "initializer 'random_normal' needs stddev > 0, got -1");
  }
  errors.clear();
  {
    ModelBuilder model(&context, "m", 1);
    Tensor x = model.Dense({.units = 2})(model.Input({4}));
    EXPECT_FALSE(
        model.finish({x}, Training{.optimizer = SGD{.learning_rate = -1}}));
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(errors[0].find("sgd needs a finite learning_rate >= 0, got -1"),
              std::string::npos);
  }
}

TEST_F(BuilderTest, DuplicateLayerNameIsAnError) {
  ModelBuilder model(&context, "m", 1);
  Tensor x = model.Input({4});
  x = model.Dense({{.name = "head"}, 4})(x);
  x = model.Dense({{.name = "head"}, 4})(x);
  EXPECT_FALSE(model.finish({x}));
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors[0], "duplicate layer name 'head'");
}

TEST_F(BuilderTest, ActivationNamesRoundTrip) {
  for (llvm::StringRef name :
       {"linear", "relu", "sigmoid", "tanh", "softmax", "elu", "leaky_relu",
        "gelu", "relu6", "silu", "hard_sigmoid", "hard_silu"}) {
    std::optional<Activation> a = parseActivation(name);
    ASSERT_TRUE(a) << name.str();
    EXPECT_EQ(stringifyActivation(*a), name);
  }
  // Keras' aliases.
  EXPECT_EQ(parseActivation("swish"), Activation::silu);
  EXPECT_EQ(parseActivation("hard_swish"), Activation::hard_silu);
  EXPECT_FALSE(parseActivation("selu"));
}

} // namespace

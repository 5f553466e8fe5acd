//===- ElementwiseBodyTest.cpp - graphc's body encoding vs the runtime's parser
//
// A fused `graph.elementwise` body crosses from the compiler to the runtime
// as text: graphc's encodeElementwiseBody writes it, runtime/plan's
// ElementwiseBody parses it. Each body below is encoded, parsed back and
// compared statement by statement with the MLIR it came from; then the
// reference backend evaluates it, and the value must equal the body's math
// written out here (forward functions from their definitions, gradients by
// central differences of those), so the two sides cannot agree on a wrong
// reading.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/ElementwiseBody.h"
#include "compiler/ElementwiseBodyEncoding.h"
#include "dialects/graph/GraphDialect.h"
#include "dialects/graph/GraphOps.h"
#include "runtime/backends/reference/ReferenceKernels.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numbers>
#include <random>
#include <string>
#include <vector>

namespace {

using Inputs = std::vector<double>;

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }
double elu(double z, double alpha) {
  return z > 0 ? z : alpha * (std::exp(z) - 1.0);
}
double gelu(double z, bool approximate) {
  if (approximate)
    return 0.5 * z *
           (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) *
                            (z + 0.044715 * z * z * z)));
  return 0.5 * z * (1.0 + std::erf(z / std::numbers::sqrt2));
}
/// f'(z) by central differences: the oracle for the gradient ops.
double derivative(const std::function<double(double)> &f, double z) {
  const double h = 1e-6;
  return (f(z + h) - f(z - h)) / (2 * h);
}

struct Case {
  const char *name;
  /// The body's block (arguments %a, %b, ...; tensor<f32> values).
  const char *block;
  int inputs;
  /// The ops in the body, in order, as the runtime names them.
  std::vector<std::string> ops;
  /// The body's value on one element, from the definitions.
  std::function<double(const Inputs &)> expected;
};

std::string moduleText(const Case &c) {
  std::string args, operands, types;
  for (int i = 0; i < c.inputs; ++i) {
    std::string sep = i ? ", " : "";
    args += sep + "%a" + std::to_string(i) + ": tensor<f32>";
    operands += sep + "%x" + std::to_string(i);
    types += sep + "tensor<8xf32>";
  }
  std::string text = "graph.model @m {\n";
  for (int i = 0; i < c.inputs; ++i)
    text += "  %x" + std::to_string(i) + " = graph.input \"in" +
            std::to_string(i) + "\" : tensor<8xf32>\n";
  text += "  %e = graph.elementwise " + operands + " : (" + types +
          ") -> tensor<8xf32> {\n  ^bb0(" + args + "):\n" + c.block +
          "  }\n  graph.output %e : tensor<8xf32>\n}\n";
  return text;
}

std::vector<Case> cases() {
  return {
      {"relu_grad_add",
       "    %t = graph.relu_grad %a0, %a1 : tensor<f32>\n"
       "    %u = graph.add %t, %a2 : tensor<f32>\n"
       "    graph.yield %u : tensor<f32>\n",
       3,
       {"relu_grad", "add"},
       [](const Inputs &x) { return (x[1] > 0 ? x[0] : 0.0) + x[2]; }},
      {"add_leaky_relu",
       "    %t = graph.add %a0, %a1 : tensor<f32>\n"
       "    %u = graph.leaky_relu %t {alpha = 0.3 : f64} : tensor<f32>\n"
       "    graph.yield %u : tensor<f32>\n",
       2,
       {"add", "leaky_relu"},
       [](const Inputs &x) {
         double t = x[0] + x[1];
         return t > 0 ? t : 0.3 * t;
       }},
      {"sigmoid_tanh_elu",
       "    %t = graph.sigmoid %a0 : tensor<f32>\n"
       "    %u = graph.tanh %t : tensor<f32>\n"
       "    %v = graph.elu %u {alpha = 0.5 : f64} : tensor<f32>\n"
       "    %w = graph.elu %a1 : tensor<f32>\n"
       "    %y = graph.add %v, %w, %a0 : tensor<f32>\n"
       "    graph.yield %y : tensor<f32>\n",
       2,
       {"sigmoid", "tanh", "elu", "elu", "add"},
       [](const Inputs &x) {
         return elu(std::tanh(sigmoid(x[0])), 0.5) + elu(x[1], 1.0) + x[0];
       }},
      {"gelu_both",
       "    %t = graph.gelu %a0 {approximate} : tensor<f32>\n"
       "    %u = graph.gelu %a1 : tensor<f32>\n"
       "    %v = graph.add %t, %u : tensor<f32>\n"
       "    graph.yield %v : tensor<f32>\n",
       2,
       {"gelu", "gelu", "add"},
       [](const Inputs &x) { return gelu(x[0], true) + gelu(x[1], false); }},
      // Gradients: a0 is dy, a1 the forward's input z; the ops that take
      // the forward's output get it computed from z here.
      {"sigmoid_tanh_grads",
       "    %s = graph.sigmoid %a1 : tensor<f32>\n"
       "    %g = graph.sigmoid_grad %a0, %s : tensor<f32>\n"
       "    %t = graph.tanh %a1 : tensor<f32>\n"
       "    %h = graph.tanh_grad %a0, %t : tensor<f32>\n"
       "    %y = graph.add %g, %h : tensor<f32>\n"
       "    graph.yield %y : tensor<f32>\n",
       2,
       {"sigmoid", "sigmoid_grad", "tanh", "tanh_grad", "add"},
       [](const Inputs &x) {
         return x[0] * derivative(sigmoid, x[1]) +
                x[0] * derivative([](double z) { return std::tanh(z); }, x[1]);
       }},
      {"elu_leaky_gelu_grads",
       "    %e = graph.elu %a1 {alpha = 0.7 : f64} : tensor<f32>\n"
       "    %g = graph.elu_grad %a0, %e {alpha = 0.7 : f64} : tensor<f32>\n"
       "    %l = graph.leaky_relu_grad %a0, %a1 {alpha = 0.1 : f64} : "
       "tensor<f32>\n"
       "    %k = graph.gelu_grad %a0, %a1 {approximate} : tensor<f32>\n"
       "    %y = graph.add %g, %l, %k : tensor<f32>\n"
       "    graph.yield %y : tensor<f32>\n",
       2,
       {"elu", "elu_grad", "leaky_relu_grad", "gelu_grad", "add"},
       [](const Inputs &x) {
         double z = x[1], dy = x[0];
         return dy * derivative([](double v) { return elu(v, 0.7); }, z) +
                dy * (z > 0 ? 1.0 : 0.1) +
                dy * derivative([](double v) { return gelu(v, true); }, z);
       }},
  };
}

class ElementwiseBodyRoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(ElementwiseBodyRoundTrip, EncodedBodyParsesToTheSameMath) {
  const Case &c = GetParam();
  mlir::MLIRContext context;
  context.loadDialect<mlir::graph::GraphDialect>();
  std::string text = moduleText(c);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, &context);
  ASSERT_TRUE(module) << text;
  mlir::graph::ElementwiseOp op;
  module->walk([&](mlir::graph::ElementwiseOp found) { op = found; });
  ASSERT_TRUE(op);

  mlir::FailureOr<std::string> encoded =
      mlir::graphc::encodeElementwiseBody(op);
  ASSERT_TRUE(mlir::succeeded(encoded));
  graph::runtime::ElementwiseBody body;
  std::string error;
  ASSERT_TRUE(body.parse(*encoded, error)) << *encoded << ": " << error;

  // Statement by statement: the ops of the MLIR body, in order.
  ASSERT_EQ(body.statements().size(), c.ops.size()) << *encoded;
  for (size_t i = 0; i < c.ops.size(); ++i)
    EXPECT_EQ(body.statements()[i].op, c.ops[i]) << *encoded;
  EXPECT_EQ(body.numInputs(), c.inputs) << *encoded;
  EXPECT_EQ(body.resultValue(),
            -static_cast<int>(body.statements().size())) // the last one
      << *encoded;

  // And the value, on inputs of both signs.
  std::mt19937 generator(7);
  std::uniform_real_distribution<double> value(-3.0, 3.0);
  std::vector<double> scratch;
  for (int trial = 0; trial < 200; ++trial) {
    Inputs x(static_cast<size_t>(c.inputs));
    for (double &v : x)
      v = value(generator);
    double got =
        graph::runtime::reference::evaluateElementwise(body, x.data(), scratch);
    EXPECT_NEAR(got, c.expected(x), 1e-7) << *encoded << " at trial " << trial;
  }
}

INSTANTIATE_TEST_SUITE_P(Bodies, ElementwiseBodyRoundTrip,
                         ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return std::string(info.param.name);
                         });

TEST(ElementwiseBody, RefusesWhatTheEncodingCannotSay) {
  graph::runtime::ElementwiseBody body;
  std::string error;
  EXPECT_FALSE(body.parse("relu(a0) -> t0", error));
  EXPECT_EQ(error, "body has no yield");
  EXPECT_FALSE(body.parse("conv2d(a0, a1) -> t0; yield t0", error));
  EXPECT_EQ(error, "op 'conv2d' cannot appear in an elementwise body");
  EXPECT_FALSE(body.parse("relu(t0) -> t0; yield t0", error));
  EXPECT_EQ(error, "bad operand 't0' in 'relu(t0) -> t0'");
  EXPECT_FALSE(body.parse("relu(a0, a1) -> t0; yield t0", error));
  EXPECT_EQ(error, "wrong operand count in 'relu(a0, a1) -> t0'");
  EXPECT_FALSE(body.parse("yield a0; relu(a0) -> t0", error));
  EXPECT_EQ(error, "statement after yield: 'relu(a0) -> t0'");
}

} // namespace

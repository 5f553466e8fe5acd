//===- ElementwiseInterpreter.cpp - the graph.elementwise interpreter -----===//
//
// The reference backend evaluates a fused elementwise body (parsed by
// runtime/plan/ElementwiseBody.h) once per element, in double.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/reference/ReferenceKernels.h"

#include <cmath>
#include <numbers>

namespace graph::runtime::reference {

static constexpr double kGeluTanhCoefficient = 0.044715;

double geluForward(double x, bool approximate) {
  if (approximate) {
    double s = std::sqrt(2.0 / std::numbers::pi);
    return 0.5 * x *
           (1.0 + std::tanh(s * (x + kGeluTanhCoefficient * x * x * x)));
  }
  return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2));
}

double geluDerivative(double x, bool approximate) {
  if (approximate) {
    double s = std::sqrt(2.0 / std::numbers::pi);
    double t = std::tanh(s * (x + kGeluTanhCoefficient * x * x * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * s *
                                 (1.0 + 3.0 * kGeluTanhCoefficient * x * x);
  }
  double cdf = 0.5 * (1.0 + std::erf(x / std::numbers::sqrt2));
  double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
  return cdf + x * pdf;
}

double evaluateElementwise(const ElementwiseBody &body, const double *inputs,
                           std::vector<double> &t) {
  const std::vector<ElementwiseBody::Stmt> &stmts = body.statements();
  t.resize(stmts.size());
  auto value = [&](int v) { return v >= 0 ? inputs[v] : t[-v - 1]; };
  for (size_t s = 0; s < stmts.size(); ++s) {
    const ElementwiseBody::Stmt &st = stmts[s];
    double x = value(st.args[0]);
    double r = 0.0;
    const std::string &op = st.op;
    if (op == "add") {
      for (int a : st.args)
        r += value(a);
    } else if (op == "relu") {
      r = x > 0 ? x : 0.0;
    } else if (op == "sigmoid") {
      r = 1.0 / (1.0 + std::exp(-x));
    } else if (op == "tanh") {
      r = std::tanh(x);
    } else if (op == "elu") {
      r = x > 0 ? x : st.alpha * (std::exp(x) - 1.0);
    } else if (op == "leaky_relu") {
      r = x > 0 ? x : st.alpha * x;
    } else if (op == "gelu") {
      r = geluForward(x, st.approximate);
    } else {
      double s2 = value(st.args[1]); // dy, saved
      if (op == "relu_grad")
        r = s2 > 0 ? x : 0.0;
      else if (op == "sigmoid_grad")
        r = x * s2 * (1.0 - s2);
      else if (op == "tanh_grad")
        r = x * (1.0 - s2 * s2);
      else if (op == "elu_grad")
        r = s2 > 0 ? x : x * (s2 + st.alpha);
      else if (op == "leaky_relu_grad")
        r = s2 > 0 ? x : st.alpha * x;
      else if (op == "gelu_grad")
        r = x * geluDerivative(s2, st.approximate);
    }
    t[s] = r;
  }
  return value(body.resultValue());
}

} // namespace graph::runtime::reference

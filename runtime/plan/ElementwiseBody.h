//===- ElementwiseBody.h - a fused elementwise body, parsed -----*- C++ -*-===//
//
// graphc's graph-lower-to-exec writes a fused `graph.elementwise` region
// into its launch's config as text (docs/compiler-ir.md, section 5):
//
//   "add(a0, a1) -> t0; leaky_relu(t0) {alpha=0.2} -> t1; yield t1"
//
// It is part of the plan format, so its parser lives beside plan.fbs and
// every backend reads the same statements: the reference backend
// interprets them, the cpu and cuda backends compile them into their own
// form.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_PLAN_ELEMENTWISEBODY_H
#define RUNTIME_PLAN_ELEMENTWISEBODY_H

#include <string>
#include <vector>

namespace graph::runtime {

class ElementwiseBody {
public:
  struct Stmt {
    std::string op;
    std::vector<int> args; // >= 0: launch input; < 0: -(statement + 1)
    double alpha = 0.0;
    bool hasAlpha = false;
    bool approximate = false;
  };
  /// Parses `body`; on failure returns false and sets `error`.
  bool parse(const std::string &body, std::string &error);
  int numInputs() const { return maxInput + 1; }
  /// The statements in order and the value the body yields (same encoding
  /// as Stmt::args).
  const std::vector<Stmt> &statements() const { return stmts; }
  int resultValue() const { return result; }

private:
  std::vector<Stmt> stmts;
  int result = 0; // same encoding as Stmt::args
  int maxInput = -1;
};

} // namespace graph::runtime

#endif // RUNTIME_PLAN_ELEMENTWISEBODY_H

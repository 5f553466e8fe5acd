//===- ElementwiseBody.cpp - a fused elementwise body, parsed -------------===//

#include "runtime/plan/ElementwiseBody.h"

#include <algorithm>
#include <cstdlib>

namespace graph::runtime {

namespace {
std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::vector<std::string> split(const std::string &s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t at = s.find(sep, start);
    parts.push_back(trim(s.substr(start, at - start)));
    if (at == std::string::npos)
      return parts;
    start = at + 1;
  }
}

/// `a3` -> 3, `t2` -> -3; false when neither.
bool parseValue(const std::string &text, int statements, int &out) {
  if (text.size() < 2 || (text[0] != 'a' && text[0] != 't'))
    return false;
  char *end = nullptr;
  long n = std::strtol(text.c_str() + 1, &end, 10);
  if (*end != '\0' || n < 0)
    return false;
  if (text[0] == 't') {
    if (n >= statements)
      return false; // used before it is defined
    out = -static_cast<int>(n) - 1;
  } else {
    out = static_cast<int>(n);
  }
  return true;
}

/// Operand count of each op an elementwise body may hold (0: any >= 1).
int arity(const std::string &op) {
  if (op == "relu" || op == "sigmoid" || op == "tanh" || op == "elu" ||
      op == "leaky_relu" || op == "gelu")
    return 1;
  if (op == "relu_grad" || op == "sigmoid_grad" || op == "tanh_grad" ||
      op == "elu_grad" || op == "leaky_relu_grad" || op == "gelu_grad")
    return 2;
  if (op == "add")
    return 0;
  return -1;
}
} // namespace

bool ElementwiseBody::parse(const std::string &body, std::string &error) {
  stmts.clear();
  maxInput = -1;
  bool yielded = false;
  for (const std::string &text : split(body, ';')) {
    if (text.empty())
      continue;
    if (yielded) {
      error = "statement after yield: '" + text + "'";
      return false;
    }
    if (text.rfind("yield ", 0) == 0) {
      if (!parseValue(trim(text.substr(6)), stmts.size(), result)) {
        error = "bad yield: '" + text + "'";
        return false;
      }
      if (result >= 0)
        maxInput = std::max(maxInput, result);
      yielded = true;
      continue;
    }
    size_t open = text.find('('), close = text.find(')');
    size_t arrow = text.rfind("->");
    if (open == std::string::npos || close == std::string::npos ||
        arrow == std::string::npos || close < open || arrow < close) {
      error = "cannot parse statement '" + text + "'";
      return false;
    }
    Stmt stmt;
    stmt.op = trim(text.substr(0, open));
    int n = arity(stmt.op);
    if (n < 0) {
      error = "op '" + stmt.op + "' cannot appear in an elementwise body";
      return false;
    }
    for (const std::string &arg :
         split(text.substr(open + 1, close - open - 1), ',')) {
      int v;
      if (!parseValue(arg, stmts.size(), v)) {
        error = "bad operand '" + arg + "' in '" + text + "'";
        return false;
      }
      if (v >= 0)
        maxInput = std::max(maxInput, v);
      stmt.args.push_back(v);
    }
    if ((n > 0 && static_cast<int>(stmt.args.size()) != n) ||
        stmt.args.empty()) {
      error = "wrong operand count in '" + text + "'";
      return false;
    }
    std::string attrs = trim(text.substr(close + 1, arrow - close - 1));
    if (!attrs.empty()) {
      if (attrs.front() != '{' || attrs.back() != '}') {
        error = "bad attributes in '" + text + "'";
        return false;
      }
      for (const std::string &entry :
           split(attrs.substr(1, attrs.size() - 2), ',')) {
        size_t eq = entry.find('=');
        if (eq == std::string::npos) {
          error = "bad attribute '" + entry + "'";
          return false;
        }
        std::string name = trim(entry.substr(0, eq));
        std::string value = trim(entry.substr(eq + 1));
        if (name == "alpha") {
          char *end = nullptr;
          stmt.alpha = std::strtod(value.c_str(), &end);
          if (*end != '\0') {
            error = "bad alpha '" + value + "'";
            return false;
          }
          stmt.hasAlpha = true;
        } else if (name == "approximate") {
          stmt.approximate = value == "true" || value == "1";
        } // other attributes do not change an elementwise op
      }
    }
    if (!stmt.hasAlpha)
      stmt.alpha = stmt.op.rfind("elu", 0) == 0 ? 1.0 : 0.2;
    std::string target = trim(text.substr(arrow + 2));
    if (target != "t" + std::to_string(stmts.size())) {
      error = "statement " + std::to_string(stmts.size()) + " defines '" +
              target + "'";
      return false;
    }
    stmts.push_back(std::move(stmt));
  }
  if (!yielded) {
    error = "body has no yield";
    return false;
  }
  return true;
}

} // namespace graph::runtime

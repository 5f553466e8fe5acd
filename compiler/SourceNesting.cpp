//===- SourceNesting.cpp - refuse MLIR text too deep to parse -------------===//
//
// The scan keeps the open brackets on a stack as the parser would: a `>`
// closes only a `<` (otherwise it belongs to `>=`), `->` is an arrow, and a
// closing bracket pops down to the opener of its kind. So while the parser
// reads valid text, the scan's depth is at least the parser's (and where the
// text stops being valid, the parser stops).
//
//===----------------------------------------------------------------------===//

#include "compiler/SourceNesting.h"

#include "mlir/Bytecode/BytecodeReader.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/SourceMgr.h"

#include <optional>
#include <string>

namespace mlir::graphc {

namespace {

/// A source line longer than this is left out of the diagnostic: a nesting
/// bomb is usually one line, and the position says where to look.
constexpr size_t kMaxShownLineLength = 500;

struct Fault {
  size_t offset;
  std::string message;
};

bool isWordChar(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '$' || c == '.';
}

class NestingScanner {
public:
  explicit NestingScanner(llvm::StringRef text) : text(text) {}

  std::optional<Fault> scan();

private:
  std::optional<Fault> open(size_t at, char bracket);
  void close(char opener);
  void pop();
  std::optional<Fault> affineOperator(size_t at);

  llvm::StringRef text;
  /// The open brackets, innermost last, and how many of each kind are open:
  /// a closing bracket with no opener of its kind costs no stack walk.
  llvm::SmallVector<char, 64> brackets;
  unsigned openCount[128] = {};
  /// The depth of the `<` of the affine_map or affine_set being read (0:
  /// none) and the operators read in it so far.
  size_t affineDepth = 0;
  unsigned affineOperators = 0;
};

std::optional<Fault> NestingScanner::open(size_t at, char bracket) {
  if (brackets.size() == kMaxSourceNesting)
    return Fault{at, ("nested deeper than " + llvm::Twine(kMaxSourceNesting) +
                      " levels: refused before parsing (the parser recurses "
                      "once per level; a graph module nests about 10 deep)")
                         .str()};
  brackets.push_back(bracket);
  ++openCount[static_cast<unsigned char>(bracket)];
  return std::nullopt;
}

void NestingScanner::pop() {
  --openCount[static_cast<unsigned char>(brackets.back())];
  brackets.pop_back();
  if (brackets.size() < affineDepth)
    affineDepth = 0;
}

void NestingScanner::close(char opener) {
  if (!openCount[static_cast<unsigned char>(opener)])
    return;
  while (brackets.back() != opener)
    pop();
  pop();
}

std::optional<Fault> NestingScanner::affineOperator(size_t at) {
  if (!affineDepth || ++affineOperators <= kMaxAffineOperators)
    return std::nullopt;
  return Fault{at, ("affine expression with more than " +
                    llvm::Twine(kMaxAffineOperators) +
                    " operators: refused before parsing (the parser "
                    "recurses once per operator)")
                       .str()};
}

std::optional<Fault> NestingScanner::scan() {
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    std::optional<Fault> fault;
    switch (c) {
    case '"':
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i; // The escaped character, a quote perhaps.
      break;
    case '/':
      if (text.substr(i).starts_with("//")) {
        i = text.find('\n', i);
        if (i == llvm::StringRef::npos)
          return std::nullopt;
      }
      break;
    case '{':
    case '(':
    case '[':
    case '<':
      fault = open(i, c);
      break;
    case '>':
      if (!brackets.empty() && brackets.back() == '<')
        pop();
      break;
    case '}':
      close('{');
      break;
    case ')':
      close('(');
      break;
    case ']':
      close('[');
      break;
    case '-':
      if (i + 1 < text.size() && text[i + 1] == '>') {
        ++i; // An arrow.
        break;
      }
      fault = affineOperator(i);
      break;
    case '+':
    case '*':
      fault = affineOperator(i);
      break;
    default: {
      if (!isWordChar(c))
        break;
      size_t end = i;
      while (end < text.size() && isWordChar(text[end]))
        ++end;
      llvm::StringRef word = text.slice(i, end);
      if (!affineDepth && (word == "affine_map" || word == "affine_set") &&
          end < text.size() && text[end] == '<') {
        affineDepth = brackets.size() + 1;
        affineOperators = 0;
      } else if (word == "mod" || word == "floordiv" || word == "ceildiv") {
        fault = affineOperator(i);
      }
      i = end - 1;
    }
    }
    if (fault)
      return fault;
  }
  return std::nullopt;
}

} // namespace

LogicalResult checkSourceNesting(const llvm::MemoryBuffer &source,
                                 llvm::raw_ostream &os) {
  if (isBytecode(source.getMemBufferRef()))
    return success();
  std::optional<Fault> fault = NestingScanner(source.getBuffer()).scan();
  if (!fault)
    return success();

  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBuffer(source.getMemBufferRef(),
                                       /*RequiresNullTerminator=*/false),
      llvm::SMLoc());
  llvm::SMDiagnostic diag = sourceMgr.GetMessage(
      llvm::SMLoc::getFromPointer(source.getBufferStart() + fault->offset),
      llvm::SourceMgr::DK_Error, fault->message);
  if (diag.getLineContents().size() > kMaxShownLineLength)
    diag = llvm::SMDiagnostic((diag.getFilename() + ":" +
                               llvm::Twine(diag.getLineNo()) + ":" +
                               llvm::Twine(diag.getColumnNo() + 1))
                                  .str(),
                              llvm::SourceMgr::DK_Error, fault->message);
  diag.print(nullptr, os);
  return failure();
}

} // namespace mlir::graphc

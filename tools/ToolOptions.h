//===- ToolOptions.h - --help that lists a tool's own flags -----*- C++ -*-===//
//
// A tool linking LLVM and MLIR inherits some 400 lines of their options,
// which buried the tool's own few in `--help`. The tools put their flags in
// one category and show only it (and LLVM's generic --help, --version);
// everything else stays accepted and is listed by `--help-hidden`.
// cl::HideUnrelatedOptions would hide the rest from --help-hidden as well.
//
//===----------------------------------------------------------------------===//

#ifndef TOOLS_TOOLOPTIONS_H
#define TOOLS_TOOLOPTIONS_H

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"

namespace graph::tools {

/// Moves the registered options named in `adopted` (MLIR's, say
/// "mlir-timing") into `category`, then hides from --help every option that
/// is neither in `category` nor one of LLVM's generic ones (--help,
/// --version: the category --help is in). Call it after the options are
/// registered and before cl::ParseCommandLineOptions.
inline void showOnlyToolOptions(llvm::cl::OptionCategory &category,
                                llvm::ArrayRef<llvm::StringRef> adopted = {}) {
  auto &options = llvm::cl::getRegisteredOptions();
  for (llvm::StringRef name : adopted) {
    auto it = options.find(name);
    if (it != options.end())
      it->second->Categories.assign({&category});
  }
  llvm::SmallVector<llvm::cl::OptionCategory *, 2> shown = {&category};
  if (auto help = options.find("help"); help != options.end())
    shown.append(help->second->Categories.begin(),
                 help->second->Categories.end());
  for (auto &entry : options) {
    llvm::cl::Option *option = entry.second;
    if (option->getOptionHiddenFlag() == llvm::cl::NotHidden &&
        llvm::none_of(option->Categories, [&](llvm::cl::OptionCategory *c) {
          return llvm::is_contained(shown, c);
        }))
      option->setHiddenFlag(llvm::cl::Hidden);
  }
}

} // namespace graph::tools

#endif // TOOLS_TOOLOPTIONS_H

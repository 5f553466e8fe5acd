//===- Weights.cpp - variables to and from safetensors files --------------===//

#include "runtime/checkpoint/Weights.h"

#include <cstring>
#include <set>

namespace graph::runtime::checkpoint {

bool isOptimizerSlot(const MirroredVariables &variables, int v) {
  const std::string &name = variables.name(v);
  size_t slash = name.rfind('/');
  return slash != std::string::npos &&
         variables.find(name.substr(0, slash)) >= 0;
}

std::vector<int> modelWeights(const MirroredVariables &variables) {
  std::vector<int> out;
  for (int v = 0; v < variables.count(); ++v)
    if (!isOptimizerSlot(variables, v))
      out.push_back(v);
  return out;
}

std::vector<int> allVariables(const MirroredVariables &variables) {
  std::vector<int> out(static_cast<size_t>(variables.count()));
  for (int v = 0; v < variables.count(); ++v)
    out[static_cast<size_t>(v)] = v;
  return out;
}

Status addVariables(const MirroredVariables &variables,
                    const std::vector<int> &which, SafetensorsWriter &writer) {
  for (int v : which) {
    std::string bytes(static_cast<size_t>(variables.bytes(v)), '\0');
    if (Status s = variables.read(v, bytes.data()); !s)
      return s;
    if (Status s = writer.add(variables.name(v), DType::F32, variables.shape(v),
                              std::move(bytes));
        !s)
      return s;
  }
  return Status::ok();
}

Status setVariables(const SafetensorsFile &file, const std::vector<int> &which,
                    MirroredVariables &variables) {
  const std::string &source = file.source();
  std::set<std::string> expected;
  for (int v : which)
    expected.insert(variables.name(v));
  // Check everything first: a file that fails leaves the variables as they
  // were, not half replaced.
  for (const TensorInfo &t : file.tensors())
    if (!expected.count(t.name)) {
      bool slot = variables.find(t.name) >= 0;
      return Status::error(source + ": tensor '" + t.name + "' is not a " +
                           (slot ? "model weight (it is an optimizer slot)"
                                 : "variable of the model") +
                           "; the file must hold exactly the model's " +
                           std::to_string(which.size()) + " weights");
    }
  for (int v : which) {
    const std::string &name = variables.name(v);
    const TensorInfo *t = file.find(name);
    if (!t)
      return Status::error(source + ": no tensor '" + name + "' (the model's " +
                           dtypeName(DType::F32) + " " +
                           shapeText(variables.shape(v)) + " variable)");
    if (t->dtype != DType::F32)
      return Status::error(source + ": tensor '" + name + "' is " +
                           dtypeName(t->dtype) + "; the model's variable is " +
                           dtypeName(DType::F32));
    if (t->shape != variables.shape(v))
      return Status::error(
          source + ": tensor '" + name + "' has shape " + shapeText(t->shape) +
          "; the model's variable has shape " + shapeText(variables.shape(v)) +
          " (Keras layouts: HWIO conv kernels, [in, out] "
          "dense kernels)");
  }
  for (int v : which) {
    std::string_view data = file.data(*file.find(variables.name(v)));
    if (Status s = variables.write(v, data.data()); !s)
      return s;
  }
  return Status::ok();
}

Status saveWeights(const std::string &path, const MirroredVariables &variables,
                   const std::map<std::string, std::string> &metadata) {
  SafetensorsWriter writer;
  for (const auto &[key, value] : metadata)
    writer.setMetadata(key, value);
  if (Status s = addVariables(variables, modelWeights(variables), writer); !s)
    return s;
  return writer.write(path);
}

Status loadWeights(const std::string &path, MirroredVariables &variables) {
  SafetensorsFile file;
  if (Status s = SafetensorsFile::read(path, file); !s)
    return s;
  return setVariables(file, modelWeights(variables), variables);
}

} // namespace graph::runtime::checkpoint

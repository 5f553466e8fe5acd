//===- Weights.cpp - variables to and from safetensors files --------------===//

#include "runtime/checkpoint/Weights.h"

#include "runtime/checkpoint/KerasWeights.h"
#include "runtime/core/Kernel.h"
#include "runtime/plan/PlanLoader.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

namespace graph::runtime::checkpoint {

bool isOptimizerSlot(const MirroredVariables &variables, int v) {
  return isOptimizerSlotName(variables.name(v), [&](std::string_view prefix) {
    return variables.find(std::string(prefix)) >= 0;
  });
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
                    MirroredVariables &variables,
                    const std::set<std::string> &others) {
  const std::string &source = file.source();
  std::set<std::string> expected;
  for (int v : which)
    expected.insert(variables.name(v));
  // Check everything first: a file that fails leaves the variables as they
  // were, not half replaced.
  for (const TensorInfo &t : file.tensors())
    if (!expected.count(t.name) && !others.count(t.name)) {
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

namespace {

/// The file's first bytes, or fewer (none when it cannot be read: the
/// safetensors reader then says why).
std::string fileHead(const std::string &path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return {};
  std::ifstream in(path, std::ios::binary);
  char head[8];
  in.read(head, sizeof(head));
  return std::string(head, static_cast<size_t>(in.gcount()));
}

std::string lowerExtension(const std::string &path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext;
}

/// WeightsMatch::partial for safetensors: by name, F32, same shape.
Status setVariablesPartially(const SafetensorsFile &file,
                             const std::vector<int> &which,
                             MirroredVariables &variables,
                             WeightsReport &report) {
  std::set<std::string> expected;
  for (int v : which)
    expected.insert(variables.name(v));
  for (const TensorInfo &t : file.tensors())
    if (!expected.count(t.name))
      report.skipped.emplace_back(t.name,
                                  variables.find(t.name) >= 0
                                      ? "an optimizer slot, not a model weight"
                                      : "not a variable of the model");
  std::vector<std::pair<int, const TensorInfo *>> load;
  for (int v : which) {
    const std::string &name = variables.name(v);
    const TensorInfo *t = file.find(name);
    std::string why;
    if (!t)
      why = "not in the file";
    else if (t->dtype != DType::F32)
      why = std::string("the file's tensor is ") + dtypeName(t->dtype) +
            ", not F32";
    else if (t->shape != variables.shape(v))
      why = "the file's tensor has shape " + shapeText(t->shape) +
            ", the variable " + shapeText(variables.shape(v));
    if (why.empty()) {
      load.emplace_back(v, t);
      continue;
    }
    report.leftInitial.emplace_back(name, why);
    if (t)
      report.skipped.emplace_back(name, why);
  }
  for (const auto &[v, t] : load) {
    if (Status s = variables.write(v, file.data(*t).data()); !s)
      return s;
    report.loaded.push_back(variables.name(v));
  }
  return Status::ok();
}

} // namespace

std::string WeightsReport::text(const std::string &path) const {
  std::string out = path + " (" + format + "): loaded " +
                    std::to_string(loaded.size()) + " of " +
                    std::to_string(loaded.size() + leftInitial.size()) +
                    " model weights\n";
  for (const auto &[name, why] : leftInitial)
    out += "  left at its initial value: " + name + " (" + why + ")\n";
  for (const auto &[name, why] : skipped)
    out += "  skipped from the file: " + name + " (" + why + ")\n";
  return out;
}

Status loadWeights(const std::string &path, MirroredVariables &variables,
                   WeightsMatch match, WeightsReport *report) {
  WeightsReport ignored;
  WeightsReport &r = report ? *report : ignored;
  r = WeightsReport();
  std::vector<int> which = modelWeights(variables);
  // By content: Keras names its files .h5, .weights.h5, .hdf5, .keras, and
  // people rename them; the extension only words the error below.
  std::string head = fileHead(path);
  if (looksLikeHdf5(head) || looksLikeZip(head))
    return loadKerasWeights(path, looksLikeZip(head), which, variables, match,
                            &r);
  SafetensorsFile file;
  if (Status s = SafetensorsFile::read(path, file); !s) {
    // A file named like Keras' that is neither: say what it should be.
    std::error_code ec;
    std::string ext = lowerExtension(path);
    if (!std::filesystem::is_regular_file(path, ec))
      return s;
    if (ext == ".h5" || ext == ".hdf5")
      return Status::error(
          path +
          ": not an HDF5 file (it does not begin with HDF5's "
          "signature \\x89HDF\\r\\n\\x1a\\n); Keras' .h5 and .weights.h5 "
          "files are HDF5: is it the file Keras wrote, whole?");
    if (ext == ".keras")
      return Status::error(path +
                           ": not a zip archive (a .keras file is a "
                           "zip archive holding " +
                           kKerasWeightsMember + ")");
    return s;
  }
  r.format = "safetensors";
  if (match == WeightsMatch::partial)
    return setVariablesPartially(file, which, variables, r);
  if (Status s = setVariables(file, which, variables); !s)
    return s;
  for (int v : which)
    r.loaded.push_back(variables.name(v));
  return Status::ok();
}

} // namespace graph::runtime::checkpoint

//===- ArraysDataset.cpp - a model's examples from NumPy or CSV -----------===//

#include "runtime/data/ArraysDataset.h"

#include "runtime/data/CsvTable.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <utility>

namespace graph::runtime::data {

namespace {

constexpr const char *kArraysPrefix = "arrays:";
constexpr const char *kCsvPrefix = "csv:";
constexpr const char *kMemoryPrefix = "memory:";
/// The array that holds Keras' sample_weight, never the labels.
constexpr std::string_view kSampleWeightArray = "sample_weight";

/// NumPy's way of writing a shape: "(60000, 28, 28)", "(5,)".
std::string numpyShape(const std::vector<int64_t> &dims) {
  std::string text = "(";
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + (dims.size() == 1 ? ",)" : ")");
}

/// A value in an error as Python prints it (1e+300, nan), not as
/// std::to_string's 300 digits.
std::string shortNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

/// The shape x must have, N examples of `shape`: "(N, 784)".
std::string expectedShape(const ExampleShape &shape) {
  std::string text = "(N";
  for (int64_t d : shape.dims)
    text += ", " + std::to_string(d);
  return text + ")";
}

std::vector<std::string> split(const std::string &text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t at = text.find(separator, start);
    parts.push_back(text.substr(start, at - start));
    if (at == std::string::npos)
      return parts;
    start = at + 1;
  }
}

/// The files of an arrays: spec's rest: X.npy,Y.npy split at the comma,
/// unless the whole names a file (a comma in a file's name).
std::vector<std::string> arrayFiles(const std::string &rest) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(rest, ec))
    return {rest};
  return split(rest, ',');
}

/// Labels as class indices, from `values` ([rows, width] doubles, row-major,
/// read from `what`): width 1 holds indices, a larger width one-hot rows.
/// Whether every row of `width` values is one-hot (one 1, zeros).
bool allOneHot(const std::vector<double> &values, int64_t rows, int64_t width) {
  for (int64_t r = 0; r < rows; ++r) {
    int ones = 0;
    for (int64_t c = 0; c < width; ++c) {
      const double v = values[static_cast<size_t>(r * width + c)];
      if (v == 1.0)
        ++ones;
      else if (v != 0.0)
        return false;
    }
    if (ones != 1)
      return false;
  }
  return true;
}

/// Rows of class probabilities (soft labels) into `soft` (float32, each
/// finite) and their arg-max (the first largest) into `labels`.
Status toSoftLabels(const std::string &what, const std::vector<double> &values,
                    int64_t rows, int64_t width, std::vector<int32_t> &labels,
                    std::vector<float> &soft) {
  soft.resize(static_cast<size_t>(rows * width));
  for (int64_t r = 0; r < rows; ++r) {
    int64_t best = 0;
    for (int64_t c = 0; c < width; ++c) {
      const size_t i = static_cast<size_t>(r * width + c);
      soft[i] = static_cast<float>(values[i]);
      if (!std::isfinite(soft[i]))
        return Status::invalidInput(what + ": example " + std::to_string(r) +
                                    ": label " + shortNumber(values[i]) +
                                    " at class " + std::to_string(c) +
                                    " is not finite as float32");
      if (soft[i] > soft[static_cast<size_t>(r * width + best)])
        best = c;
    }
    labels[static_cast<size_t>(r)] = static_cast<int32_t>(best);
  }
  return Status::ok();
}

Status toClassLabels(const std::string &what, const std::vector<double> &values,
                     int64_t rows, int64_t width, int32_t classes,
                     std::optional<int64_t> ignoreClass,
                     std::vector<int32_t> &labels, int32_t &numClasses,
                     std::vector<float> *soft) {
  labels.resize(static_cast<size_t>(rows));
  if (width > 1 && classes > 0 && width != classes)
    return Status::invalidInput(
        what + ": one-hot rows of " + std::to_string(width) +
        " classes; the model's labels have " + std::to_string(classes));
  if (soft && width > 1 && !allOneHot(values, rows, width)) {
    numClasses = classes > 0 ? classes : static_cast<int32_t>(width);
    return toSoftLabels(what, values, rows, width, labels, *soft);
  }
  int32_t largest = -1;
  for (int64_t r = 0; r < rows; ++r) {
    const double *row = values.data() + r * width;
    std::string at = what + ": example " + std::to_string(r) + ": ";
    double label = row[0];
    if (width > 1) {
      // One-hot: exactly one 1, every other value 0.
      int64_t hot = -1;
      for (int64_t c = 0; c < width; ++c) {
        if (std::isnan(row[c]))
          return Status::invalidInput(at + "label is NaN");
        if (row[c] == 1.0 && hot < 0)
          hot = c;
        else if (row[c] != 0.0)
          return Status::invalidInput(
              at + "a one-hot label row must hold one 1 and zeros; it holds " +
              std::to_string(row[c]) + " at class " + std::to_string(c) +
              " (soft labels need a loss that takes them: "
              "categorical_crossentropy)");
      }
      if (hot < 0)
        return Status::invalidInput(at + "the one-hot label row is all zeros");
      label = static_cast<double>(hot);
    } else {
      if (std::isnan(label))
        return Status::invalidInput(at + "label is NaN");
      if (ignoreClass && label == static_cast<double>(*ignoreClass)) {
        // Left out by the loss (ignore_class): no class of its own.
        labels[static_cast<size_t>(r)] = static_cast<int32_t>(label);
        continue;
      }
      if (label < 0 || label != std::floor(label) || label >= 2147483647.0)
        return Status::invalidInput(
            at + "label " + std::to_string(label) +
            " is not a class index (a whole number from 0); the model's loss "
            "classifies");
      if (classes > 0 && label >= classes)
        return Status::invalidInput(
            at + "label " + std::to_string(static_cast<int64_t>(label)) +
            " is not below the model's " + std::to_string(classes) +
            " classes");
    }
    labels[static_cast<size_t>(r)] = static_cast<int32_t>(label);
    largest = std::max(largest, labels[static_cast<size_t>(r)]);
  }
  // One-hot rows say their classes; class indices by the largest.
  numClasses = classes > 0 ? classes
               : width > 1 ? static_cast<int32_t>(width)
                           : largest + 1;
  return Status::ok();
}

/// x and y disagree on the examples: "data.npz: x holds 300 examples, y
/// 299" (or the two .npy files by name).
std::string lengthMismatch(const std::string &name, const NumpyArray &x,
                           const NumpyArray &y) {
  std::string tail = " holds " + std::to_string(x.rows()) + " examples, " +
                     y.name() + " " + std::to_string(y.rows()) +
                     ": every array needs one row per example";
  return x.name() == name ? x.name() + tail : name + ": " + x.name() + tail;
}

/// Float targets of `shape` per example, from `values` ([rows, width]
/// doubles read from `what`, of row shape `dims`).
/// `count` targets from `values` into `targets` from element `first` on,
/// checked: no NaN, finite as float32. Messages name the example (`width`
/// targets each).
Status convertTargets(const std::string &what, const double *values,
                      size_t first, size_t count, int64_t width,
                      float *targets) {
  for (size_t i = 0; i < count; ++i) {
    const float target = static_cast<float>(values[i]);
    targets[first + i] = target;
    // An infinite target (or a float64 past float32's range) makes every
    // loss of its batch inf or NaN.
    if (std::isfinite(target))
      continue;
    std::string at = what + ": example " +
                     std::to_string(static_cast<int64_t>(first + i) / width) +
                     ": ";
    if (std::isnan(values[i]))
      return Status::invalidInput(at + "target is NaN");
    return Status::invalidInput(at + "target " + shortNumber(values[i]) +
                                " is not finite as float32");
  }
  return Status::ok();
}

/// Targets of `dims` per example fit an output of `shape` (a scalar one of
/// shape (1,)).
Status checkTargetDims(const std::string &what,
                       const std::vector<int64_t> &dims,
                       const ExampleShape &shape) {
  bool expands = dims.empty() && shape.dims == std::vector<int64_t>{1};
  if (dims != shape.dims && !expands)
    return Status::invalidInput(
        what + ": targets of shape " + numpyShape(dims) +
        " per example; the model's output (and so its loss) takes " +
        numpyShape(shape.dims) + " per example");
  return Status::ok();
}

Status toTargets(const std::string &what, const std::vector<double> &values,
                 int64_t rows, const std::vector<int64_t> &dims,
                 const ExampleShape &shape, std::vector<float> &targets) {
  if (Status s = checkTargetDims(what, dims, shape); !s)
    return s;
  targets.resize(static_cast<size_t>(rows * shape.elements()));
  return convertTargets(what, values.data(), 0, targets.size(),
                        shape.elements(), targets.data());
}

/// The same of array `y` (`rows` examples), read a block of rows at a
/// time: a y as large as x (an autoencoder's, an image-to-image
/// regression's) costs its float32 targets, not a float64 copy besides.
Status toTargets(const NumpyArray &y, int64_t rows, const ExampleShape &shape,
                 std::vector<float> &targets) {
  std::vector<int64_t> dims(y.shape().begin() + 1, y.shape().end());
  if (Status s = checkTargetDims(y.source(), dims, shape); !s)
    return s;
  const int64_t width = shape.elements();
  targets.resize(static_cast<size_t>(rows * width));
  const int64_t block = std::max<int64_t>(1, (int64_t(1) << 20) / width);
  std::vector<double> values(
      static_cast<size_t>(std::min(rows, block) * width));
  for (int64_t first = 0; first < rows; first += block) {
    const int64_t count = std::min(block, rows - first);
    y.rowsToDouble(first, count, values.data());
    if (Status s = convertTargets(
            y.source(), values.data(), static_cast<size_t>(first * width),
            static_cast<size_t>(count * width), width, targets.data());
        !s)
      return s;
  }
  return Status::ok();
}

/// The pair (x, y) of arrays `spec` names: an .npz's members, or two .npy
/// files. `y` stays empty when the spec has none and none is needed.
/// The arrays a memory:NAME spec names (ArraysOptions::inMemory), and NAME.
Status findInMemory(const std::string &spec, const ArraysOptions &o,
                    const std::vector<NumpyArray> *&members,
                    std::string &name) {
  name = spec.substr(std::string(kMemoryPrefix).size());
  auto found =
      o.inMemory ? o.inMemory->find(name) : InMemoryArrays::const_iterator();
  if (!o.inMemory || found == o.inMemory->end())
    return Status::internal(spec + ": no arrays registered under '" + name +
                            "'");
  members = &found->second;
  return Status::ok();
}

Status pickPair(const std::string &where,
                const std::vector<NumpyArray> &members,
                const std::string &inputName, bool needsLabels,
                std::shared_ptr<NumpyArray> &x, std::shared_ptr<NumpyArray> &y,
                std::shared_ptr<NumpyArray> &weights,
                const std::vector<std::string> *allNames = nullptr);

/// The members of an .npz that a model's arrays can come from: those
/// `named` (its inputs' and outputs' names), x, y and sample_weight, and,
/// where `otherIsY` (one output's labels, needed), without a y the one
/// array besides them (Keras' dict form names y after the output layer).
/// The others (class names, metadata beside the data) are never read.
NpzMemberChoice modelMembers(std::vector<std::string> named, bool otherIsY) {
  for (std::string_view fixed :
       {std::string_view("x"), std::string_view("y"), kSampleWeightArray})
    named.emplace_back(fixed);
  return [named, otherIsY](const std::vector<std::string> &all) {
    std::vector<std::string> read, others;
    for (const std::string &n : all)
      (std::find(named.begin(), named.end(), n) != named.end() ? read : others)
          .push_back(n);
    if (otherIsY && std::find(all.begin(), all.end(), "y") == all.end() &&
        others.size() == 1)
      read.push_back(others.front());
    return read;
  };
}

/// 'a', 'b', 'c': names for a message.
std::string quotedNames(const std::vector<std::string> &names) {
  std::string out;
  for (const std::string &n : names)
    out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

/// The arrays a file holds, for a message: every member of an .npz
/// (`all`, which lists the unread too), else the arrays at hand.
std::string quotedNames(const std::vector<std::string> &all,
                        const std::vector<NumpyArray> &members) {
  if (!all.empty())
    return quotedNames(all);
  std::vector<std::string> names;
  for (const NumpyArray &a : members)
    names.push_back(a.name());
  return quotedNames(names);
}

/// The member named sample_weight, if any.
void pickWeights(const std::vector<NumpyArray> &members,
                 std::shared_ptr<NumpyArray> &weights) {
  for (const NumpyArray &a : members)
    if (a.name() == kSampleWeightArray)
      weights = std::make_shared<NumpyArray>(a);
}

Status openPair(const std::string &spec, const ArraysOptions &o,
                std::shared_ptr<NumpyArray> &x, std::shared_ptr<NumpyArray> &y,
                std::shared_ptr<NumpyArray> &weights, std::string &name) {
  const std::string &inputName = o.inputName;
  const bool needsLabels = o.needsLabels;
  if (spec.starts_with(kMemoryPrefix)) {
    const std::vector<NumpyArray> *members = nullptr;
    if (Status s = findInMemory(spec, o, members, name); !s)
      return s;
    return pickPair(name, *members, inputName, needsLabels, x, y, weights);
  }
  if (!spec.starts_with(kArraysPrefix))
    return Status::internal(spec + ": not an arrays: spec");
  std::string rest = spec.substr(std::string(kArraysPrefix).size());
  if (rest.empty())
    return Status::invalidInput(spec + ": name the arrays: arrays:FILE.npz or "
                                       "arrays:X.npy,Y.npy");
  std::vector<std::string> paths = arrayFiles(rest);
  if (paths.size() > 2)
    return Status::invalidInput(spec + ": at most two files, arrays:X.npy,"
                                       "Y.npy (or one .npz)");
  if (paths.size() == 2 || rest.ends_with(".npy")) {
    for (const std::string &path : paths)
      if (path.empty())
        return Status::invalidInput(spec + ": an empty file name");
    // A file not found among two is named with how the spec was read.
    auto open = [&](const std::string &path, NumpyArray &out) -> Status {
      Status s = openNpy(path, out);
      if (!s && s.code() == StatusCode::notFound && paths.size() == 2)
        return Status::notFound(s.message() + " (" + spec +
                                " is read as arrays:X.npy,Y.npy, split at "
                                "the comma)");
      return s;
    };
    x = std::make_shared<NumpyArray>();
    if (Status s = open(paths[0], *x); !s)
      return s;
    name = paths[0];
    if (paths.size() == 2) {
      y = std::make_shared<NumpyArray>();
      if (Status s = open(paths[1], *y); !s)
        return s;
    } else if (needsLabels) {
      return Status::invalidInput(
          spec + ": the labels are missing: arrays:X.npy,Y.npy (a single "
                 ".npy file holds the inputs only, enough for --predict)");
    }
    return Status::ok();
  }
  std::vector<NumpyArray> members;
  std::vector<std::string> all;
  if (Status s =
          openNpz(rest, members, modelMembers({inputName}, needsLabels), &all);
      !s)
    return s;
  name = rest;
  return pickPair(rest, members, inputName, needsLabels, x, y, weights, &all);
}

/// x and y among `members` (an .npz's, or arrays in memory), by name;
/// `allNames`, where given, the names of every array the file holds.
Status pickPair(const std::string &rest, const std::vector<NumpyArray> &members,
                const std::string &inputName, bool needsLabels,
                std::shared_ptr<NumpyArray> &x, std::shared_ptr<NumpyArray> &y,
                std::shared_ptr<NumpyArray> &weights,
                const std::vector<std::string> *allNames) {
  auto find = [&](const std::string &member) -> const NumpyArray * {
    for (const NumpyArray &a : members)
      if (a.name() == member)
        return &a;
    return nullptr;
  };
  const std::string names =
      quotedNames(allNames ? *allNames : std::vector<std::string>{}, members);
  const NumpyArray *xs = find(inputName);
  if (!xs)
    xs = find("x");
  if (!xs)
    return Status::invalidInput(
        rest + ": no array 'x' nor '" + inputName +
        "' (the model's input) among " + names +
        " (save the inputs as np.savez(f, x=..., y=...))");
  const NumpyArray *ys = find("y");
  if (!ys) {
    // Keras' dict form names y after the output layer, a name the plan does
    // not keep: with one array besides x, that is it.
    std::vector<const NumpyArray *> others;
    for (const NumpyArray &a : members)
      if (&a != xs && a.name() != kSampleWeightArray)
        others.push_back(&a);
    // Arrays besides x that an .npz holds unread (several: none is y).
    size_t unread = 0;
    if (allNames)
      for (const std::string &n : *allNames)
        unread += n != xs->name() && n != kSampleWeightArray && !find(n);
    if (others.size() == 1 && unread == 0)
      ys = others[0];
    else if (needsLabels)
      return Status::invalidInput(
          rest + ": no array 'y' (the labels) among " + names +
          (others.empty() && unread == 0
               ? std::string()
               : ": name the labels y, np.savez(f, x=..., y=...)"));
  }
  x = std::make_shared<NumpyArray>(*xs);
  if (ys)
    y = std::make_shared<NumpyArray>(*ys);
  pickWeights(members, weights);
  return Status::ok();
}

/// A model of several inputs: the array of each (named after it) and y,
/// from an .npz or arrays in memory.
Status openInputs(const std::string &spec, const ArraysOptions &o,
                  std::vector<std::shared_ptr<NumpyArray>> &xs,
                  std::shared_ptr<NumpyArray> &y,
                  std::shared_ptr<NumpyArray> &weights, std::string &name) {
  std::vector<NumpyArray> owned;
  std::vector<std::string> all; // an .npz's every member
  const std::vector<NumpyArray> *members = &owned;
  if (spec.starts_with(kMemoryPrefix)) {
    if (Status s = findInMemory(spec, o, members, name); !s)
      return s;
  } else {
    name = spec.substr(std::string(kArraysPrefix).size());
    if (arrayFiles(name).size() > 1 || name.ends_with(".npy"))
      return Status::invalidInput(
          spec +
          ": the model has several inputs: give an .npz with an array "
          "named after each (np.savez(f, " +
          o.inputs.front().first + "=..., ..., y=...))");
    std::vector<std::string> inputs;
    for (const auto &[input, shape] : o.inputs)
      inputs.push_back(input);
    if (Status s =
            openNpz(name, owned, modelMembers(inputs, o.needsLabels), &all);
        !s)
      return s;
  }
  const std::string names = quotedNames(all, *members);
  std::string inputNames;
  for (const auto &[input, shape] : o.inputs)
    inputNames += (inputNames.empty() ? "'" : ", '") + input + "'";
  std::vector<const NumpyArray *> used;
  for (const auto &[input, shape] : o.inputs) {
    const NumpyArray *found = nullptr;
    for (const NumpyArray &a : *members)
      if (a.name() == input)
        found = &a;
    if (!found)
      return Status::invalidInput(name + ": no array '" + input + "' among " +
                                  names +
                                  "; the model's inputs "
                                  "are " +
                                  inputNames + ", each an array of its name");
    used.push_back(found);
    xs.push_back(std::make_shared<NumpyArray>(*found));
  }
  const NumpyArray *ys = nullptr;
  std::vector<const NumpyArray *> others;
  for (const NumpyArray &a : *members) {
    if (a.name() == "y")
      ys = &a;
    if (std::find(used.begin(), used.end(), &a) == used.end() &&
        a.name() != kSampleWeightArray)
      others.push_back(&a);
  }
  if (!ys && others.size() == 1)
    ys = others[0];
  if (!ys && o.needsLabels)
    return Status::invalidInput(name + ": no array 'y' (the labels) among " +
                                names);
  if (ys)
    y = std::make_shared<NumpyArray>(*ys);
  pickWeights(*members, weights);
  return Status::ok();
}

/// Keras' sample_weight: (N,) or (N, 1), one finite number per example.
Status readWeights(const std::string &name, const NumpyArray &x,
                   const NumpyArray &w,
                   std::shared_ptr<const std::vector<float>> &out) {
  const std::vector<int64_t> &dims = w.shape();
  if (dims.empty() || dims.size() > 2 || (dims.size() == 2 && dims[1] != 1))
    return Status::invalidInput(
        w.source() + ": shape " + numpyShape(dims) +
        "; sample_weight holds one weight per example, (N,) or (N, 1)");
  if (w.rows() != x.rows())
    return Status::invalidInput(lengthMismatch(name, x, w));
  std::vector<double> values(static_cast<size_t>(w.rows()));
  w.rowsToDouble(0, w.rows(), values.data());
  auto weights = std::make_shared<std::vector<float>>(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    (*weights)[i] = static_cast<float>(values[i]);
    // Finite as the float32 the loss is weighed in: a float64 1e300 is not.
    if (!std::isfinite((*weights)[i]))
      return Status::invalidInput(
          w.source() + ": sample_weight[" + std::to_string(i) + "] is " +
          shortNumber(values[i]) + "; weights must be finite as float32");
  }
  out = std::move(weights);
  return Status::ok();
}

/// Output `out`'s labels from array `y` (n rows) into its columns
/// [offset, offset + width) of `targets` (rows of `stride` floats).
Status outputTargets(const NumpyArray &y, const ArraysOptions::Output &out,
                     int64_t n, int64_t offset, int64_t stride,
                     std::vector<float> &targets) {
  using Kind = ArraysOptions::Output::Kind;
  std::vector<float> own;
  if (out.kind == Kind::targets) {
    if (Status s = toTargets(y, n, out.shape, own); !s)
      return s;
  } else {
    std::vector<double> values(static_cast<size_t>(n * y.rowElements()));
    y.rowsToDouble(0, n, values.data());
    const std::vector<int64_t> &ys = y.shape();
    if (ys.size() > 2 || y.rowElements() == 0)
      return Status::invalidInput(
          y.source() + ": shape " + numpyShape(ys) + "; output '" + out.name +
          "' takes (N,) or (N, 1) class indices, or (N, " +
          std::to_string(out.classes) + ") one-hot rows");
    std::vector<int32_t> labels;
    int32_t classes = 0;
    // A categorical cross-entropy's rows may be class probabilities.
    std::vector<float> soft;
    if (Status s = toClassLabels(y.source(), values, n, y.rowElements(),
                                 out.classes, out.ignoreClass, labels, classes,
                                 out.kind == Kind::oneHot ? &soft : nullptr);
        !s)
      return s;
    const int64_t width = out.shape.elements();
    own.assign(static_cast<size_t>(n * width), 0.0f);
    if (!soft.empty())
      own = std::move(soft);
    else
      for (int64_t r = 0; r < n; ++r) {
        int32_t label = labels[static_cast<size_t>(r)];
        if (out.kind == Kind::indices)
          own[static_cast<size_t>(r)] = static_cast<float>(label);
        else
          own[static_cast<size_t>(r * width + label)] = 1.0f;
      }
  }
  const int64_t width = out.shape.elements();
  for (int64_t r = 0; r < n; ++r)
    std::copy_n(own.data() + r * width, width,
                targets.data() + r * stride + offset);
  return Status::ok();
}

/// A model of several outputs (ArraysOptions::outputs): its inputs and
/// each output's labels, arrays named after them, in memory.
Status openOutputs(const std::string &spec, const ArraysOptions &o,
                   std::shared_ptr<const Dataset> &memory,
                   std::shared_ptr<const std::vector<float>> &weights) {
  std::vector<NumpyArray> owned;
  std::vector<std::string> all; // an .npz's every member
  const std::vector<NumpyArray> *members = &owned;
  std::string name;
  std::string outputNames;
  for (const ArraysOptions::Output &out : o.outputs)
    outputNames += (outputNames.empty() ? "" : "=..., ") + out.name;
  if (spec.starts_with(kMemoryPrefix)) {
    if (Status s = findInMemory(spec, o, members, name); !s)
      return s;
  } else {
    name = spec.substr(std::string(kArraysPrefix).size());
    if (arrayFiles(name).size() > 1 || name.ends_with(".npy"))
      return Status::invalidInput(
          spec +
          ": the model has several outputs: give an .npz with an "
          "array named after each input and output (np.savez(f, x=..., " +
          outputNames + "=...))");
    std::vector<std::string> named{o.inputName};
    for (const auto &[input, shape] : o.inputs)
      named.push_back(input);
    for (const ArraysOptions::Output &out : o.outputs)
      named.push_back(out.name);
    if (Status s = openNpz(name, owned, modelMembers(named, false), &all); !s)
      return s;
  }
  const std::string names = quotedNames(all, *members);
  auto find = [&](const std::string &member) -> const NumpyArray * {
    for (const NumpyArray &a : *members)
      if (a.name() == member)
        return &a;
    return nullptr;
  };
  // The inputs: each named after itself, or x for a model of one.
  std::vector<std::pair<std::string, ExampleShape>> inputs = o.inputs;
  if (inputs.empty())
    inputs.push_back({o.inputName, o.shape});
  std::vector<const NumpyArray *> xs;
  for (const auto &[input, shape] : inputs) {
    const NumpyArray *a = find(input);
    if (!a && inputs.size() == 1)
      a = find("x");
    if (!a)
      return Status::invalidInput(name + ": no array '" + input + "'" +
                                  (inputs.size() == 1 ? " nor 'x'" : "") +
                                  " (the model's input) among " + names);
    std::vector<int64_t> row(a->shape().begin() + (a->shape().empty() ? 0 : 1),
                             a->shape().end());
    // (N,) feeds an input of shape (1,), as Keras expands it.
    const bool expands =
        a->shape().size() == 1 && shape.dims == std::vector<int64_t>{1};
    if (!expands && (a->shape().empty() || row != shape.dims))
      return Status::invalidInput(
          a->source() + ": shape " + numpyShape(a->shape()) + " (" +
          elementTypeName(a->type()) + "); the model's input '" + input +
          "' takes " + expectedShape(shape) +
          ": one row per example, of the input's shape");
    if (!xs.empty() && a->rows() != xs.front()->rows())
      return Status::invalidInput(lengthMismatch(name, *xs.front(), *a));
    xs.push_back(a);
  }
  const NumpyArray &x = *xs.front();
  const int64_t n = x.rows();
  if (n == 0)
    return Status::invalidInput(x.source() + ": holds no examples");
  int64_t width = 0;
  for (const ArraysOptions::Output &out : o.outputs)
    width += out.shape.elements();
  auto ds = std::make_shared<Dataset>();
  ds->targets.assign(static_cast<size_t>(n * width), 0.0f);
  if (o.needsLabels) {
    int64_t offset = 0;
    for (const ArraysOptions::Output &out : o.outputs) {
      const NumpyArray *y = find(out.name);
      if (!y)
        return Status::invalidInput(
            name + ": no array '" + out.name + "' (the labels of output '" +
            out.name + "') among " + names +
            "; a model of several outputs takes one array named after each "
            "(Keras' fit(x, {" +
            outputNames + ": ...}))");
      if (y->shape().empty() || y->rows() != n)
        return Status::invalidInput(lengthMismatch(name, x, *y));
      if (Status s = outputTargets(*y, out, n, offset, width, ds->targets); !s)
        return s;
      offset += out.shape.elements();
    }
  }
  if (const NumpyArray *w = find(std::string(kSampleWeightArray)))
    if (Status s = readWeights(name, x, *w, weights); !s)
      return s;
  const int64_t bytes = n * o.shape.elements() * int64_t(sizeof(float));
  if (bytes > o.inMemoryBytes)
    return Status::invalidInput(
        name +
        ": a model of several outputs takes its arrays in memory, and "
        "these need " +
        std::to_string(bytes >> 20) + " MiB as float32, more than the " +
        std::to_string(o.inMemoryBytes >> 20) + " MiB available");
  ds->name = x.source();
  ds->shape = o.shape;
  ds->numClasses = static_cast<int32_t>(width);
  ds->labels.assign(static_cast<size_t>(n), 0);
  ds->images.resize(static_cast<size_t>(n * o.shape.elements()));
  // Each example's inputs side by side, in the plan's order.
  const int64_t features = o.shape.elements();
  int64_t offset = 0;
  std::vector<float> rows;
  for (const NumpyArray *a : xs) {
    const int64_t columns = a->rowElements();
    rows.resize(static_cast<size_t>(n * columns));
    a->rowsToFloat(0, n, rows.data());
    for (int64_t r = 0; r < n; ++r)
      std::copy_n(rows.data() + r * columns, columns,
                  ds->images.data() + r * features + offset);
    offset += columns;
  }
  if (Status s = ds->validate(); !s)
    return s;
  memory = std::move(ds);
  return Status::ok();
}

Status openNumpy(const std::string &spec, const ArraysOptions &o,
                 std::shared_ptr<const Dataset> &memory,
                 std::optional<MappedExamples> &mapped,
                 std::shared_ptr<const std::vector<float>> &weights) {
  if (o.outputs.size() > 1)
    return openOutputs(spec, o, memory, weights);
  std::shared_ptr<NumpyArray> x, y, w;
  std::string name;
  // Several inputs: x is the first's array, the others follow it.
  std::vector<std::shared_ptr<NumpyArray>> xs;
  if (o.inputs.size() > 1) {
    if (Status s = openInputs(spec, o, xs, y, w, name); !s)
      return s;
    x = xs.front();
  } else if (Status s = openPair(spec, o, x, y, w, name); !s) {
    return s;
  }
  // A prediction reads the inputs alone: labels and weights the file also
  // holds are not checked, as Keras' predict(x) ignores them.
  if (!o.needsLabels) {
    y.reset();
    w.reset();
  }
  // x: one row per example, of the input's shape.
  auto checkShape = [&](const NumpyArray &a, const std::string &input,
                        const ExampleShape &shape) -> Status {
    std::vector<int64_t> row(a.shape().begin() + (a.shape().empty() ? 0 : 1),
                             a.shape().end());
    // (N,) feeds an input of shape (1,), as Keras expands it.
    if (a.shape().size() == 1 && shape.dims == std::vector<int64_t>{1})
      return Status::ok();
    if (a.shape().empty() || row != shape.dims)
      return Status::invalidInput(
          a.source() + ": shape " + numpyShape(a.shape()) + " (" +
          elementTypeName(a.type()) + "); the model's input '" + input +
          "' takes " + expectedShape(shape) +
          ": one row per example, of the input's shape");
    return Status::ok();
  };
  if (xs.empty()) {
    if (Status s = checkShape(*x, o.inputName, o.shape); !s)
      return s;
  } else {
    for (size_t i = 0; i < xs.size(); ++i) {
      if (Status s = checkShape(*xs[i], o.inputs[i].first, o.inputs[i].second);
          !s)
        return s;
      if (xs[i]->rows() != x->rows())
        return Status::invalidInput(lengthMismatch(name, *x, *xs[i]));
    }
  }
  const int64_t n = x->rows();
  if (n == 0)
    return Status::invalidInput(x->source() + ": holds no examples");
  if (w)
    if (Status s = readWeights(name, *x, *w, weights); !s)
      return s;
  // y: class labels, one per example.
  std::vector<int32_t> labels(static_cast<size_t>(n), 0);
  int32_t numClasses = std::max<int32_t>(o.classes, 1);
  std::vector<float> targets;
  const bool dense = o.targetShape.rank() > 0;
  if (dense)
    numClasses = static_cast<int32_t>(o.targetShape.elements());
  if (y && dense) {
    if (y->shape().empty() || y->rows() != n)
      return Status::invalidInput(lengthMismatch(name, *x, *y));
    if (Status s = toTargets(*y, n, o.targetShape, targets); !s)
      return s;
  } else if (dense) {
    targets.assign(static_cast<size_t>(n * numClasses), 0.0f);
  } else if (y) {
    const std::vector<int64_t> &ys = y->shape();
    if (ys.empty() || ys.size() > 2 || y->rowElements() == 0)
      return Status::invalidInput(
          y->source() + ": shape " + numpyShape(ys) +
          "; labels are (N,) or (N, 1) class indices, or (N, C) one-hot rows");
    if (y->rows() != n)
      return Status::invalidInput(lengthMismatch(name, *x, *y));
    std::vector<double> values(static_cast<size_t>(n * y->rowElements()));
    y->rowsToDouble(0, n, values.data());
    if (Status s = toClassLabels(y->source(), values, n, y->rowElements(),
                                 o.classes, o.ignoreClass, labels, numClasses,
                                 o.softLabels ? &targets : nullptr);
        !s)
      return s;
  }
  const int64_t bytes = n * o.shape.elements() * int64_t(sizeof(float));
  if (!xs.empty() && bytes > o.inMemoryBytes)
    return Status::invalidInput(
        name +
        ": a model of several inputs takes its arrays in memory, and "
        "these need " +
        std::to_string(bytes >> 20) + " MiB as float32, more than the " +
        std::to_string(o.inMemoryBytes >> 20) + " MiB available");
  if (bytes <= o.inMemoryBytes) {
    auto ds = std::make_shared<Dataset>();
    ds->name = x->source();
    ds->shape = o.shape;
    ds->numClasses = numClasses;
    ds->images.resize(static_cast<size_t>(n * o.shape.elements()));
    if (xs.empty()) {
      x->rowsToFloat(0, n, ds->images.data());
    } else {
      // Each example's inputs side by side, in the plan's order.
      const int64_t width = o.shape.elements();
      int64_t offset = 0;
      std::vector<float> rows;
      for (const std::shared_ptr<NumpyArray> &a : xs) {
        const int64_t columns = a->rowElements();
        rows.resize(static_cast<size_t>(n * columns));
        a->rowsToFloat(0, n, rows.data());
        for (int64_t r = 0; r < n; ++r)
          std::copy_n(rows.data() + r * columns, columns,
                      ds->images.data() + r * width + offset);
        offset += columns;
      }
    }
    ds->labels = std::move(labels);
    ds->targets = std::move(targets);
    if (o.ignoreClass)
      ds->ignoredLabel = static_cast<int32_t>(*o.ignoreClass);
    if (Status s = ds->validate(); !s)
      return s;
    memory = std::move(ds);
    return Status::ok();
  }
  auto list = std::make_shared<ExampleList>();
  list->name = x->source();
  list->numClasses = numClasses;
  list->labels = std::move(labels);
  list->targets = std::move(targets);
  if (o.ignoreClass)
    list->ignoredLabel = static_cast<int32_t>(*o.ignoreClass);
  if (Status s = list->validate(); !s)
    return s;
  mapped = MappedExamples{std::move(list), std::move(x), o.shape};
  return Status::ok();
}

Status openCsv(const std::string &spec, const ArraysOptions &o,
               std::shared_ptr<const Dataset> &memory) {
  std::string path = spec.substr(std::string(kCsvPrefix).size());
  if (path.empty())
    return Status::invalidInput(spec + ": name the file, csv:FILE");
  if (o.outputs.size() > 1)
    return Status::invalidInput(
        spec + ": the model has several outputs, whose labels a CSV file "
               "does not name: give arrays:FILE.npz with an array named "
               "after each output");
  CsvTable table;
  if (Status s = readCsv(path, table); !s)
    return s;
  auto indexOf = [&](const std::string &column, const char *flag,
                     int &out) -> Status {
    out = table.column(column);
    if (out < 0) {
      std::string names;
      for (const std::string &c : table.columns)
        names += (names.empty() ? "'" : ", '") + c + "'";
      return Status::invalidInput(path + ": " + flag + " '" + column +
                                  "': no such column (the columns: " + names +
                                  ")");
    }
    return Status::ok();
  };
  std::vector<int> labelColumns, featureColumns;
  if (o.needsLabels && o.labelColumns.empty())
    return Status::invalidInput(path + ": say which columns are the labels, "
                                       "--label-columns NAME[,NAME]");
  for (const std::string &c : o.labelColumns) {
    int i;
    if (Status s = indexOf(c, "--label-columns", i); !s)
      return s;
    labelColumns.push_back(i);
  }
  for (const std::string &c : o.featureColumns) {
    int i;
    if (Status s = indexOf(c, "--feature-columns", i); !s)
      return s;
    if (std::find(labelColumns.begin(), labelColumns.end(), i) !=
        labelColumns.end())
      return Status::invalidInput(path + ": column '" + c +
                                  "' is both a label and a feature");
    if (std::find(featureColumns.begin(), featureColumns.end(), i) !=
        featureColumns.end())
      return Status::invalidInput(path + ": --feature-columns names '" + c +
                                  "' twice");
    featureColumns.push_back(i);
  }
  if (o.featureColumns.empty())
    for (int i = 0; i < static_cast<int>(table.columns.size()); ++i)
      if (std::find(labelColumns.begin(), labelColumns.end(), i) ==
          labelColumns.end())
        featureColumns.push_back(i);
  const int64_t width = static_cast<int64_t>(featureColumns.size());
  if (o.shape.elements() != width || o.shape.rank() != 1)
    return Status::invalidInput(
        path + ": " + std::to_string(width) +
        " feature columns; the model's input '" + o.inputName + "' takes " +
        expectedShape(o.shape) +
        (o.shape.rank() == 1 ? std::string(": name the features with "
                                           "--feature-columns")
                             : std::string(": a CSV file feeds a vector "
                                           "input")));
  const int64_t n = table.rows;
  const size_t columns = table.columns.size();
  auto ds = std::make_shared<Dataset>();
  ds->name = path;
  ds->shape = o.shape;
  ds->images.resize(static_cast<size_t>(n * width));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < width; ++j)
      ds->images[static_cast<size_t>(r * width + j)] = static_cast<float>(
          table.values[static_cast<size_t>(r) * columns +
                       static_cast<size_t>(featureColumns[j])]);
  ds->labels.assign(static_cast<size_t>(n), 0);
  ds->numClasses = std::max<int32_t>(o.classes, 1);
  // The label columns' values, [rows, label columns].
  const int64_t lw = static_cast<int64_t>(labelColumns.size());
  std::vector<double> values(static_cast<size_t>(n * lw));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < lw; ++j)
      values[static_cast<size_t>(r * lw + j)] =
          table.values[static_cast<size_t>(r) * columns +
                       static_cast<size_t>(labelColumns[j])];
  if (o.targetShape.rank() > 0) {
    ds->numClasses = static_cast<int32_t>(o.targetShape.elements());
    if (labelColumns.empty() || !o.needsLabels)
      ds->targets.assign(static_cast<size_t>(n * ds->numClasses), 0.0f);
    else if (Status s = toTargets(path + ": --label-columns", values, n,
                                  lw == 1 ? std::vector<int64_t>{}
                                          : std::vector<int64_t>{lw},
                                  o.targetShape, ds->targets);
             !s)
      return s;
  } else if (!labelColumns.empty() && o.needsLabels) {
    std::string what = path + ": --label-columns";
    if (Status s = toClassLabels(what, values, n, lw, o.classes, o.ignoreClass,
                                 ds->labels, ds->numClasses,
                                 o.softLabels ? &ds->targets : nullptr);
        !s)
      return s;
  }
  if (o.ignoreClass)
    ds->ignoredLabel = static_cast<int32_t>(*o.ignoreClass);
  if (Status s = ds->validate(); !s)
    return s;
  memory = std::move(ds);
  return Status::ok();
}

} // namespace

MapFn MappedExamples::loader() const {
  std::shared_ptr<const NumpyArray> x = features;
  const int64_t first = firstRow;
  return [x, first](Example &e) -> Status {
    if (e.index < 0 || first + e.index >= x->rows())
      return Status::internal(x->source() + ": no example " +
                              std::to_string(first + e.index));
    e.image.resize(static_cast<size_t>(x->rowElements()));
    x->rowsToFloat(first + e.index, 1, e.image.data());
    return Status::ok();
  };
}

bool isArraysSpec(const std::string &spec) {
  return spec.starts_with(kArraysPrefix) || spec.starts_with(kCsvPrefix) ||
         spec.starts_with(kMemoryPrefix);
}

Status openArrays(const std::string &spec, const ArraysOptions &options,
                  std::shared_ptr<const Dataset> &memory,
                  std::optional<MappedExamples> &mapped,
                  std::shared_ptr<const std::vector<float>> &weights) {
  if (!options.shape.positive())
    return Status::internal(spec + ": the model's input has no shape");
  if (spec.starts_with(kCsvPrefix))
    return openCsv(spec, options, memory);
  return openNumpy(spec, options, memory, mapped, weights);
}

} // namespace graph::runtime::data

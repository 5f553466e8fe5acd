//===- KerasWeights.cpp - Keras' own weights files, read ------------------===//

#include "runtime/checkpoint/KerasWeights.h"

#include "runtime/checkpoint/Hdf5.h"
#include "runtime/checkpoint/KerasNaming.h"
#include "runtime/checkpoint/KerasWeightsWriter.h"
#include "runtime/core/Kernel.h"

#include <hdf5.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <regex>
#include <set>
#include <utility>

namespace graph::runtime::checkpoint {

namespace {

/// An HDF5 object's path for messages: "" is the root.
std::string shown(const std::string &path) { return path.empty() ? "/" : path; }
std::string join(const std::string &parent, const std::string &child) {
  return parent + "/" + child;
}

/// An open HDF5 file and the name its errors carry: the path, or
/// "<archive>: model.weights.h5".
struct H5File {
  std::string source;
  Hid file;

  /// An error about `object`: the file, the object, the fault, and HDF5's
  /// own account when the fault was a failed HDF5 call.
  Status error(const std::string &object, const std::string &fault) const {
    std::string detail = hdf5Detail();
    return Status::error(source + ": " + shown(object) + ": " + fault +
                         (detail.empty() ? "" : " (HDF5: " + detail + ")"));
  }
};

/// Far more than any Keras file holds; bounds what a hostile file can make
/// us list, recurse into or allocate.
constexpr size_t kMaxMembers = 100'000;
constexpr int kMaxDepth = 16;
constexpr size_t kMaxAttributeBytes = size_t(64) << 20;

std::vector<std::string> split(const std::string &path) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (true) {
    size_t slash = path.find('/', begin);
    parts.push_back(path.substr(begin, slash - begin));
    if (slash == std::string::npos)
      return parts;
    begin = slash + 1;
  }
}

/// Opens `relative` under `parent` (at `parentPath`) one link at a time, as
/// Keras' safe_get_h5_group does: each link must be a hard link (a soft or
/// external link could point anywhere, another file included), and the
/// object must be a `want` (H5I_GROUP or H5I_DATASET). `path` receives its
/// path.
Status openPath(const H5File &f, hid_t parent, const std::string &parentPath,
                const std::string &relative, H5I_type_t want, Hid &out,
                std::string &path) {
  path = parentPath;
  std::vector<std::string> parts = split(relative);
  if (std::find(parts.begin(), parts.end(), "") != parts.end())
    return f.error(join(parentPath, relative),
                   "not a valid object name (an empty path component)");
  hid_t at = parent;
  Hid held;
  for (size_t i = 0; i < parts.size(); ++i) {
    const char *name = parts[i].c_str();
    path = join(path, parts[i]);
    htri_t exists = H5Lexists(at, name, H5P_DEFAULT);
    if (exists < 0)
      return f.error(path, "cannot look it up");
    if (exists == 0)
      return f.error(path, "not in the file");
    H5L_info_t info;
    if (H5Lget_info(at, name, &info, H5P_DEFAULT) < 0)
      return f.error(path, "cannot read its link");
    if (info.type != H5L_TYPE_HARD)
      return f.error(path,
                     std::string("is a ") +
                         (info.type == H5L_TYPE_SOFT       ? "soft"
                          : info.type == H5L_TYPE_EXTERNAL ? "external"
                                                           : "user-defined") +
                         " link, which Keras never writes and which could "
                         "point anywhere, another file included (refused)");
    Hid object(H5Oopen(at, name, H5P_DEFAULT), H5Oclose);
    if (!object)
      return f.error(path, "cannot open it");
    H5I_type_t need = i + 1 == parts.size() ? want : H5I_GROUP;
    if (H5Iget_type(object.get()) != need)
      return f.error(path,
                     need == H5I_GROUP ? "is not a group" : "is not a dataset");
    held = std::move(object);
    at = held.get();
  }
  out = std::move(held);
  return Status::ok();
}

struct Link {
  std::string name;
  H5L_type_t type;
};

herr_t collectLink(hid_t, const char *name, const H5L_info_t *info,
                   void *data) {
  auto &links = *static_cast<std::vector<Link> *>(data);
  if (links.size() >= kMaxMembers)
    return 1; // stop: H5Literate returns this positive value
  links.push_back({name, info->type});
  return 0;
}

/// The links in `group`, by name.
Status listLinks(const H5File &f, hid_t group, const std::string &path,
                 std::vector<Link> &links) {
  herr_t result = H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, nullptr,
                             collectLink, &links);
  if (result < 0)
    return f.error(path, "cannot list its members");
  if (result > 0)
    return f.error(path, "holds more than " + std::to_string(kMaxMembers) +
                             " members; no Keras weights file does");
  return Status::ok();
}

/// Reads string attribute `name` of `object` (at `path`): a scalar or an
/// array of fixed- or variable-length strings, as h5py writes bytes and
/// str. An empty array of any type is an empty list (Keras writes
/// np.asarray([]), float64, for a layer without weights). `found` is false
/// when there is no such attribute.
Status readStrings(const H5File &f, hid_t object, const std::string &path,
                   const std::string &name, std::vector<std::string> &out,
                   bool &found) {
  out.clear();
  found = false;
  std::string where = shown(path) + " attribute '" + name + "'";
  htri_t exists = H5Aexists(object, name.c_str());
  if (exists < 0)
    return f.error(path, "cannot look up attribute '" + name + "'");
  if (exists == 0)
    return Status::ok();
  found = true;
  auto fail = [&](const std::string &fault) {
    std::string detail = hdf5Detail();
    return Status::error(f.source + ": " + where + ": " + fault +
                         (detail.empty() ? "" : " (HDF5: " + detail + ")"));
  };
  Hid attribute(H5Aopen(object, name.c_str(), H5P_DEFAULT), H5Aclose);
  if (!attribute)
    return fail("cannot open it");
  Hid type(H5Aget_type(attribute.get()), H5Tclose);
  Hid space(H5Aget_space(attribute.get()), H5Sclose);
  if (!type || !space)
    return fail("cannot read its type");
  hssize_t count = H5Sget_simple_extent_type(space.get()) == H5S_NULL
                       ? 0
                       : H5Sget_simple_extent_npoints(space.get());
  if (count < 0)
    return fail("cannot read its size");
  if (count == 0)
    return Status::ok();
  if (H5Tget_class(type.get()) != H5T_STRING)
    return fail("is not a list of strings");
  size_t n = static_cast<size_t>(count);
  htri_t variable = H5Tis_variable_str(type.get());
  if (variable < 0)
    return fail("cannot read its type");
  if (variable) {
    if (n > kMaxAttributeBytes / sizeof(char *))
      return fail("holds " + std::to_string(n) + " strings; too many");
    Hid memory(H5Tcopy(H5T_C_S1), H5Tclose);
    if (!memory || H5Tset_size(memory.get(), H5T_VARIABLE) < 0 ||
        H5Tset_cset(memory.get(), H5Tget_cset(type.get())) < 0)
      return fail("cannot read it");
    std::vector<char *> strings(n, nullptr);
    if (H5Aread(attribute.get(), memory.get(), strings.data()) < 0)
      return fail("cannot read it");
    for (char *s : strings) {
      out.emplace_back(s ? s : "");
      H5free_memory(s);
    }
    return Status::ok();
  }
  size_t size = H5Tget_size(type.get());
  if (size == 0 || n > kMaxAttributeBytes / size)
    return fail("holds " + std::to_string(n) + " strings of " +
                std::to_string(size) + " bytes; too many");
  std::vector<char> bytes(n * size);
  if (H5Aread(attribute.get(), type.get(), bytes.data()) < 0)
    return fail("cannot read it");
  bool spacePadded = H5Tget_strpad(type.get()) == H5T_STR_SPACEPAD;
  for (size_t i = 0; i < n; ++i) {
    const char *s = bytes.data() + i * size;
    std::string text(s, strnlen(s, size));
    if (spacePadded)
      text.erase(text.find_last_not_of(' ') + 1);
    out.push_back(std::move(text));
  }
  return Status::ok();
}

/// Keras' load_attributes_from_hdf5_group: attribute `name`, or, for a
/// list that outgrew one HDF5 object header, `name`0, `name`1, ...
Status readKerasStrings(const H5File &f, hid_t object, const std::string &path,
                        const std::string &name, std::vector<std::string> &out,
                        bool &found) {
  if (Status s = readStrings(f, object, path, name, out, found); !s || found)
    return s;
  for (size_t chunk = 0; chunk < kMaxMembers; ++chunk) {
    std::vector<std::string> part;
    bool partFound = false;
    if (Status s = readStrings(f, object, path, name + std::to_string(chunk),
                               part, partFound);
        !s)
      return s;
    if (!partFound)
      return Status::ok();
    found = true;
    out.insert(out.end(), part.begin(), part.end());
  }
  return Status::ok();
}

// ---------------------------------------------------------------------------
// The file's layers and weights
// ---------------------------------------------------------------------------

/// One weight in the file, described, not yet read.
struct FileWeight {
  /// Its dataset's path: how messages and the report name it.
  std::string path;
  std::vector<int64_t> shape;
  /// "float32", "float64", "float16", "bfloat16", or what else it is.
  std::string dtype;
  enum class Kind {
    /// An HDF5 float of 2, 4 or 8 bytes: HDF5 converts it to float32.
    floating,
    /// Keras' bfloat16: 2-byte opaque data with attribute dtype="bfloat16".
    bfloat16,
    /// Anything else: refused.
    other,
  } kind = Kind::other;
};

/// One layer's weights in the file, in the layer's order.
struct FileLayer {
  /// The layer it belongs to; empty when the file does not say.
  std::string name;
  /// Its group's path, for messages.
  std::string where;
  /// Why `name` is empty.
  std::string why;
  std::vector<FileWeight> weights;
};

/// Describes dataset `dataset` at `path`, refusing storage outside the file.
Status describeDataset(const H5File &f, hid_t dataset, const std::string &path,
                       FileWeight &w) {
  w.path = path;
  Hid space(H5Dget_space(dataset), H5Sclose);
  if (!space)
    return f.error(path, "cannot read its shape");
  if (H5Sget_simple_extent_type(space.get()) == H5S_NULL)
    return f.error(path, "holds no data (a null dataspace)");
  int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0 || rank > H5S_MAX_RANK)
    return f.error(path, "cannot read its shape");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  if (H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0)
    return f.error(path, "cannot read its shape");
  for (hsize_t d : dims) {
    if (d > static_cast<hsize_t>(std::numeric_limits<int64_t>::max()))
      return f.error(path, "has a dimension too large to be a tensor's");
    w.shape.push_back(static_cast<int64_t>(d));
  }

  Hid create(H5Dget_create_plist(dataset), H5Pclose);
  if (!create)
    return f.error(path, "cannot read its storage");
  if (H5Pget_layout(create.get()) == H5D_VIRTUAL ||
      H5Pget_external_count(create.get()) != 0)
    return f.error(path, "keeps its data in other files (a virtual dataset "
                         "or external storage), which Keras never writes "
                         "(refused: a weights file must be self-contained)");

  Hid type(H5Dget_type(dataset), H5Tclose);
  if (!type)
    return f.error(path, "cannot read its type");
  size_t size = H5Tget_size(type.get());
  std::string bits = std::to_string(8 * size);
  switch (H5Tget_class(type.get())) {
  case H5T_FLOAT:
    w.dtype = "float" + bits;
    if (size == 2 || size == 4 || size == 8)
      w.kind = FileWeight::Kind::floating;
    return Status::ok();
  case H5T_INTEGER:
    w.dtype = (H5Tget_sign(type.get()) == H5T_SGN_NONE ? "uint" : "int") + bits;
    return Status::ok();
  case H5T_STRING:
    w.dtype = "string";
    return Status::ok();
  case H5T_ENUM:
    w.dtype = "enum (h5py's bool)";
    return Status::ok();
  case H5T_OPAQUE: {
    std::vector<std::string> tag;
    bool found = false;
    if (Status s = readStrings(f, dataset, path, "dtype", tag, found); !s)
      return s;
    if (size == 2 && tag.size() == 1 && tag[0] == "bfloat16") {
      w.dtype = "bfloat16";
      w.kind = FileWeight::Kind::bfloat16;
    } else {
      w.dtype = "opaque " + std::to_string(size) + "-byte data";
    }
    return Status::ok();
  }
  default:
    w.dtype = "a compound or other non-numeric HDF5 type";
    return Status::ok();
  }
}

/// Opens and describes the dataset `relative` under `group` (at `path`).
Status describeWeight(const H5File &f, hid_t group, const std::string &path,
                      const std::string &relative, FileWeight &w) {
  Hid dataset;
  std::string datasetPath;
  if (Status s =
          openPath(f, group, path, relative, H5I_DATASET, dataset, datasetPath);
      !s)
    return s;
  return describeDataset(f, dataset.get(), datasetPath, w);
}

/// Reads weight `w` as float32 into `out`, which has its element count.
Status readWeight(const H5File &f, const FileWeight &w,
                  std::vector<float> &out) {
  Hid dataset;
  std::string path;
  if (Status s = openPath(f, f.file.get(), "", w.path.substr(1), H5I_DATASET,
                          dataset, path);
      !s)
    return s;
  if (w.kind == FileWeight::Kind::floating) {
    // HDF5 converts float64 and float16 (and byte order) as it reads.
    if (H5Dread(dataset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                out.data()) < 0)
      return f.error(w.path, "cannot read its data");
    return Status::ok();
  }
  Hid type(H5Dget_type(dataset.get()), H5Tclose);
  std::vector<unsigned char> raw(2 * out.size());
  if (!type || H5Dread(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT,
                       raw.data()) < 0)
    return f.error(w.path, "cannot read its data");
  // bfloat16 is float32's upper half; numpy wrote it little-endian.
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = std::bit_cast<float>(
        (uint32_t(raw[2 * i]) | uint32_t(raw[2 * i + 1]) << 8) << 16);
  return Status::ok();
}

// --- Legacy HDF5 (keras/src/legacy/saving/legacy_h5_format.py) ------------

Status readLegacyLayers(const H5File &f, std::vector<FileLayer> &layers) {
  hid_t root = f.file.get();
  std::string rootPath;
  Hid modelWeights;
  std::vector<std::string> layerNames;
  bool found = false;
  if (Status s =
          readKerasStrings(f, root, rootPath, "layer_names", layerNames, found);
      !s)
    return s;
  if (!found) {
    // model.save("m.h5") keeps the weights under /model_weights, where
    // Keras' load_weights looks too.
    if (Status s = openPath(f, root, "", "model_weights", H5I_GROUP,
                            modelWeights, rootPath);
        !s)
      return s;
    root = modelWeights.get();
    if (Status s = readKerasStrings(f, root, rootPath, "layer_names",
                                    layerNames, found);
        !s)
      return s;
    if (!found)
      return f.error(rootPath, "has no attribute layer_names");
  }
  std::vector<std::string> backend;
  if (Status s = readStrings(f, root, rootPath, "backend", backend, found); !s)
    return s;
  if (backend.size() == 1 && backend[0] == "theano")
    return f.error(rootPath,
                   "was written by Keras with the Theano backend, whose "
                   "convolution kernels are flipped; graphrun reads "
                   "TensorFlow-layout weights only");

  std::set<std::string> seen;
  for (const std::string &name : layerNames) {
    if (!seen.insert(name).second)
      return f.error(rootPath, "layer_names lists '" + name + "' twice");
    FileLayer layer;
    layer.name = name;
    Hid group;
    if (Status s =
            openPath(f, root, rootPath, name, H5I_GROUP, group, layer.where);
        !s)
      return Status::error(s.message() + " (layer_names lists it)");
    std::vector<std::string> weightNames;
    if (Status s = readKerasStrings(f, group.get(), layer.where, "weight_names",
                                    weightNames, found);
        !s)
      return s;
    for (const std::string &weightName : weightNames) {
      FileWeight w;
      if (Status s = describeWeight(f, group.get(), layer.where, weightName, w);
          !s)
        return Status::error(s.message() + " (listed in " + layer.where +
                             "'s weight_names)");
      layer.weights.push_back(std::move(w));
    }
    if (!layer.weights.empty())
      layers.push_back(std::move(layer));
  }

  // Weights of the model itself, not of a layer (Keras 3 and late tf.keras
  // write the group, almost always empty).
  const char *top = "top_level_model_weights";
  if (H5Lexists(root, top, H5P_DEFAULT) > 0) {
    FileLayer layer;
    layer.why = "the model's own weights, not a layer's";
    Hid group;
    if (Status s =
            openPath(f, root, rootPath, top, H5I_GROUP, group, layer.where);
        !s)
      return s;
    std::vector<std::string> weightNames;
    if (Status s = readKerasStrings(f, group.get(), layer.where, "weight_names",
                                    weightNames, found);
        !s)
      return s;
    for (const std::string &weightName : weightNames) {
      FileWeight w;
      if (Status s = describeWeight(f, group.get(), layer.where, weightName, w);
          !s)
        return s;
      layer.weights.push_back(std::move(w));
    }
    if (!layer.weights.empty())
      layers.push_back(std::move(layer));
  }
  return Status::ok();
}

// --- Keras 3 (keras/src/saving/saving_lib.py, H5IOStore) ------------------

/// Which layer each group under /layers is, from a .keras archive's
/// config.json: Keras names the groups by replaying _get_unique_name over
/// model.layers, which config.json lists in order. Empty when the config
/// cannot say (it is only needed for files that record no names).
std::map<std::string, std::string> groupsOfConfig(const std::string &text) {
  std::vector<ConfigLayer> layers;
  std::string modelName;
  if (!configLayers(text, layers, modelName))
    return {};
  std::map<std::string, std::string> groups;
  for (const ConfigLayer &layer : layers)
    groups[layer.group] = layer.name;
  return groups;
}

/// A `vars` group: datasets "0", "1", ..., the layer's variables in order.
Status readVars(const H5File &f, hid_t vars, const std::string &varsPath,
                const std::string &group,
                const std::map<std::string, std::string> &configGroups,
                std::vector<FileLayer> &layers) {
  std::vector<Link> links;
  if (Status s = listLinks(f, vars, varsPath, links); !s)
    return s;
  if (links.empty())
    return Status::ok(); // a layer without weights (Flatten, InputLayer)
  FileLayer layer;
  layer.where = varsPath;
  std::set<std::string> members;
  for (const Link &link : links)
    members.insert(link.name);
  for (size_t i = 0; i < links.size(); ++i) {
    std::string index = std::to_string(i);
    if (!members.count(index))
      return f.error(varsPath, "holds " + std::to_string(links.size()) +
                                   " members but no '" + index +
                                   "' (Keras 3 names a layer's variables 0, "
                                   "1, ... in order)");
    FileWeight w;
    if (Status s = describeWeight(f, vars, varsPath, index, w); !s)
      return s;
    layer.weights.push_back(std::move(w));
  }
  std::vector<std::string> name;
  bool found = false;
  if (Status s = readStrings(f, vars, varsPath, "name", name, found); !s)
    return s;
  auto config = configGroups.find(group);
  if (name.size() == 1 && !name[0].empty())
    layer.name = name[0];
  else if (config != configGroups.end())
    layer.name = config->second;
  else
    layer.why = "records no layer name (Keras 3 names the group after the "
                "layer's class, and only recent Keras, 3.15 checked, also "
                "records the layer's name): give the .keras archive, whose "
                "config.json maps the groups, or save the weights again "
                "with a recent Keras";
  layers.push_back(std::move(layer));
  return Status::ok();
}

/// Finds every `vars` group under `group` (at `path`): the layer's own,
/// and those of nested layers and models.
Status walkKeras3(const H5File &f, hid_t group, const std::string &path,
                  const std::string &top, int depth, size_t &visited,
                  const std::map<std::string, std::string> &configGroups,
                  std::vector<FileLayer> &layers) {
  if (depth > kMaxDepth)
    return f.error(path, "nests deeper than " + std::to_string(kMaxDepth) +
                             " groups; no Keras model does");
  std::vector<Link> links;
  if (Status s = listLinks(f, group, path, links); !s)
    return s;
  for (const Link &link : links) {
    if (++visited > kMaxMembers)
      return f.error(path, "holds more than " + std::to_string(kMaxMembers) +
                               " groups; no Keras weights file does");
    std::string childPath = join(path, link.name);
    if (link.type != H5L_TYPE_HARD) {
      Hid unused;
      std::string unusedPath;
      return openPath(f, group, path, link.name, H5I_GROUP, unused,
                      unusedPath); // says which kind of link, and refuses it
    }
    Hid child(H5Oopen(group, link.name.c_str(), H5P_DEFAULT), H5Oclose);
    if (!child)
      return f.error(childPath, "cannot open it");
    if (H5Iget_type(child.get()) != H5I_GROUP)
      continue; // Keras keeps datasets in vars groups only
    if (link.name == "vars") {
      // The layer's group relative to the top ("conv2d_1"), as
      // groupsOfConfig names them.
      std::string key =
          path.size() > top.size() ? path.substr(top.size() + 1) : "";
      if (Status s =
              readVars(f, child.get(), childPath, key, configGroups, layers);
          !s)
        return s;
      continue;
    }
    if (Status s = walkKeras3(f, child.get(), childPath, top, depth + 1,
                              visited, configGroups, layers);
        !s)
      return s;
  }
  return Status::ok();
}

Status readKeras3Layers(const H5File &f, const std::string &top,
                        const std::map<std::string, std::string> &configGroups,
                        std::vector<FileLayer> &layers, WeightsReport &report) {
  hid_t root = f.file.get();
  Hid group;
  std::string topPath;
  if (Status s = openPath(f, root, "", top, H5I_GROUP, group, topPath); !s)
    return s;
  size_t visited = 0;
  if (Status s = walkKeras3(f, group.get(), topPath, topPath, 1, visited,
                            configGroups, layers);
      !s)
    return s;
  // The model's own variables (none in a Keras model built of layers).
  if (H5Lexists(root, "vars", H5P_DEFAULT) > 0) {
    Hid vars;
    std::string varsPath;
    if (Status s = openPath(f, root, "", "vars", H5I_GROUP, vars, varsPath); !s)
      return s;
    size_t before = layers.size();
    if (Status s = readVars(f, vars.get(), varsPath, "", {}, layers); !s)
      return s;
    if (layers.size() > before) {
      layers.back().name.clear();
      layers.back().why = "the model's own variables, not a layer's";
    }
  }
  if (H5Lexists(root, "optimizer", H5P_DEFAULT) > 0)
    report.skipped.emplace_back(
        "/optimizer", "the optimizer's state, read apart from the weights");
  return Status::ok();
}

// ---------------------------------------------------------------------------
// Matching the file's layers to the model's
// ---------------------------------------------------------------------------

/// "a, b, c" (at most `limit` names, then "...").
std::string listed(const std::vector<std::string> &names, size_t limit = 20) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < limit; ++i)
    out += (i ? ", " : "") + names[i];
  if (names.size() > limit)
    out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out.empty() ? "none" : out;
}

Status assignWeights(const H5File &f, const std::vector<FileLayer> &file,
                     const std::vector<int> &which,
                     MirroredVariables &variables, WeightsMatch match,
                     WeightsReport &report) {
  const bool exact = match == WeightsMatch::exact;
  std::vector<ModelLayer> model = modelLayers(variables, which);
  std::set<std::string> modelNames;
  std::vector<std::string> modelList;
  for (const ModelLayer &layer : model) {
    modelNames.insert(layer.name);
    modelList.push_back(layer.name);
  }
  std::map<std::string, const FileLayer *> byName;
  std::map<std::string, std::vector<std::string>> ambiguous;
  std::vector<std::string> fileList;
  for (const FileLayer &layer : file) {
    if (layer.name.empty())
      continue;
    auto [it, fresh] = byName.emplace(layer.name, &layer);
    if (fresh) {
      fileList.push_back(layer.name);
    } else {
      auto &groups = ambiguous[layer.name];
      if (groups.empty())
        groups.push_back(it->second->where);
      groups.push_back(layer.where);
    }
  }
  auto variable = [&](int v) {
    return "'" + variables.name(v) + "' " + shapeText(variables.shape(v));
  };
  auto weightsOf = [&](const FileLayer &layer) {
    std::vector<std::string> paths;
    for (const FileWeight &w : layer.weights)
      paths.push_back(w.path + " " + shapeText(w.shape));
    return listed(paths);
  };

  // What the file holds that the model has no place for.
  for (const FileLayer &layer : file) {
    std::string why;
    if (layer.name.empty())
      why = layer.why;
    else if (ambiguous.count(layer.name))
      why = "groups " + listed(ambiguous[layer.name]) + " all name layer '" +
            layer.name + "'";
    else if (!modelNames.count(layer.name))
      why = "layer '" + layer.name + "' is not in the model";
    else
      continue;
    if (exact)
      return Status::error(
          f.source + ": " + layer.where + " (" + weightsOf(layer) +
          "): " + why +
          (layer.name.empty() || ambiguous.count(layer.name)
               ? ""
               : "; the file must hold exactly the model's " +
                     std::to_string(model.size()) +
                     " layers with weights: " + listed(modelList)));
    for (const FileWeight &w : layer.weights)
      report.skipped.emplace_back(w.path, why);
  }

  // The model's layers, in order: each matched by name, then by position.
  std::vector<std::pair<int, const FileWeight *>> load;
  for (const ModelLayer &layer : model) {
    auto found = byName.find(layer.name);
    if (found == byName.end() || ambiguous.count(layer.name)) {
      if (exact) {
        std::vector<std::string> expected;
        for (int v : layer.weights)
          expected.push_back(variable(v));
        return Status::error(
            f.source + ": no weights for layer '" + layer.name +
            "' (the model's " + listed(expected) +
            "); the file's layers with weights: " + listed(fileList));
      }
      std::string why = ambiguous.count(layer.name)
                            ? "several groups of the file name its layer"
                            : "layer '" + layer.name + "' is not in the file";
      for (int v : layer.weights)
        report.leftInitial.emplace_back(variables.name(v), why);
      continue;
    }
    auto weightOf = [&](int v) {
      const std::string &name = variables.name(v);
      return std::string_view(name).substr(name.rfind('/') + 1);
    };
    const FileLayer &held = *found->second;
    // Keras' Normalization keeps an int `count` after its mean and
    // variance, for old saved models; the model has no such variable.
    size_t heldWeights = held.weights.size();
    if (heldWeights == 3 && layer.weights.size() == 2 &&
        held.weights.back().kind == FileWeight::Kind::other &&
        weightOf(layer.weights[0]) == "mean" &&
        weightOf(layer.weights[1]) == "variance") {
      report.skipped.emplace_back(held.weights.back().path,
                                  "Normalization's count, which the model "
                                  "does not keep");
      heldWeights = 2;
    }
    if (heldWeights != layer.weights.size()) {
      std::string counts = "layer '" + layer.name + "' has " +
                           std::to_string(held.weights.size()) +
                           (held.weights.size() == 1 ? " weight" : " weights") +
                           " in the file and " +
                           std::to_string(layer.weights.size()) +
                           " in the model";
      if (exact) {
        std::vector<std::string> expected;
        for (int v : layer.weights)
          expected.push_back(variable(v));
        return Status::error(f.source + ": " + held.where + ": " + counts +
                             " (file: " + weightsOf(held) +
                             "; model: " + listed(expected) +
                             "); weights match by position within a layer, "
                             "so the counts must agree");
      }
      for (int v : layer.weights)
        report.leftInitial.emplace_back(variables.name(v), counts);
      for (const FileWeight &w : held.weights)
        report.skipped.emplace_back(w.path, counts);
      continue;
    }
    for (size_t i = 0; i < layer.weights.size(); ++i) {
      int v = layer.weights[i];
      const FileWeight &w = held.weights[i];
      const std::string &name = variables.name(v);
      if (w.kind == FileWeight::Kind::other) {
        if (exact)
          return Status::error(
              f.source + ": " + w.path + " (for the model's '" + name +
              "'): is " + w.dtype +
              "; the model's variable is F32 (float32 is read, float64, "
              "float16 and bfloat16 are converted, nothing else is)");
        report.leftInitial.emplace_back(name, "the file's " + w.path + " is " +
                                                  w.dtype);
        report.skipped.emplace_back(w.path, w.dtype + ", not a float type");
        continue;
      }
      if (w.shape != variables.shape(v)) {
        if (exact)
          return Status::error(
              f.source + ": " + w.path + " (for the model's '" + name +
              "'): has shape " + shapeText(w.shape) +
              "; the model's variable has shape " +
              shapeText(variables.shape(v)) +
              " (Keras layouts: HWIO conv kernels, [in, out] dense kernels)");
        report.leftInitial.emplace_back(
            name, "the file's " + w.path + " has shape " + shapeText(w.shape) +
                      ", the variable " + shapeText(variables.shape(v)));
        report.skipped.emplace_back(w.path, "shape " + shapeText(w.shape) +
                                                " does not fit the model's " +
                                                variable(v));
        continue;
      }
      load.emplace_back(v, &w);
    }
  }

  // Read everything, then write: a file that fails to read part-way leaves
  // the variables as they were.
  std::vector<std::vector<float>> values(load.size());
  for (size_t i = 0; i < load.size(); ++i) {
    values[i].resize(static_cast<size_t>(variables.bytes(load[i].first)) /
                     sizeof(float));
    if (Status s = readWeight(f, *load[i].second, values[i]); !s)
      return s;
  }
  for (size_t i = 0; i < load.size(); ++i) {
    if (Status s = variables.write(load[i].first, values[i].data()); !s)
      return s;
    report.loaded.push_back(variables.name(load[i].first));
  }
  return Status::ok();
}

// ---------------------------------------------------------------------------
// .keras archives
// ---------------------------------------------------------------------------

/// Member `name` of `archive` (at most `limit` bytes), its errors naming
/// `path`; `present` is false when the archive holds no such member.
Status readMember(const ZipArchive &archive, const std::string &path,
                  const char *name, uint64_t limit, std::string &out,
                  bool &present) {
  present = archive.find(name) != nullptr;
  if (!present)
    return Status::ok();
  Status s = archive.read(name, limit, out);
  if (s.code() == StatusCode::resourceExhausted)
    return Status::error(s.code(), path + ": " + s.message() + "; at most " +
                                       std::to_string(limit >> 20) +
                                       " MiB are read");
  return s.withContext(path + ": ");
}

/// Opens a .keras archive's weights member as an in-memory HDF5 file, and
/// maps its groups through config.json for files that record no names.
Status openArchive(const std::string &path, H5File &f,
                   std::map<std::string, std::string> &configGroups) {
  ZipArchive archive;
  if (Status s = ZipArchive::open(path, archive); !s) {
    if (s.code() == StatusCode::invalidInput) // not a zip archive
      return Status::error(s.code(), path + ": " + s.message() +
                                         " (a .keras file is a zip archive "
                                         "holding " +
                                         std::string(kKerasWeightsMember) +
                                         ")");
    return s.withContext(path + ": ");
  }
  std::string bytes;
  bool present = false;
  if (Status s = readMember(archive, path, kKerasWeightsMember,
                            kMaxWeightsMemberBytes, bytes, present);
      !s)
    return s;
  if (!present) {
    bool npz = archive.find("model.weights.npz") != nullptr;
    return Status::error(
        path + ": the archive holds no " + kKerasWeightsMember +
        (npz ? "; it holds model.weights.npz, which graphrun does not read "
               "(save the model with Keras' default .h5 weights)"
             : " (a .keras file written by Keras 3's model.save holds "
               "config.json, metadata.json and model.weights.h5)"));
  }
  std::string config;
  if (Status s = readMember(archive, path, "config.json", uint64_t(64) << 20,
                            config, present);
      !s)
    return s;
  configGroups = groupsOfConfig(config);

  f.source = path + ": " + kKerasWeightsMember;
  // HDF5's core driver copies the image, so ours goes as soon as it has.
  Hid access(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (!access || H5Pset_fapl_core(access.get(), 1 << 16, 0) < 0 ||
      H5Pset_file_image(access.get(), bytes.data(), bytes.size()) < 0)
    return f.error("", "cannot hold it in memory");
  std::string().swap(bytes);
  // The core driver tells open files apart by name: one per load.
  static std::atomic<int> opened = 0;
  std::string name =
      std::string(kKerasWeightsMember) + "@" + std::to_string(++opened);
  f.file = Hid(H5Fopen(name.c_str(), H5F_ACC_RDONLY, access.get()), H5Fclose);
  if (!f.file)
    return f.error("", "not a readable HDF5 file");
  return Status::ok();
}

/// Opens the HDF5 file `path`, or with `archive` the .keras archive's
/// weights member (and its config's layer groups).
Status openKerasFile(const std::string &path, bool archive, H5File &f,
                     std::map<std::string, std::string> &configGroups) {
  if (archive)
    return openArchive(path, f, configGroups);
  f.source = path;
  f.file = Hid(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!f.file) {
    std::string detail = hdf5Detail();
    return Status::error(path + ": not a readable HDF5 file" +
                         (detail.empty() ? "" : ": " + detail) +
                         " (is it the whole file Keras wrote?)");
  }
  return Status::ok();
}

/// Reads the scalar dataset `name` of `group` (at `path`) as `type`.
Status readScalar(const H5File &f, hid_t group, const std::string &path,
                  const std::string &name, hid_t type, void *out) {
  FileWeight w;
  if (Status s = describeWeight(f, group, path, name, w); !s)
    return s;
  if (!w.shape.empty())
    return f.error(w.path, "is not a scalar");
  Hid dataset;
  std::string at;
  if (Status s = openPath(f, group, path, name, H5I_DATASET, dataset, at); !s)
    return s;
  if (H5Dread(dataset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0)
    return f.error(at, "cannot read its data");
  return Status::ok();
}

} // namespace

bool looksLikeHdf5(std::string_view head) {
  return head.starts_with(std::string_view("\x89HDF\r\n\x1a\n", 8));
}

Status loadKerasWeights(const std::string &path, bool archive,
                        const std::vector<int> &which,
                        MirroredVariables &variables, WeightsMatch match,
                        WeightsReport *report) {
  WeightsReport ignored;
  WeightsReport &r = report ? *report : ignored;
  Hdf5Quiet quiet; // outlives every HDF5 handle below
  H5File f;
  std::map<std::string, std::string> configGroups;
  if (Status s = openKerasFile(path, archive, f, configGroups); !s)
    return s;

  hid_t root = f.file.get();
  bool legacy = H5Aexists(root, "layer_names") > 0 ||
                H5Aexists(root, "layer_names0") > 0 ||
                H5Lexists(root, "model_weights", H5P_DEFAULT) > 0;
  std::string top =
      H5Lexists(root, "layers", H5P_DEFAULT) > 0 ? "layers"
      : H5Lexists(root, "_layer_checkpoint_dependencies", H5P_DEFAULT) > 0
          ? "_layer_checkpoint_dependencies"
          : "";
  std::vector<FileLayer> layers;
  if (legacy) {
    r.format = "Keras legacy HDF5";
    if (Status s = readLegacyLayers(f, layers); !s)
      return s;
  } else if (!top.empty()) {
    r.format = archive ? "Keras 3 .keras archive" : "Keras 3 .weights.h5";
    if (Status s = readKeras3Layers(f, top, configGroups, layers, r); !s)
      return s;
  } else {
    return f.error("", "holds neither Keras' legacy layout (attribute "
                       "layer_names) nor Keras 3's (group /layers): is it a "
                       "Keras weights file?");
  }
  return assignWeights(f, layers, which, variables, match, r);
}

Status loadKerasOptimizer(const std::string &path, bool archive,
                          const plan::Plan &plan, MirroredVariables &variables,
                          KerasOptimizerReport &report) {
  report = {};
  Hdf5Quiet quiet; // outlives every HDF5 handle below
  H5File f;
  std::map<std::string, std::string> configGroups;
  if (Status s = openKerasFile(path, archive, f, configGroups); !s)
    return s;
  const std::string varsPath = "/optimizer/vars";
  if (H5Lexists(f.file.get(), "optimizer", H5P_DEFAULT) <= 0)
    return Status::ok();
  Hid vars;
  std::string at;
  if (Status s =
          openPath(f, f.file.get(), "", "optimizer/vars", H5I_GROUP, vars, at);
      !s)
    return s;
  report.present = true;
  KerasOptimizerLayout layout;
  if (Status s = kerasOptimizerLayout(variables, plan, layout); !s) {
    // An optimizer that never stepped (a compiled model not yet trained,
    // whose EMA copies, accumulators or loss scale are their initial
    // values) loses nothing by starting afresh: no state, no warning.
    // A LossScaleOptimizer's own counter never moves: the steps are its
    // inner optimizer's, which must be at 0 too.
    auto neverStepped = [&](hid_t group, const std::string &path) {
      int64_t iterations = -1;
      return readScalar(f, group, path, "0", H5T_NATIVE_INT64, &iterations) &&
             iterations == 0;
    };
    bool fresh = neverStepped(vars.get(), varsPath);
    const std::string innerPath = "/optimizer/inner_optimizer/vars";
    if (fresh &&
        H5Lexists(f.file.get(), "optimizer/inner_optimizer", H5P_DEFAULT) > 0) {
      Hid inner;
      std::string innerAt;
      fresh = openPath(f, f.file.get(), "", "optimizer/inner_optimizer/vars",
                       H5I_GROUP, inner, innerAt) &&
              neverStepped(inner.get(), innerPath);
    }
    if (fresh) {
      report.present = false;
      return Status::ok();
    }
    report.why = s.message();
    return Status::ok();
  }
  std::vector<std::string> names;
  bool found = false;
  if (Status s = readStrings(f, vars.get(), varsPath, "name", names, found); !s)
    return s;
  const std::string name = found && names.size() == 1 ? names[0] : "";
  std::vector<Link> links;
  if (Status s = listLinks(f, vars.get(), varsPath, links); !s)
    return s;
  const size_t expected = 1 + (layout.rateVariable ? 1 : 0) +
                          layout.slots.size() +
                          static_cast<size_t>(layout.trailing);
  // An optimizer never built (a compiled model not yet trained: Keras'
  // save_weights then writes its iterations and rate alone) holds no state.
  if (!layout.slots.empty() &&
      links.size() == 1 + (layout.rateVariable ? 1u : 0u)) {
    report.present = false;
    return Status::ok();
  }
  // Keras names an optimizer after its class, snake-cased, numbering a
  // process's next one ("adam_1"), unless given a name; its own loading
  // checks the count of variables alone. A default name of another class
  // is another optimizer (Adam's and Adamax's slots have the same shapes);
  // any other name is the user's, and the count and shapes decide.
  std::string base = name;
  if (size_t us = base.rfind('_');
      us != std::string::npos && us + 1 < base.size() &&
      std::all_of(base.begin() + static_cast<ptrdiff_t>(us) + 1, base.end(),
                  [](char c) { return c >= '0' && c <= '9'; }))
    base.resize(us);
  auto among = [](const std::vector<std::string> &names, const std::string &n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  const bool otherClass =
      among(kerasOptimizerDefaultNames(), base) && !among(layout.names, base);
  if (otherClass || links.size() != expected) {
    report.why = "the file's optimizer is " +
                 (name.empty() ? std::string("unnamed") : "'" + name + "'") +
                 " with " + std::to_string(links.size()) +
                 " variables, the plan's " + layout.classes[0] + " keeps " +
                 std::to_string(expected);
    return Status::ok();
  }
  int index = 0;
  auto next = [&]() { return std::to_string(index++); };
  int64_t iterations = 0;
  if (Status s = readScalar(f, vars.get(), varsPath, next(), H5T_NATIVE_INT64,
                            &iterations);
      !s)
    return s;
  if (iterations < 0)
    return f.error(varsPath + "/0", "holds a negative iteration count");
  if (layout.rateVariable) {
    float rate = 0;
    if (Status s = readScalar(f, vars.get(), varsPath, next(), H5T_NATIVE_FLOAT,
                              &rate);
        !s)
      return s;
    report.learningRate = rate;
  }
  // Every slot read before any is written.
  std::vector<std::vector<float>> values(layout.slots.size());
  for (size_t i = 0; i < layout.slots.size(); ++i) {
    const int v = layout.slots[i];
    FileWeight w;
    if (Status s = describeWeight(f, vars.get(), varsPath, next(), w); !s)
      return s;
    if (w.kind == FileWeight::Kind::other)
      return f.error(w.path, "is " + w.dtype + ", not a float slot");
    if (w.shape != variables.shape(v))
      return f.error(w.path, "has shape " + shapeText(w.shape) +
                                 "; the plan's slot '" + variables.name(v) +
                                 "' has " + shapeText(variables.shape(v)));
    values[i].resize(static_cast<size_t>(variables.bytes(v) / sizeof(float)));
    if (Status s = readWeight(f, w, values[i]); !s)
      return s;
  }
  for (size_t i = 0; i < layout.slots.size(); ++i)
    if (Status s = variables.write(layout.slots[i], values[i].data()); !s)
      return s;
  report.iterations = iterations;
  report.loaded = true;
  return Status::ok();
}

} // namespace graph::runtime::checkpoint

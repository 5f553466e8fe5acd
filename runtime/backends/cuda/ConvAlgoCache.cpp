//===- ConvAlgoCache.cpp - measured cuDNN algorithms, kept beside the plan ===//

#include "runtime/backends/cuda/ConvAlgoCache.h"

#include "runtime/base/AtomicFile.h"

#include <charconv>
#include <fstream>
#include <sstream>

namespace graph::runtime::cuda {
namespace {

constexpr const char *kHeader = "graph-cudnn-algos 1";

std::string cleanDevice(const std::string &name) {
  std::string out;
  for (char ch : name)
    out += (ch == ';' || ch == '=' || ch == '\t' || ch == '\n' || ch == '\r')
               ? ' '
               : ch;
  return out;
}

bool parseInt(const std::string &text, int64_t &out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

bool parsePair(const std::string &text, int64_t &a, int64_t &b) {
  size_t x = text.find('x');
  return x != std::string::npos && parseInt(text.substr(0, x), a) &&
         parseInt(text.substr(x + 1), b);
}

/// The key whose text() is `text`, or nothing: a line's key must be in
/// the canonical form this build writes.
std::optional<ConvAlgoKey> parseKey(const std::string &text) {
  std::map<std::string, std::string> fields;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(';', start);
    if (end == std::string::npos)
      end = text.size();
    std::string field = text.substr(start, end - start);
    size_t eq = field.find('=');
    if (eq == std::string::npos || eq == 0 ||
        !fields.emplace(field.substr(0, eq), field.substr(eq + 1)).second)
      return std::nullopt;
    start = end + 1;
  }
  ConvAlgoKey k;
  int64_t workspace = 0;
  auto get = [&](const char *name) -> const std::string * {
    auto it = fields.find(name);
    return it == fields.end() ? nullptr : &it->second;
  };
  const std::string *pass = get("pass"), *device = get("device"),
                    *precision = get("precision");
  const std::string *n = get("n"), *h = get("h"), *w = get("w"), *c = get("c"),
                    *filters = get("filters"), *window = get("kernel"),
                    *stride = get("stride"), *dilation = get("dilation"),
                    *pad = get("pad"), *ws = get("workspace"),
                    *cudnn = get("cudnn"), *groups = get("groups");
  if (!pass || !device || !precision || !n || !h || !w || !c || !filters ||
      !window || !stride || !dilation || !pad || !ws || !cudnn)
    return std::nullopt;
  k.pass = *pass;
  k.device = *device;
  k.precision = *precision;
  if (!parseInt(*n, k.n) || !parseInt(*h, k.h) || !parseInt(*w, k.w) ||
      !parseInt(*c, k.c) || !parseInt(*filters, k.filters) ||
      !parsePair(*window, k.kh, k.kw) ||
      !parsePair(*stride, k.strideH, k.strideW) ||
      !parsePair(*dilation, k.dilationH, k.dilationW) ||
      !parsePair(*pad, k.padH, k.padW) || !parseInt(*ws, workspace) ||
      workspace < 0 || !parseInt(*cudnn, k.cudnnVersion) ||
      (groups && !parseInt(*groups, k.groups)))
    return std::nullopt;
  k.workspaceLimit = static_cast<uint64_t>(workspace);
  if (k.text() != text)
    return std::nullopt;
  return k;
}

} // namespace

std::string ConvAlgoKey::text() const {
  std::ostringstream out;
  out << "pass=" << pass << ";n=" << n << ";h=" << h << ";w=" << w << ";c=" << c
      << ";filters=" << filters;
  // Written only when grouped, so the files of ungrouped models stay as
  // they were.
  if (groups != 1)
    out << ";groups=" << groups;
  out << ";kernel=" << kh << "x" << kw << ";stride=" << strideH << "x"
      << strideW << ";dilation=" << dilationH << "x" << dilationW
      << ";pad=" << padH << "x" << padW << ";workspace=" << workspaceLimit
      << ";device=" << cleanDevice(device) << ";cudnn=" << cudnnVersion
      << ";precision=" << precision;
  return out.str();
}

std::string ConvAlgoCache::pathBeside(const std::string &planPath) {
  return planPath + ".cudnn-algos";
}

bool ConvAlgoCache::parse(const std::string &text, int64_t cudnnVersion,
                          std::string &why, int &stale) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kHeader) {
    why = "its first line is not '" + std::string(kHeader) + "'";
    return false;
  }
  std::map<std::string, ConvAlgoChoice> entries;
  int lineNumber = 1, count = 0;
  stale = 0;
  bool ended = false;
  while (std::getline(in, line)) {
    ++lineNumber;
    const std::string at = "line " + std::to_string(lineNumber);
    if (ended) {
      why = at + " follows the end line";
      return false;
    }
    if (line.rfind("end ", 0) == 0) {
      int64_t declared = -1;
      if (!parseInt(line.substr(4), declared) || declared != count) {
        why = at + ": the end line does not count the " +
              std::to_string(count) + " entries";
        return false;
      }
      ended = true;
      continue;
    }
    size_t tab = line.find('\t');
    if (tab == std::string::npos) {
      why = at + " has no tab between key and choice";
      return false;
    }
    std::string keyText = line.substr(0, tab);
    std::optional<ConvAlgoKey> key = parseKey(keyText);
    if (!key) {
      why = at + ": a malformed key";
      return false;
    }
    std::istringstream fields(line.substr(tab + 1));
    ConvAlgoChoice choice;
    int64_t workspace = -1;
    std::string extra;
    if (!(fields >> choice.algo >> choice.math >> workspace >>
          choice.milliseconds) ||
        (fields >> extra) || choice.algo < 0 || choice.math < 0 ||
        workspace < 0 || !(choice.milliseconds >= 0)) {
      why = at + ": a malformed choice";
      return false;
    }
    choice.workspace = static_cast<uint64_t>(workspace);
    if (!entries.emplace(keyText, choice).second) {
      why = at + " repeats a key";
      return false;
    }
    ++count;
    if (key->cudnnVersion != cudnnVersion) {
      entries.erase(keyText);
      ++stale;
    }
  }
  if (!ended) {
    why = "it has no end line (truncated?)";
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  entries_ = std::move(entries);
  dirty_ = stale > 0;
  return true;
}

void ConvAlgoCache::load(const std::string &path, int64_t cudnnVersion,
                         std::vector<std::string> &warnings) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return; // none yet: every shape is measured and the file written
  std::ostringstream text;
  text << file.rdbuf();
  std::string why;
  int stale = 0;
  if (!parse(text.str(), cudnnVersion, why, stale)) {
    warnings.push_back("cuDNN algorithm cache " + path + " ignored: " + why +
                       "; the algorithms are measured again and the file "
                       "rewritten");
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.clear();
    dirty_ = true;
    return;
  }
  if (stale > 0)
    warnings.push_back("cuDNN algorithm cache " + path + ": " +
                       std::to_string(stale) +
                       " entries of another cuDNN version dropped (stale); "
                       "their shapes are measured again");
}

std::string ConvAlgoCache::serialize() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::ostringstream out;
  out << kHeader << "\n";
  for (const auto &[key, c] : entries_)
    out << key << "\t" << c.algo << " " << c.math << " " << c.workspace << " "
        << c.milliseconds << "\n";
  out << "end " << entries_.size() << "\n";
  return out.str();
}

Status ConvAlgoCache::save(const std::string &path) {
  std::string text = serialize();
  if (Status s = writeFileAtomically(path, text); !s)
    return s;
  std::lock_guard<std::mutex> lock(mutex_);
  dirty_ = false;
  return Status::ok();
}

std::optional<ConvAlgoChoice>
ConvAlgoCache::find(const ConvAlgoKey &key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key.text());
  if (it == entries_.end())
    return std::nullopt;
  return it->second;
}

void ConvAlgoCache::insert(const ConvAlgoKey &key,
                           const ConvAlgoChoice &choice) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.insert_or_assign(key.text(), choice);
  dirty_ = true;
}

bool ConvAlgoCache::dirty() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dirty_;
}

size_t ConvAlgoCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

} // namespace graph::runtime::cuda

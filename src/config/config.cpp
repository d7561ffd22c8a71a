#include "config/config.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

namespace gpuaccept {

namespace {

// Levenshtein distance, to suggest the key a typo most likely meant.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

template <typename Names>
std::string unknown_key_message(std::string_view key, const Names& known, std::string_view what) {
  std::string_view closest;
  std::size_t best = 3;  // a suggestion only for up to two edits: further off, it would be a guess
  for (std::string_view k : known) {
    const std::size_t d = edit_distance(key, k);
    if (d < best) best = d, closest = k;
  }
  const std::string hint = closest.empty() ? "" : fmt::format(" (did you mean '{}'?)", closest);
  return fmt::format("not a {}{}; known: {}", what, hint, fmt::join(known, ", "));
}

}  // namespace

Config Config::load(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("config {}: cannot be read ({})", path.string(), errno_text()));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path.string());
}

Config Config::parse(const std::string& text, const std::string& name) {
  Config c;
  c.name_ = name;
  c.text_ = text;
  try {
    c.root_ = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError(fmt::format("{}:{}:{}: not valid YAML: {}", name, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  if (c.root_ && !c.root_.IsNull() && !c.root_.IsMap())
    throw InputError(fmt::format("{}:{}: the top level must be a mapping of keys to values", name,
                                 c.root_.Mark().line + 1));
  return c;
}

YAML::Node Config::find(std::string_view dotted_key) const {
  if (empty()) return YAML::Node(YAML::NodeType::Undefined);
  // Only const operator[] is used: on a non-const node yaml-cpp may insert keys.
  YAML::Node cur = root_;
  std::size_t start = 0;
  while (start <= dotted_key.size()) {
    const auto dot = dotted_key.find('.', start);
    const std::string part(dotted_key.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (!cur.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node next = static_cast<const YAML::Node&>(cur)[part];
    if (!next.IsDefined()) return YAML::Node(YAML::NodeType::Undefined);
    cur.reset(next);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return cur;
}

InputError Config::error_at(const YAML::Node& n, std::string_view key, const std::string& what) const {
  const int line = n.Mark().line >= 0 ? n.Mark().line + 1 : 0;
  return InputError(fmt::format("{}:{}: key '{}': {}", name_, line, key, what));
}

void Config::refuse_unknown_keys(std::string_view section, std::initializer_list<std::string_view> known) const {
  const YAML::Node map = find(section);
  if (!map.IsDefined() || map.IsNull()) return;
  if (!map.IsMap()) throw error_at(map, section, "expected a mapping of keys to values");
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string("(not a name)");
    if (std::find(known.begin(), known.end(), key) == known.end())
      throw error_at(it->first, fmt::format("{}.{}", section, key),
                     unknown_key_message(key, known, fmt::format("key of section '{}'", section)));
  }
}

void Config::refuse_unknown_sections() const {
  if (empty()) return;
  for (auto it = root_.begin(); it != root_.end(); ++it) {
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string("(not a name)");
    if (std::find(std::begin(kConfigSections), std::end(kConfigSections), key) == std::end(kConfigSections))
      throw error_at(it->first, key, unknown_key_message(key, kConfigSections, "section of a gpuaccept config"));
  }
}

std::string Config::describe(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "nothing";
}

}  // namespace gpuaccept

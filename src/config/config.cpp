#include "config/config.h"

#include <fstream>
#include <sstream>

namespace gpuaccept {

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

std::string Config::describe(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "nothing";
}

}  // namespace gpuaccept

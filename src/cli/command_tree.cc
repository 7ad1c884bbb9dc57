#include "cli/command_tree.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace rsl::cli {

namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

//! The words of `s` (letters and digits), lowercased: "-f,--file" -> {f, file}.
std::vector<std::string> Words(const std::string& s) {
  std::vector<std::string> out;
  std::string w;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      w += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!w.empty()) {
      out.push_back(w);
      w.clear();
    }
  }
  if (!w.empty()) out.push_back(w);
  return out;
}

bool HasAny(const std::vector<std::string>& words, const std::set<std::string>& wanted) {
  return std::any_of(words.begin(), words.end(), [&](const auto& w) { return wanted.count(w); });
}

//! "{json,yaml}" inside CLI11's type name (CLI::IsMember's description) -> {json, yaml}.
std::vector<std::string> ChoicesOf(const std::string& type_name) {
  size_t open = type_name.find('{');
  size_t close = type_name.find('}', open);
  if (open == std::string::npos || close == std::string::npos) return {};
  std::vector<std::string> out;
  std::string item;
  for (char c : type_name.substr(open + 1, close - open - 1)) {
    if (c == ',') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else if (c != ' ') {
      item += c;
    }
  }
  if (!item.empty()) out.push_back(item);
  return out;
}

// The value's kind from what CLI11 knows (IsMember, ExistingFile...), else from the option's
// name and help text: seedctl's options are plain strings, so "--tls-key" or "AIWorkload YAML
// file" is how they say they take a path.
ValueKind KindOf(const OptionNode& o, const std::string& name) {
  if (!o.choices.empty()) return ValueKind::kChoice;
  std::vector<std::string> type = Words(o.type_name);
  if (HasAny(type, {"dir"})) return ValueKind::kDir;
  if (HasAny(type, {"file", "path"})) return ValueKind::kFile;
  // A file is named as such ("--token-file", "-f,--filename"); "dir" ends a directory's name.
  std::vector<std::string> n = Words(name);
  static const std::set<std::string> kFileNames = {"file", "filename", "config",      "kubeconfig",
                                                   "crl",  "prices",   "certificate", "tokens"};
  static const std::set<std::string> kFileOptions = {"tls-cert", "tls-key", "client-key",
                                                     "tls-client-ca"};
  if (HasAny(n, kFileNames) || kFileOptions.count(Lower(name))) return ValueKind::kFile;
  if (!n.empty() && n.back() == "dir") return ValueKind::kDir;
  // Else the help text: "kube-apiserver log file", "price table YAML", "directory the step
  // wrote"; not "the file's currentContext" nor a URL that may be file://.
  if (o.description.find("://") != std::string::npos) return ValueKind::kAny;
  std::string d = Lower(o.description);
  for (const char* not_a_file : {"file's", "file system"}) {
    for (size_t at; (at = d.find(not_a_file)) != std::string::npos;) {
      d.replace(at, std::string(not_a_file).size(), " ");
    }
  }
  if (HasAny(Words(d), {"file", "files", "yaml", "json", "manifest"})) return ValueKind::kFile;
  if (HasAny(Words(d), {"directory"}) || o.description.find("file system") != std::string::npos) {
    return ValueKind::kDir;
  }
  return ValueKind::kAny;
}

OptionNode DescribeOption(const CLI::Option& opt) {
  OptionNode o;
  o.shorts = opt.get_snames();
  o.longs = opt.get_lnames();
  if (!opt.nonpositional()) o.positional = opt.get_name(true);
  o.type_name = opt.get_type_name();
  o.description = opt.get_description();
  o.default_value = opt.get_default_str();
  o.env = opt.get_envname();
  o.required = opt.get_required();
  o.repeatable = opt.get_expected_max() > 1;
  if (opt.get_items_expected_max() == 0 && opt.nonpositional()) {
    o.kind = ValueKind::kNone;
    return o;
  }
  o.choices = ChoicesOf(o.type_name);
  std::string name = !o.longs.empty() ? o.longs.front() : o.positional;
  o.kind = KindOf(o, name);
  return o;
}

CommandNode Describe(const CLI::App& app, std::vector<std::string> path) {
  CommandNode node;
  node.name = app.get_name();
  node.path = path;
  node.description = app.get_description();
  node.footer = app.get_footer();
  node.requires_subcommand = app.get_require_subcommand_min() > 0;
  node.fallthrough = app.get_fallthrough();
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_group().empty()) continue;  // hidden
    OptionNode o = DescribeOption(*opt);
    (o.positional.empty() ? node.options : node.positionals).push_back(std::move(o));
  }
  for (const CLI::App* sub : app.get_subcommands(
           [](const CLI::App* s) { return !s->get_group().empty() && !s->get_name().empty(); })) {
    std::vector<std::string> sub_path = path;
    sub_path.push_back(sub->get_name());
    node.subcommands.push_back(Describe(*sub, sub_path));
  }
  return node;
}

}  // namespace

std::string OptionNode::Names() const {
  if (!positional.empty()) return positional;
  std::string s;
  for (const auto& n : shorts) s += (s.empty() ? "-" : ", -") + n;
  for (const auto& n : longs) s += (s.empty() ? "--" : ", --") + n;
  return s;
}

std::string OptionNode::Placeholder() const {
  switch (kind) {
    case ValueKind::kNone:
      return "";
    case ValueKind::kFile:
      return "FILE";
    case ValueKind::kDir:
      return "DIR";
    case ValueKind::kChoice: {
      std::string s;
      for (const auto& c : choices) s += (s.empty() ? "" : "|") + c;
      return s;
    }
    case ValueKind::kAny:
      break;
  }
  std::string base = type_name.substr(0, type_name.find(':'));
  if (base == "INT" || base == "UINT") return "N";
  if (base == "FLOAT") return "NUMBER";
  if (!positional.empty()) return positional;
  std::string s = longs.empty() ? base : longs.front();
  for (char& c : s) c = c == '-' ? '_' : static_cast<char>(std::toupper(c));
  return s;
}

std::string CommandNode::FullName(const std::string& program) const {
  std::string s = program;
  for (const auto& p : path) s += " " + p;
  return s;
}

std::vector<const CommandNode*> CommandNode::Flatten() const {
  std::vector<const CommandNode*> out{this};
  for (const auto& sub : subcommands) {
    auto more = sub.Flatten();
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

CommandNode DescribeApp(const CLI::App& app) { return Describe(app, {}); }

std::vector<OptionNode> AcceptedOptions(const std::vector<const CommandNode*>& ancestors,
                                        const CommandNode& node) {
  std::vector<OptionNode> out = node.options;
  std::set<std::string> seen;
  for (const auto& o : out) seen.insert(o.Names());
  bool through = node.fallthrough;
  for (auto it = ancestors.rbegin(); it != ancestors.rend() && through; ++it) {
    for (const auto& o : (*it)->options) {
      // A name the command itself declares wins (the help flag of every level).
      bool clash = false;
      for (const auto& mine : out) {
        for (const auto& l : o.longs) {
          clash |= std::find(mine.longs.begin(), mine.longs.end(), l) != mine.longs.end();
        }
        for (const auto& s : o.shorts) {
          clash |= std::find(mine.shorts.begin(), mine.shorts.end(), s) != mine.shorts.end();
        }
      }
      if (!clash && seen.insert(o.Names()).second) out.push_back(o);
    }
    through = (*it)->fallthrough;
  }
  return out;
}

}  // namespace rsl::cli

#include "cli/completion.h"

#include <cctype>
#include <set>

#include "base/strings.h"

namespace rsl::cli {

namespace {

//! The help text's first line, without control characters.
std::string HelpSummary(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') break;
    out += std::iscntrl(static_cast<unsigned char>(c)) ? ' ' : c;
  }
  return out;
}

std::string PathKey(const CommandNode& node) { return Join(node.path, " "); }

//! What the bash script calls a value's kind (see _<program>_complete_value).
std::string BashKind(ValueKind kind, const std::vector<std::string>& choices) {
  switch (kind) {
    case ValueKind::kNone:
      return "none";
    case ValueKind::kAny:
      return "any";
    case ValueKind::kFile:
      return "file";
    case ValueKind::kDir:
      return "dir";
    case ValueKind::kChoice:
      return "choice " + Join(choices, " ");
  }
  return "any";
}

//! The kind of the arguments a command takes: files if any argument is a file, else the first
//! argument's kind.
std::string PositionalKind(const CommandNode& node) {
  if (node.positionals.empty()) return "none";
  for (const auto& p : node.positionals) {
    if (p.kind == ValueKind::kFile) return "file";
  }
  return BashKind(node.positionals.front().kind, node.positionals.front().choices);
}

struct Walk {
  const CommandNode* node;
  std::vector<const CommandNode*> ancestors;
};

void WalkTree(const CommandNode& node, std::vector<const CommandNode*> ancestors,
              std::vector<Walk>* out) {
  out->push_back({&node, ancestors});
  ancestors.push_back(&node);
  for (const auto& sub : node.subcommands) WalkTree(sub, ancestors, out);
}

std::vector<Walk> WalkTree(const CommandNode& root) {
  std::vector<Walk> out;
  WalkTree(root, {}, &out);
  return out;
}

std::vector<std::string> OptionWords(const OptionNode& o) {
  std::vector<std::string> words;
  for (const auto& s : o.shorts) words.push_back("-" + s);
  for (const auto& l : o.longs) words.push_back("--" + l);
  return words;
}

// --- zsh ------------------------------------------------------------------------------------

std::string ZshFunction(const std::string& program, const CommandNode& node) {
  std::string f = "_" + program;
  for (const auto& p : node.path) {
    f += "__";
    for (char c : p) f += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  }
  return f;
}

//! Text for inside _arguments' [...] and _describe's "name:description".
std::string ZshDescription(const std::string& s) {
  std::string out;
  for (char c : HelpSummary(s)) {
    if (c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string ZshAction(ValueKind kind, const std::vector<std::string>& choices) {
  switch (kind) {
    case ValueKind::kNone:
      return "";
    case ValueKind::kFile:
      return "_files";
    case ValueKind::kDir:
      return "_files -/";
    case ValueKind::kChoice:
      return "(" + Join(choices, " ") + ")";
    case ValueKind::kAny:
      break;
  }
  return " ";
}

std::vector<std::string> ZshOptionSpecs(const OptionNode& o) {
  std::vector<std::string> words = OptionWords(o);
  std::string exclusion = o.repeatable ? "*" : "(" + Join(words, " ") + ")";
  std::string desc = "[" + ZshDescription(o.description) + "]";
  std::string value;
  if (o.kind != ValueKind::kNone) {
    std::string message = o.Placeholder();
    for (char& c : message) c = c == ':' ? ' ' : c;
    value = ":" + message + ":" + ZshAction(o.kind, o.choices);
  }
  std::vector<std::string> specs;
  for (const auto& w : words) {
    bool is_long = w.rfind("--", 0) == 0;
    specs.push_back(
        ShellQuote(exclusion + w + (is_long && !value.empty() ? "=" : "") + desc + value));
  }
  return specs;
}

std::string ZshNode(const std::string& program, const Walk& w) {
  const CommandNode& node = *w.node;
  std::string s = ZshFunction(program, node) + "() {\n";
  s += "  local curcontext=\"$curcontext\" state state_descr line ret=1\n";
  s += "  typeset -A opt_args\n";
  s += "  _arguments -C -s";
  for (const auto& o : AcceptedOptions(w.ancestors, node)) {
    for (const auto& spec : ZshOptionSpecs(o)) s += " \\\n    " + spec;
  }
  if (!node.subcommands.empty()) {
    s += " \\\n    '1: :->command' \\\n    '*:: :->argument' && ret=0\n";
    s += "  case $state in\n";
    s += "    command)\n      local -a commands\n      commands=(\n";
    for (const auto& sub : node.subcommands) {
      std::string name;
      for (char c : sub.name) name += c == ':' ? std::string("\\:") : std::string(1, c);
      s += "        " + ShellQuote(name + ":" + HelpSummary(sub.description)) + "\n";
    }
    s += "      )\n";
    s += "      _describe -t commands " + ShellQuote(node.FullName(program) + " command") +
         " commands && ret=0\n      ;;\n";
    s += "    argument)\n      case $words[1] in\n";
    for (const auto& sub : node.subcommands) {
      s += "        " + ShellQuote(sub.name) + ") " + ZshFunction(program, sub) + " && ret=0 ;;\n";
    }
    s += "      esac\n      ;;\n  esac\n";
  } else {
    int index = 1;
    for (const auto& p : node.positionals) {
      std::string message = p.Placeholder();
      for (char& c : message) c = c == ':' ? ' ' : c;
      std::string action =
          ZshAction(p.kind == ValueKind::kNone ? ValueKind::kAny : p.kind, p.choices);
      std::string spec = p.repeatable ? "*" : std::to_string(index++);
      spec += (p.required ? ":" : "::") + message + ":" + action;
      s += " \\\n    " + ShellQuote(spec);
    }
    s += " && ret=0\n";
  }
  s += "  return ret\n}\n\n";
  return s;
}

}  // namespace

std::string BashCompletion(const CommandNode& root, const std::string& program) {
  const std::string fn = "_" + program;
  std::vector<Walk> walks = WalkTree(root);
  std::string s;
  s += "# bash completion for " + program + ", generated by `" + program +
       " completion bash` from its command tree.\n";
  s += "# Install: " + program + " completion bash > /usr/share/bash-completion/completions/" +
       program + "\n";
  s += "# (or ~/.local/share/bash-completion/completions/" + program +
       "), or add to ~/.bashrc: source <(" + program + " completion bash)\n";
  s += "# Static: names only the controller knows (workloads, contexts) are not completed.\n\n";

  s += "# " + fn + "_commands PATH: the subcommands of the command at PATH (\"\" = " + program +
       ").\n";
  s += fn + "_commands() {\n  case \"$1\" in\n";
  for (const auto& w : walks) {
    if (w.node->subcommands.empty()) continue;
    std::vector<std::string> names;
    for (const auto& sub : w.node->subcommands) names.push_back(sub.name);
    s += "    " + ShellQuote(PathKey(*w.node)) + ") echo " + ShellQuote(Join(names, " ")) + " ;;\n";
  }
  s += "  esac\n}\n\n";

  s += "# " + fn + "_options PATH: the flags and options the command at PATH accepts.\n";
  s += fn + "_options() {\n  case \"$1\" in\n";
  for (const auto& w : walks) {
    std::vector<std::string> words;
    for (const auto& o : AcceptedOptions(w.ancestors, *w.node)) {
      for (const auto& word : OptionWords(o)) words.push_back(word);
    }
    s += "    " + ShellQuote(PathKey(*w.node)) + ") echo " + ShellQuote(Join(words, " ")) + " ;;\n";
  }
  s += "  esac\n}\n\n";

  s += "# " + fn +
       "_value PATH OPTION: the kind of OPTION's value at PATH: none (a flag), any,\n"
       "# file, dir or \"choice A B...\". An option the command does not know: none.\n";
  s += fn + "_value() {\n  case \"$1 $2\" in\n";
  for (const auto& w : walks) {
    for (const auto& o : AcceptedOptions(w.ancestors, *w.node)) {
      if (o.kind == ValueKind::kNone) continue;
      std::vector<std::string> patterns;
      for (const auto& word : OptionWords(o))
        patterns.push_back(ShellQuote(PathKey(*w.node) + " " + word));
      s += "    " + Join(patterns, "|") + ") echo " + ShellQuote(BashKind(o.kind, o.choices)) +
           " ;;\n";
    }
  }
  s += "    *) echo none ;;\n  esac\n}\n\n";

  s += "# " + fn + "_arguments PATH: the kind of the arguments (not options) of the command.\n";
  s += fn + "_arguments() {\n  case \"$1\" in\n";
  for (const auto& w : walks) {
    std::string kind = PositionalKind(*w.node);
    if (kind == "none" || !w.node->subcommands.empty()) continue;
    s += "    " + ShellQuote(PathKey(*w.node)) + ") echo " + ShellQuote(kind) + " ;;\n";
  }
  s += "    *) echo none ;;\n  esac\n}\n\n";

  // clang-format off
  std::string tmpl = R"BASH(# FN_complete_value KIND WORD: COMPREPLY for a value of that kind.
FN_complete_value() {
  case "$1" in
    file) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- "$2") ;;
    dir) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- "$2") ;;
    choice\ *) mapfile -t COMPREPLY < <(compgen -W "${1#choice }" -- "$2") ;;
    *) COMPREPLY=() ;;
  esac
}

FN() {
  local cur="${COMP_WORDS[COMP_CWORD]}" path="" word i value=0 option
  # The command the words before the cursor name; an option's value is never a command.
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="${COMP_WORDS[i]}"
    if [[ "$word" == "=" ]]; then value=1; continue; fi  # --output=json: '=' splits words
    if ((value)); then value=0; continue; fi
    case "$word" in
      -*=*) ;;
      -*) [[ "$(FN_value "$path" "$word")" != none ]] && value=1 ;;
      *) [[ " $(FN_commands "$path") " == *" $word "* ]] && path="${path:+$path }$word" ;;
    esac
  done
  if ((value)); then
    option="${COMP_WORDS[COMP_CWORD-1]}"
    [[ "$option" == "=" ]] && option="${COMP_WORDS[COMP_CWORD-2]}"
    [[ "$cur" == "=" ]] && cur=""  # the cursor right after --output=
    FN_complete_value "$(FN_value "$path" "$option")" "$cur"
    return 0
  fi
  if [[ "$cur" == -*=* ]]; then  # '=' is not in COMP_WORDBREAKS: the reply keeps "--opt="
    FN_complete_value "$(FN_value "$path" "${cur%%=*}")" "${cur#*=}"
    COMPREPLY=("${COMPREPLY[@]/#/${cur%%=*}=}")
  elif [[ "$cur" == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(FN_options "$path")" -- "$cur")
  elif [[ -n "$(FN_commands "$path")" ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(FN_commands "$path")" -- "$cur")
  else
    FN_complete_value "$(FN_arguments "$path")" "$cur"
  fi
  return 0
}
complete -F FN PROGRAM
)BASH";
  // clang-format on
  // The template names the function FN and the program PROGRAM.
  for (size_t i = 0; i < tmpl.size();) {
    if (tmpl.compare(i, 2, "FN") == 0) {
      s += fn;
      i += 2;
    } else if (tmpl.compare(i, 7, "PROGRAM") == 0) {
      s += program;
      i += 7;
    } else {
      s += tmpl[i++];
    }
  }
  return s;
}

std::string ZshCompletion(const CommandNode& root, const std::string& program) {
  const std::string fn = "_" + program;
  std::string s = "#compdef " + program + "\n";
  s += "# zsh completion for " + program + ", generated by `" + program +
       " completion zsh` from its command tree.\n";
  s += "# Install: " + program + " completion zsh > /usr/share/zsh/vendor-completions/" + fn +
       "\n# (or any directory of $fpath), or add to ~/.zshrc after compinit: source <(" + program +
       " completion zsh)\n";
  s += "# Static: names only the controller knows (workloads, contexts) are not completed.\n\n";
  for (const auto& w : WalkTree(root)) s += ZshNode(program, w);
  s += "if [[ \"$funcstack[1]\" == \"" + fn + "\" ]]; then\n  " + fn + " \"$@\"\nelse\n  compdef " +
       fn + " " + program + "\nfi\n";
  return s;
}

}  // namespace rsl::cli

#include "spec/names.h"

#include <cctype>

#include "base/strings.h"

namespace rsl::spec {

namespace {

bool Lower(char c) { return c >= 'a' && c <= 'z'; }
bool Digit(char c) { return c >= '0' && c <= '9'; }
bool Alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
constexpr size_t kSha256HexLength = 64;

}  // namespace

std::string CheckDns1123Label(const std::string& name) {
  if (name.empty()) return "must not be empty";
  if (name.size() > kMaxLabelLength) {
    return "is " + std::to_string(name.size()) + " characters long, at most " +
           std::to_string(kMaxLabelLength) + " are allowed";
  }
  for (char c : name) {
    if (!(Lower(c) || Digit(c) || c == '-')) {
      return "may contain only lower-case letters, digits and '-' (found " +
             Quote(std::string(1, c)) + ")";
    }
  }
  if (name.front() == '-' || name.back() == '-') return "must start and end with a letter or digit";
  return "";
}

std::string CheckDns1123Subdomain(const std::string& name) {
  if (name.empty()) return "must not be empty";
  if (name.size() > kMaxSubdomainLength) return "is longer than 253 characters";
  for (const auto& label : Split(name, '.')) {
    std::string why = CheckDns1123Label(label);
    if (!why.empty()) return "has a part that " + why;
  }
  return "";
}

std::string CheckLabelKey(const std::string& key) {
  std::string name = key;
  size_t slash = key.find('/');
  if (slash != std::string::npos) {
    std::string why = CheckDns1123Subdomain(key.substr(0, slash));
    if (!why.empty()) return "prefix " + why;
    name = key.substr(slash + 1);
  }
  if (name.empty()) return "name part must not be empty";
  std::string why = CheckLabelValue(name);
  return why;
}

std::string CheckLabelValue(const std::string& value) {
  if (value.empty()) return "";
  if (value.size() > kMaxLabelLength) return "is longer than 63 characters";
  if (!Alnum(value.front()) || !Alnum(value.back())) {
    return "must start and end with a letter or digit";
  }
  for (char c : value) {
    if (!(Alnum(c) || c == '-' || c == '_' || c == '.')) {
      return "may contain only letters, digits, '-', '_' and '.'";
    }
  }
  return "";
}

std::string CheckSha256Digest(const std::string& text) {
  if (!StartsWith(text, "sha256:")) return "must start with \"sha256:\"";
  std::string hex = text.substr(7);
  if (hex.size() != kSha256HexLength) {
    return "must have 64 hex digits after \"sha256:\", got " + std::to_string(hex.size());
  }
  for (char c : hex) {
    if (!(Digit(c) || (c >= 'a' && c <= 'f'))) {
      return "must be lower-case hex (0-9a-f), found " + Quote(std::string(1, c));
    }
  }
  return "";
}

std::string CheckEnvName(const std::string& name) {
  if (name.empty()) return "must not be empty";
  if (Digit(name.front())) return "must not start with a digit";
  for (char c : name) {
    if (!(Alnum(c) || c == '_')) return "may contain only letters, digits and '_'";
  }
  return "";
}

const std::vector<std::string>& EngineBasicEnvNames() {
  static const std::vector<std::string> kNames = {"PATH", "HOME",   "LANG", "LC_ALL",
                                                  "TZ",   "TMPDIR", "USER", "LOGNAME"};
  return kNames;
}

std::string CheckEnvFromKey(const std::string& key, bool secret, std::string* hint) {
  if (std::string why = CheckEnvName(key); !why.empty()) {
    *hint = "keys become environment variables: [A-Za-z_][A-Za-z0-9_]*, e.g. DB_PASSWORD";
    return "key " + Quote(key) + " is not an environment variable name: it " + why;
  }
  if (StartsWith(key, "RSL_")) {
    *hint = "choose a name without the RSL_ prefix";
    return "key " + Quote(key) + " is reserved: RSL sets RSL_* itself";
  }
  if (key == "CUDA_VISIBLE_DEVICES") {
    *hint = "request GPUs with resources.gpu; RSL sets CUDA_VISIBLE_DEVICES to the placed ones";
    return "key " + Quote(key) + " is reserved: RSL sets it to the GPUs a step is placed on";
  }
  for (const std::string& basic : EngineBasicEnvNames()) {
    if (secret && key == basic) {
      *hint = "put it in a configmap or the step's env; a secret's value is masked in logs";
      return "key " + Quote(key) + " is reserved for secrets: the engine sets it for every step";
    }
  }
  return "";
}

std::string CheckSemver(const std::string& version) {
  std::string core = version;
  size_t cut = core.find_first_of("-+");
  std::string suffix;
  if (cut != std::string::npos) {
    suffix = core.substr(cut + 1);
    core = core.substr(0, cut);
    if (suffix.empty()) return "has an empty pre-release or build part";
    for (char c : suffix) {
      if (!(Alnum(c) || c == '.' || c == '-' || c == '+')) {
        return "pre-release/build may contain only letters, digits, '.' and '-'";
      }
    }
  }
  std::vector<std::string> parts = Split(core, '.');
  if (parts.size() != 3) return "must be MAJOR.MINOR.PATCH, e.g. 2.1.7";
  for (const auto& p : parts) {
    if (p.empty() || p.size() > 9) return "must be MAJOR.MINOR.PATCH, e.g. 2.1.7";
    for (char c : p) {
      if (!Digit(c)) return "must be MAJOR.MINOR.PATCH with numbers, e.g. 2.1.7";
    }
    if (p.size() > 1 && p.front() == '0') return "must not have leading zeros";
  }
  return "";
}

std::string DidYouMean(const std::string& word, const std::vector<std::string>& candidates) {
  std::string close = ClosestMatch(word, candidates);
  constexpr size_t kMinWordForTwoEdits = 4;
  constexpr int kTwoEdits = 2;
  if (!close.empty() || word.size() < kMinWordForTwoEdits) return close;
  int best = kTwoEdits + 1;
  for (const auto& c : candidates) {
    int d = EditDistance(ToLower(word), ToLower(c), kTwoEdits);
    if (d < best) {
      best = d;
      close = c;
    }
  }
  return close;
}

std::string StepInputVariable(const std::string& step) {
  std::string out = "RSL_INPUT_";
  for (char c : step) {
    char u = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out += ((u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9')) ? u : '_';
  }
  return out;
}

bool IsReservedStepName(const std::string& step) {
  return StepInputVariable(step) == "RSL_INPUT_URI";
}

std::string NormalizePackageName(std::string_view name) {
  std::string out;
  bool in_sep = false;
  for (char c : Trim(name)) {
    if (c == '-' || c == '_' || c == '.') {
      in_sep = true;
      continue;
    }
    if (in_sep && !out.empty()) out.push_back('-');
    in_sep = false;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

const std::vector<std::string>& Dtypes() {
  static const std::vector<std::string> dtypes = {
      "bool",    "int8",          "int16",       "int32",   "int64",    "uint8",
      "uint16",  "uint32",        "uint64",      "float16", "bfloat16", "float32",
      "float64", "float8_e4m3fn", "float8_e5m2", "string"};
  return dtypes;
}

bool IsDtype(const std::string& dtype) {
  for (const auto& d : Dtypes()) {
    if (d == dtype) return true;
  }
  return false;
}

}  // namespace rsl::spec

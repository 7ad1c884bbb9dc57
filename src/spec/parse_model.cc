#include "spec/parse_model.h"

#include <cctype>
#include <charconv>
#include <map>
#include <optional>
#include <regex>
#include <utility>

#include "base/strings.h"
#include "spec/names.h"

namespace rsl::spec {

namespace {

// A scalar written as a plain integer ("-3", "9007199254740993") that fits int64, exactly;
// nullopt for anything else (1.5, 1e3, .inf, text), which the double path handles.
std::optional<int64_t> ExactInt(const YAML::Node& node) {
  if (!node.IsScalar()) return std::nullopt;
  const std::string& text = node.Scalar();
  const char* begin = text.data() + (!text.empty() && text[0] == '+' ? 1 : 0);
  const char* end = text.data() + text.size();
  int64_t v = 0;
  auto res = std::from_chars(begin, end, v);
  if (res.ec != std::errc() || res.ptr != end || begin == end) return std::nullopt;
  return v;
}

constexpr int64_t kMaxDimension = int64_t{1} << 40;
const std::vector<std::string> kModelKeys = {"framework", "version", "buildFingerprint",
                                             "dependencies", "signature"};
const std::vector<std::string> kSignatureKeys = {"inputs", "outputs"};
const std::vector<std::string> kTensorKeys = {"name", "shape", "dtype", "constraints"};
const std::vector<std::string> kFrameworks = {"pytorch", "tensorflow", "onnx",
                                              "sklearn", "xgboost",    "custom"};

class ModelParser : public FieldParser {
 public:
  using FieldParser::FieldParser;

  void Model(const YAML::Node& n) {
    const std::string path = "spec.model";
    if (!r_.Map(n, path, kModelKeys)) return;
    ModelSpec m;
    if (!Reader::Has(n, "framework")) {
      r_.Missing(n, path + ".framework",
                 "add framework: pytorch (or " + Join(kFrameworks, ", ") + ")");
    } else if (auto v = r_.String(n["framework"], path + ".framework")) {
      bool known = false;
      for (const auto& f : kFrameworks) known = known || f == *v;
      if (!known) {
        r_.Fail(n["framework"], path + ".framework", "unknown framework " + Quote(*v),
                OneOf(*v, kFrameworks));
      }
      m.framework = *v;
    }
    if (!Reader::Has(n, "version")) {
      r_.Missing(n, path + ".version", "add version: \"1.0.0\"");
    } else if (auto v = r_.String(n["version"], path + ".version")) {
      std::string why = CheckSemver(*v);
      if (!why.empty()) {
        r_.Fail(n["version"], path + ".version", "version " + Quote(*v) + " " + why,
                "use a semantic version such as \"2.1.7\"");
      }
      m.version = *v;
    }
    if (Reader::Has(n, "buildFingerprint")) {
      const std::string p = path + ".buildFingerprint";
      if (auto v = r_.String(n["buildFingerprint"], p)) {
        std::string why = CheckSha256Digest(*v);
        if (!why.empty()) {
          r_.Fail(n["buildFingerprint"], p, "buildFingerprint " + why,
                  "write \"sha256:\" and the artifact's 64-hex-digit digest (sha256sum FILE)");
        }
        m.build_fingerprint = *v;
      }
    }
    if (Reader::Has(n, "dependencies")) {
      const YAML::Node deps = n["dependencies"];
      const std::string p = path + ".dependencies";
      if (auto list = r_.StringList(deps, p)) {
        std::map<std::string, size_t> first;  // normalised name -> index of its first pin
        for (size_t i = 0; i < list->size(); ++i) {
          auto dep = DependencyOf((*list)[i], deps[i], Index(p, i));
          if (!dep) continue;
          auto [it, fresh] = first.emplace(NormalizePackageName(dep->name), i);
          if (!fresh) {
            const std::string& earlier = (*list)[it->second];
            bool same = Trim(earlier.substr(earlier.find("==") + 2)) == dep->version;
            r_.Fail(deps[i], Index(p, i),
                    "dependency " + Quote((*list)[i]) + (same ? " repeats " : " conflicts with ") +
                        Quote(earlier) + " (" + Index(p, it->second) + ")",
                    "keep one pin per package (names compare case-insensitively, - _ . alike)");
            continue;
          }
          m.dependencies.push_back(*dep);
        }
      }
    }
    if (Reader::Has(n, "signature")) {
      const YAML::Node sig = n["signature"];
      const std::string p = path + ".signature";
      if (r_.Map(sig, p, kSignatureKeys)) {
        if (Reader::Has(sig, "inputs")) Tensors(sig["inputs"], p + ".inputs", &m.inputs);
        if (Reader::Has(sig, "outputs")) Tensors(sig["outputs"], p + ".outputs", &m.outputs);
      }
    }
    w_->model = m;
  }

  std::optional<Dependency> DependencyOf(const std::string& text, const YAML::Node& node,
                                         const std::string& p) {
    size_t eq = text.find("==");
    const std::string hint = "pin an exact version: name==version, e.g. torch==2.1.2+cu118";
    if (eq == std::string::npos) {
      size_t op = text.find_first_of("<>=~!");
      r_.Fail(node, p,
              op == std::string::npos ? "dependency " + Quote(text) + " has no version"
                                      : "dependency " + Quote(text) + " is not pinned exactly",
              hint);
      return std::nullopt;
    }
    Dependency d;
    d.name = std::string(Trim(text.substr(0, eq)));
    d.version = std::string(Trim(text.substr(eq + 2)));
    auto name_ok = [](const std::string& s) {
      if (s.empty() || !std::isalnum(static_cast<unsigned char>(s.front()))) return false;
      for (char c : s) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) {
          return false;
        }
      }
      return true;
    };
    // PEP 440 spellings (1!2.0rc1.post2+cu118), a release prefix (1.24.*), and Debian
    // versions for dpkg pins (1:1.24.2-1, 2.0~rc1-3).
    auto version_ok = [](const std::string& s) {
      static const std::regex prefix(R"(^([0-9]+!)?[0-9]+(\.[0-9]+)*\.\*$)");
      if (s.find('*') != std::string::npos) return std::regex_match(s, prefix);
      if (s.empty() || !std::isalnum(static_cast<unsigned char>(s.front()))) return false;
      for (char c : s) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ||
              c == '+' || c == '!' || c == ':' || c == '~')) {
          return false;
        }
      }
      return true;
    };
    if (!name_ok(d.name)) {
      r_.Fail(node, p, "dependency name " + Quote(d.name) + " is not a package name", hint);
      return std::nullopt;
    }
    if (!version_ok(d.version)) {
      r_.Fail(node, p, "dependency " + Quote(text) + " has an invalid version " + Quote(d.version),
              hint);
      return std::nullopt;
    }
    return d;
  }

  void Tensors(const YAML::Node& n, const std::string& path, std::vector<TensorSpec>* out) {
    if (!r_.Seq(n, path, "[{name: features, shape: [1, 128], dtype: float32}]")) return;
    for (size_t i = 0; i < n.size() && !r_.exhausted(); ++i) {
      if (auto t = Tensor(n[i], Index(path, i))) out->push_back(*t);
    }
  }

  std::optional<TensorSpec> Tensor(const YAML::Node& n, const std::string& path) {
    if (!r_.Map(n, path, kTensorKeys)) return std::nullopt;
    TensorSpec t;
    bool ok = true;
    if (!Reader::Has(n, "name")) {
      r_.Missing(n, path + ".name", "add name: the tensor's name");
      ok = false;
    } else if (auto v = r_.String(n["name"], path + ".name")) {
      t.name = *v;
    } else {
      ok = false;
    }
    if (!Reader::Has(n, "dtype")) {
      r_.Missing(n, path + ".dtype", "add dtype: float32 (or another)");
      ok = false;
    } else if (auto v = r_.String(n["dtype"], path + ".dtype")) {
      if (!IsDtype(*v)) {
        r_.Fail(n["dtype"], path + ".dtype", "unknown dtype " + Quote(*v), OneOf(*v, Dtypes()));
        ok = false;
      }
      t.dtype = *v;
    }
    if (!Reader::Has(n, "shape")) {
      r_.Missing(n, path + ".shape", "add shape: [1, 128] (-1 = any batch size)");
      ok = false;
    } else if (r_.Seq(n["shape"], path + ".shape", "shape: [-1, 128]")) {
      const YAML::Node shape = n["shape"];
      for (size_t d = 0; d < shape.size(); ++d) {
        auto dim = r_.Int(shape[d], Index(path + ".shape", d), -1, kMaxDimension);
        if (!dim) {
          ok = false;
          continue;
        }
        if (*dim == -1 && d > 0) {
          r_.Fail(shape[d], Index(path + ".shape", d),
                  "-1 (any size) is allowed only in the first, batch dimension",
                  "give dimension " + std::to_string(d) + " a fixed size");
          ok = false;
        } else if (*dim == 0) {
          r_.Fail(shape[d], Index(path + ".shape", d), "dimension size 0",
                  "sizes are >= 1, or -1 for the batch dimension");
          ok = false;
        }
        t.shape.push_back(*dim);
      }
    }
    if (Reader::Has(n, "constraints")) {
      const YAML::Node c = n["constraints"];
      const std::string cp = path + ".constraints";
      if (r_.Map(c, cp, {"range"}) && Reader::Has(c, "range")) {
        const YAML::Node range = c["range"];
        if (r_.Seq(range, cp + ".range", "range: [0.0, 1.0]")) {
          if (range.size() != 2) {
            r_.Fail(range, cp + ".range", "range needs exactly two numbers [low, high]",
                    "range: [0.0, 1.0]");
            ok = false;
          } else {
            auto lo = r_.Number(range[0], Index(cp + ".range", 0));
            auto hi = r_.Number(range[1], Index(cp + ".range", 1));
            auto ilo = ExactInt(range[0]), ihi = ExactInt(range[1]);
            bool inverted = ilo && ihi ? *ilo > *ihi : lo && hi && *lo > *hi;
            if (inverted) {
              r_.Fail(range, cp + ".range", "range low end is greater than its high end",
                      "write [low, high]");
              ok = false;
            } else if (lo && hi) {
              t.range = std::make_pair(*lo, *hi);
              if (ilo && ihi) t.int_range = std::make_pair(*ilo, *ihi);
            } else {
              ok = false;
            }
          }
        }
      }
    }
    if (!ok) return std::nullopt;
    return t;
  }
};

}  // namespace

void ParseModel(ParseContext* c, const YAML::Node& n) { ModelParser(c).Model(n); }

void ParseTensors(ParseContext* c, const YAML::Node& n, const std::string& path,
                  std::vector<TensorSpec>* out) {
  ModelParser(c).Tensors(n, path, out);
}

}  // namespace rsl::spec

#include "spec/parse_data.h"

#include <filesystem>

#include "base/codes.h"
#include "base/strings.h"
#include "schema/schema.h"
#include "spec/names.h"
#include "spec/source_map.h"

namespace rsl::spec {

namespace {

const std::vector<std::string> kDataKeys = {"input", "output"};
const std::vector<std::string> kInputKeys = {"uri", "format", "schema", "quality"};
const std::vector<std::string> kQualityKeys = {"completeness", "uniqueness", "uniqueKey",
                                               "freshness"};
const std::vector<std::string> kOutputKeys = {"uri", "policy", "schemaRef", "features"};
const std::vector<std::string> kOutputPolicies = {"replace", "refuse", "versioned"};
const std::vector<std::string> kFeatureKeys = {"name", "type"};
const std::vector<std::string> kFormats = {"avro", "csv", "jsonl", "parquet"};
const std::vector<std::string> kSchemes = {"file", "s3", "ceph", "hdfs"};

class DataParser : public FieldParser {
 public:
  using FieldParser::FieldParser;

  void Data(const YAML::Node& n) {
    if (!r_.Map(n, "spec.data", kDataKeys)) return;
    if (Reader::Has(n, "input")) {
      if (auto in = Input(n["input"], "spec.data.input")) w_->data.input = *in;
    }
    if (Reader::Has(n, "output")) Output(n["output"]);
  }

  std::optional<std::string> Uri(const YAML::Node& map, const std::string& path) {
    if (!Reader::Has(map, "uri")) {
      r_.Missing(map, path + ".uri", "e.g. uri: hdfs://ns1/raw/transactions");
      return std::nullopt;
    }
    auto uri = r_.String(map["uri"], path + ".uri");
    if (!uri) return std::nullopt;
    if (uri->empty()) {
      r_.Fail(map["uri"], path + ".uri", "uri is empty", "e.g. file:///data/in");
      return std::nullopt;
    }
    size_t sep = uri->find("://");
    if (sep != std::string::npos) {
      std::string scheme = uri->substr(0, sep);
      bool known = false;
      for (const auto& s : kSchemes) known = known || s == scheme;
      if (!known) {
        std::string close = DidYouMean(scheme, kSchemes);
        r_.Fail(map["uri"], path + ".uri", "unsupported URI scheme " + Quote(scheme),
                close.empty() ? "schemes: file:// s3:// ceph:// hdfs://"
                              : "did you mean '" + close + "://'?");
        return std::nullopt;
      }
      if (uri->size() == sep + 3) {
        r_.Fail(map["uri"], path + ".uri", "uri " + Quote(*uri) + " names no location",
                "e.g. " + scheme + "://bucket/prefix");
        return std::nullopt;
      }
    }
    return ResolveRelative(map["uri"], path + ".uri", *uri);
  }

  // A relative local URI made absolute against the base directory, or refused, as the
  // options say (ParseOptions::relative_uris).
  std::optional<std::string> ResolveRelative(const YAML::Node& node, const std::string& path,
                                             const std::string& uri) {
    using Mode = ParseOptions::RelativeUris;
    bool file_scheme = StartsWith(uri, "file://");
    if (!file_scheme && uri.find("://") != std::string::npos) return uri;  // remote
    std::string local = file_scheme ? uri.substr(7) : uri;
    if (local.empty() || local[0] == '/' || options_.relative_uris == Mode::kKeep) return uri;
    if (options_.relative_uris == Mode::kRefuse || options_.base_dir.empty()) {
      r_.Fail(node, path,
              "relative uri " + Quote(uri) + " has no base directory to resolve it against",
              "write an absolute path (e.g. file:///data/out), or submit the file with seedctl, "
              "which resolves it against the file's directory")
          .Value(uri);
      return std::nullopt;
    }
    std::string absolute =
        (std::filesystem::path(options_.base_dir) / local).lexically_normal().string();
    return file_scheme ? "file://" + absolute : absolute;
  }

  // The input block at `path`; nullopt when it is not a mapping (its errors are recorded).
  std::optional<DataInput> Input(const YAML::Node& n, const std::string& path) {
    if (!r_.Map(n, path, kInputKeys)) return std::nullopt;
    DataInput in;
    if (auto uri = Uri(n, path)) in.uri = *uri;
    if (Reader::Has(n, "format")) {
      if (auto f = r_.String(n["format"], path + ".format")) {
        bool known = false;
        for (const auto& k : kFormats) known = known || k == *f;
        if (!known) {
          r_.Fail(n["format"], path + ".format", "unknown format " + Quote(*f),
                  OneOf(*f, kFormats));
        } else {
          in.format = *f;
        }
      }
    }
    if (Reader::Has(n, "schema")) {
      const YAML::Node node = n["schema"];
      if (auto text = r_.String(node, path + ".schema")) {
        in.schema_text = *text;
        auto schema = schema::ParseSchema(*text);
        if (!schema.ok()) {
          Error& e = r_.Fail(node, path + ".schema", schema.error().message, schema.error().hint);
          e.value.clear();
          if (schema.error().pos.known()) {
            e.pos = MapInnerPos(text_, r_.Pos(node), schema.error().pos.line,
                                schema.error().pos.column);
          }
        } else {
          in.schema = *schema;
        }
      }
    }
    if (Reader::Has(n, "quality")) QualityOf(n["quality"], path + ".quality", &in.quality);
    return in;
  }

  void QualityOf(const YAML::Node& n, const std::string& path, Quality* q) {
    if (!r_.Map(n, path, kQualityKeys)) return;
    for (const char* key : {"completeness", "uniqueness"}) {
      if (!Reader::Has(n, key)) continue;
      const std::string p = path + "." + key;
      auto v = r_.Number(n[key], p);
      if (!v) continue;
      if (*v < 0 || *v > kMaxPercent) {
        r_.Fail(n[key], p, std::string(key) + " " + n[key].Scalar() + " is outside 0..100",
                "thresholds are percentages, e.g. 99.9");
        continue;
      }
      (std::string(key) == "completeness" ? q->completeness : q->uniqueness) = *v;
    }
    if (Reader::Has(n, "uniqueKey")) {
      if (auto v = r_.String(n["uniqueKey"], path + ".uniqueKey")) q->unique_key = *v;
    }
    if (Reader::Has(n, "freshness")) {
      q->freshness_ms = Duration(n["freshness"], path + ".freshness", true);
    }
  }

  void Output(const YAML::Node& n) {
    const std::string path = "spec.data.output";
    if (!r_.Map(n, path, kOutputKeys)) return;
    DataOutput out;
    if (auto uri = Uri(n, path)) out.uri = *uri;
    if (Reader::Has(n, "policy")) {
      if (auto v = r_.String(n["policy"], path + ".policy")) {
        if (*v == "replace") {
          out.policy = OutputPolicy::kReplace;
        } else if (*v == "refuse") {
          out.policy = OutputPolicy::kRefuse;
        } else if (*v == "versioned") {
          out.policy = OutputPolicy::kVersioned;
        } else {
          std::string close = DidYouMean(*v, kOutputPolicies);
          r_.Fail(n["policy"], path + ".policy", "unknown output policy " + Quote(*v),
                  close.empty() ? "policies: replace, refuse, versioned"
                                : "did you mean '" + close + "'?");
        }
      }
    }
    if (Reader::Has(n, "schemaRef")) {
      if (auto v = r_.String(n["schemaRef"], path + ".schemaRef")) {
        if (*v != "input") {
          r_.Fail(n["schemaRef"], path + ".schemaRef",
                  "schemaRef " + Quote(*v) + " is not supported",
                  "the only reference is schemaRef: input");
        } else {
          out.schema_ref = *v;
        }
      }
    }
    if (Reader::Has(n, "features")) {
      const YAML::Node fs = n["features"];
      const std::string p = path + ".features";
      if (r_.Seq(fs, p, "features: [{name: user_embedding, type: \"float32[128]\"}]")) {
        for (size_t i = 0; i < fs.size(); ++i) {
          const std::string fp = Index(p, i);
          if (!r_.Map(fs[i], fp, kFeatureKeys)) continue;
          schema::FeatureDecl f;
          bool ok = true;
          for (const char* key : {"name", "type"}) {
            if (!Reader::Has(fs[i], key)) {
              r_.Missing(fs[i], fp + "." + key, "features need a name and a type");
              ok = false;
            } else if (auto v = r_.String(fs[i][key], fp + "." + key)) {
              (std::string(key) == "name" ? f.name : f.type) = *v;
            } else {
              ok = false;
            }
          }
          if (ok) out.features.push_back(f);
        }
      }
    }
    w_->data.output = out;
  }
};

}  // namespace

void ParseData(ParseContext* c, const YAML::Node& n) { DataParser(c).Data(n); }

Result<DataInput> ParseDataInputBlock(const std::string& yaml, const std::string& file,
                                      const YAML::Node& n, const std::string& path) {
  Workload w;
  w.source_file = file;
  Errors errors;
  ParseOptions options;  // relative URIs kept as written: they name paths from the caller's cwd
  ParseContext c(yaml, &w, &errors, options);
  std::optional<DataInput> in;
  try {
    in = DataParser(&c).Input(n, path);
  } catch (const YAML::Exception& e) {
    return Error(codes::kSpecParseError, e.msg)
        .At(SourcePos{file, e.mark.line + 1, e.mark.column + 1})
        .Path(path);
  }
  if (!errors.empty()) {
    SortByPosition(&errors);
    return errors.front();
  }
  return *in;
}

}  // namespace rsl::spec

#include "schema/schema.h"

#include <set>

#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "base/strings.h"
#include "schema/compact.h"

namespace rsl::schema {

using nlohmann::ordered_json;

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kNull:
      return "null";
    case Kind::kBoolean:
      return "boolean";
    case Kind::kInt:
      return "int";
    case Kind::kLong:
      return "long";
    case Kind::kFloat:
      return "float";
    case Kind::kDouble:
      return "double";
    case Kind::kBytes:
      return "bytes";
    case Kind::kString:
      return "string";
    case Kind::kRecord:
      return "record";
    case Kind::kEnum:
      return "enum";
    case Kind::kArray:
      return "array";
    case Kind::kMap:
      return "map";
    case Kind::kUnion:
      return "union";
    case Kind::kFixed:
      return "fixed";
  }
  return "?";
}

namespace {

// Named types are written in full once and by name afterwards, as Avro requires.
ordered_json ToJsonValue(const Type& t, std::set<std::string>* written) {
  bool named = t.kind == Kind::kRecord || t.kind == Kind::kEnum || t.kind == Kind::kFixed;
  if (named && written->count(t.name)) return t.name;
  if (named) written->insert(t.name);
  ordered_json j;
  switch (t.kind) {
    case Kind::kRecord: {
      j["type"] = "record";
      j["name"] = t.name;
      ordered_json fields = ordered_json::array();
      for (const auto& f : t.fields) {
        ordered_json fj;
        fj["name"] = f.name;
        fj["type"] = ToJsonValue(*f.type, written);
        if (f.default_json) fj["default"] = ordered_json::parse(*f.default_json);
        if (!f.aliases.empty()) fj["aliases"] = f.aliases;
        if (!f.constraints.empty()) {
          ordered_json c;
          if (!f.constraints.enum_values.empty()) c["enum"] = f.constraints.enum_values;
          if (f.constraints.min_int)
            c["min"] = *f.constraints.min_int;
          else if (f.constraints.min)
            c["min"] = *f.constraints.min;
          if (f.constraints.max_int)
            c["max"] = *f.constraints.max_int;
          else if (f.constraints.max)
            c["max"] = *f.constraints.max;
          fj["constraints"] = c;
        }
        fields.push_back(std::move(fj));
      }
      j["fields"] = std::move(fields);
      break;
    }
    case Kind::kEnum:
      j["type"] = "enum";
      j["name"] = t.name;
      j["symbols"] = t.symbols;
      break;
    case Kind::kFixed:
      j["type"] = "fixed";
      j["name"] = t.name;
      j["size"] = t.size;
      break;
    case Kind::kArray:
      j["type"] = "array";
      j["items"] = ToJsonValue(*t.items, written);
      if (t.size > 0) j["size"] = t.size;
      break;
    case Kind::kMap:
      j["type"] = "map";
      j["values"] = ToJsonValue(*t.items, written);
      break;
    case Kind::kUnion: {
      ordered_json branches = ordered_json::array();
      for (const auto& b : t.branches) branches.push_back(ToJsonValue(*b, written));
      return branches;
    }
    default:
      if (t.logical_type.empty()) return KindName(t.kind);
      j["type"] = KindName(t.kind);
      break;
  }
  if (!t.logical_type.empty()) j["logicalType"] = t.logical_type;
  if (t.IsDecimal()) {
    j["precision"] = t.precision;
    j["scale"] = t.scale;
  }
  return j;
}

}  // namespace

std::string Type::ToJson() const {
  std::set<std::string> written;
  return ToJsonValue(*this, &written).dump();
}

std::string Type::ToString() const {
  if (IsDecimal()) {
    std::string s = "decimal(" + std::to_string(precision);
    s += ",";
    s += std::to_string(scale);
    s += ")";
    return s;
  }
  switch (kind) {
    case Kind::kRecord:
    case Kind::kEnum:
      return name;
    case Kind::kFixed:
      return "fixed(" + std::to_string(size) + ")";
    case Kind::kArray: {
      std::string s = "array<" + items->ToString() + ">";
      if (size > 0) s += "[" + std::to_string(size) + "]";
      return s;
    }
    case Kind::kMap:
      return "map<" + items->ToString() + ">";
    case Kind::kUnion: {
      std::vector<std::string> parts;
      for (const auto& b : branches) parts.push_back(b->ToString());
      return "union[" + Join(parts, ",") + "]";
    }
    default: {
      std::string s = KindName(kind);
      if (!logical_type.empty()) s += "(" + logical_type + ")";
      return s;
    }
  }
}

bool Type::IsNullable() const {
  if (kind == Kind::kNull) return true;
  if (kind != Kind::kUnion) return false;
  for (const auto& b : branches) {
    if (b->kind == Kind::kNull) return true;
  }
  return false;
}

const Type& Type::NonNull() const {
  if (kind != Kind::kUnion) return *this;
  const Type* only = nullptr;
  int non_null = 0;
  for (const auto& b : branches) {
    if (b->kind != Kind::kNull) {
      only = b.get();
      ++non_null;
    }
  }
  return non_null == 1 ? *only : *this;
}

const Field* Schema::FindField(const std::string& name) const {
  if (!root) return nullptr;
  for (const auto& f : root->fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const Field* Schema::FindPath(const std::string& path) const {
  if (!root) return nullptr;
  const Type* t = root.get();
  const Field* found = nullptr;
  size_t at = 0;
  for (int depth = 0; depth < 64; depth++) {
    size_t dot = path.find('.', at);
    std::string name = path.substr(at, dot == std::string::npos ? std::string::npos : dot - at);
    const Type& rec = t->NonNull();
    if (rec.kind != Kind::kRecord) return nullptr;
    found = nullptr;
    for (const auto& f : rec.fields) {
      if (f.name == name) found = &f;
    }
    if (found == nullptr || dot == std::string::npos) return found;
    t = found->type.get();
    at = dot + 1;
  }
  return nullptr;
}

namespace {

void AddPaths(const Type& t, const std::string& prefix, int depth, std::vector<std::string>* out) {
  const Type& rec = t.NonNull();
  if (rec.kind != Kind::kRecord || depth > 32) return;
  for (const auto& f : rec.fields) {
    out->push_back(prefix + f.name);
    AddPaths(*f.type, prefix + f.name + ".", depth + 1, out);
  }
}

}  // namespace

std::vector<std::string> Schema::RecordPaths() const {
  std::vector<std::string> out;
  if (!root) return out;
  for (const auto& f : root->fields) out.push_back(f.name);
  for (const auto& f : root->fields) AddPaths(*f.type, f.name + ".", 1, &out);
  return out;
}

Result<Schema> ParseSchema(const std::string& text) {
  std::string_view t = Trim(text);
  if (t.empty()) {
    return Error(codes::kSpecInvalid, "schema is empty")
        .Hint("write \"name:type,...\" or an Avro record schema");
  }
  if (t.front() == '{') return ParseAvroSchema(text);
  return ParseCompactSchema(text);
}

Result<Schema> ExtendSchema(const Schema& input, const std::vector<FeatureDecl>& features) {
  if (!input.root || input.root->kind != Kind::kRecord) {
    return Error(codes::kSpecInvalid, "schemaRef: input needs an input record schema")
        .Hint("declare data.input.schema");
  }
  auto record = std::make_shared<Type>(*input.root);
  std::set<std::string> names;
  for (const auto& f : record->fields) names.insert(f.name);
  for (size_t i = 0; i < features.size(); ++i) {
    const auto& feature = features[i];
    std::string where = "features[" + std::to_string(i) + "]";
    if (!IsAvroName(feature.name)) {
      return Error(codes::kSpecInvalid,
                   where + ": feature name " + Quote(feature.name) + " is not a valid name")
          .Path(where + ".name")
          .Value(feature.name)
          .Hint("letters, digits and '_', not starting with a digit");
    }
    if (!names.insert(feature.name).second) {
      return Error(codes::kSpecInvalid, where + ": feature " + Quote(feature.name) +
                                            " already exists in the input schema")
          .Path(where + ".name")
          .Value(feature.name)
          .Hint("rename the feature");
    }
    auto type = ParseCompactType(feature.type);
    if (!type.ok()) {
      Error e = type.error();
      e.message = where + ": " + e.message;
      e.path = where + ".type";
      e.value = feature.type;
      return e;
    }
    Field f;
    f.name = feature.name;
    f.type = *type;
    record->fields.push_back(std::move(f));
  }
  Schema out;
  out.root = record;
  return out;
}

}  // namespace rsl::schema

// Avro record schemas (JSON) -> the schema model. Follows the Avro 1.11 specification for
// primitives, records, enums, arrays, maps, unions and fixed; adds RSL's field attribute
// `constraints` {enum, min, max}. A field-level "logicalType" (as the seed writes it, next to
// "type": "long") applies to the field's primitive type.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "base/strings.h"
#include "schema/compact.h"
#include "schema/schema.h"

namespace rsl::schema {

namespace {

using nlohmann::json;

// Nesting beyond this is refused: real schemas are a few levels deep, and the limit keeps
// recursion bounded for hostile input.
constexpr int kMaxTypeDepth = 64;
// Decimal digits a contract may declare: far beyond any writer's (Parquet's fixed decimals stop
// at 38), small enough that no size arithmetic overflows.
constexpr int64_t kMaxDecimalPrecision = 1000;

struct Prim {
  const char* name;
  Kind kind;
};
constexpr Prim kPrimitives[] = {
    {"null", Kind::kNull},   {"boolean", Kind::kBoolean}, {"int", Kind::kInt},
    {"long", Kind::kLong},   {"float", Kind::kFloat},     {"double", Kind::kDouble},
    {"bytes", Kind::kBytes}, {"string", Kind::kString},
};

const std::vector<std::string>& TypeWords() {
  static const std::vector<std::string> words = {"null",   "boolean", "int",    "long",   "float",
                                                 "double", "bytes",   "string", "record", "enum",
                                                 "array",  "map",     "fixed"};
  return words;
}

std::string Shown(const json& j) {
  std::string s = j.dump();
  constexpr size_t kMaxShown = 60;
  if (s.size() > kMaxShown) s = s.substr(0, kMaxShown) + "...";
  return s;
}

class AvroParser {
 public:
  AvroParser(const std::string& text, InvalidLogical invalid) : text_(text), invalid_(invalid) {}

  Result<TypePtr> Type(const json& j, const std::string& where, int depth) {
    if (depth > kMaxTypeDepth) {
      return Fail(where, "schema nested more than " + std::to_string(kMaxTypeDepth) + " levels",
                  "flatten the schema", "");
    }
    if (j.is_string()) return Named(j.get<std::string>(), where);
    if (j.is_array()) return Union(j, where, depth);
    if (!j.is_object()) {
      return Fail(where, "a type must be a name, an object or a union list, got " + Shown(j),
                  "e.g. \"string\" or {\"type\": \"array\", \"items\": \"float\"}", "");
    }
    auto it = j.find("type");
    if (it == j.end()) {
      return Fail(where, "type object has no \"type\"", "add \"type\": \"record\" (or another)",
                  "");
    }
    if (!it->is_string()) return Type(*it, where + ".type", depth + 1);
    const std::string t = it->get<std::string>();
    if (t == "record" || t == "error") return Record(j, where, depth);
    if (t == "enum") return Enum(j, where);
    if (t == "array" || t == "map") return Container(j, t, where, depth);
    if (t == "fixed") return Fixed(j, where);
    auto base = Named(t, where);
    if (!base.ok()) return base;
    return WithLogical(*base, j, where);
  }

  Error Fail(const std::string& where, const std::string& message, const std::string& hint,
             const std::string& anchor) {
    Error e(codes::kSpecInvalid, (where.empty() ? "" : where + ": ") + message);
    e.hint = hint;
    Locate(anchor, &e.pos);
    return e;
  }

 private:
  // Best-effort position: the first occurrence of `"anchor"` in the text (nlohmann keeps no
  // positions for parsed values).
  void Locate(const std::string& anchor, SourcePos* pos) const {
    if (anchor.empty()) return;
    size_t at = text_.find("\"" + anchor + "\"");
    if (at == std::string::npos) return;
    pos->line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < at; ++i) {
      if (text_[i] == '\n') {
        ++pos->line;
        line_start = i + 1;
      }
    }
    pos->column = static_cast<int>(at - line_start) + 1;
  }

  Result<TypePtr> Named(const std::string& name, const std::string& where) {
    for (const auto& p : kPrimitives) {
      if (name == p.name) {
        auto t = std::make_shared<schema::Type>();
        t->kind = p.kind;
        return TypePtr(t);
      }
    }
    auto found = names_.find(name);
    if (found == names_.end() && !namespace_.empty()) found = names_.find(namespace_ + "." + name);
    if (found != names_.end()) return found->second;
    if (defining_.count(name)) {
      return Fail(where, "recursive type " + Quote(name) + " is not supported",
                  "RSL data contracts are flat records; drop the self-reference", name);
    }
    std::vector<std::string> candidates = TypeWords();
    for (const auto& [n, unused] : names_) candidates.push_back(n);
    std::string close = ClosestMatch(name, candidates);
    return Fail(where, "unknown type " + Quote(name),
                close.empty() ? "primitives: null boolean int long float double bytes string"
                              : "did you mean '" + close + "'?",
                name);
  }

  Result<TypePtr> WithLogical(TypePtr base, const json& j, const std::string& where) {
    auto lt = j.find("logicalType");
    if (lt == j.end()) return base;
    if (!lt->is_string()) {
      return Fail(where, "logicalType must be a string, got " + Shown(*lt), "", "logicalType");
    }
    // Avro defines logical types on primitives, fixed and containers only; on a record, enum
    // or union (also one reached by name, or by a field-level "logicalType") it is ignored,
    // as Avro implementations ignore logical types they cannot apply.
    if (base->kind == Kind::kRecord || base->kind == Kind::kEnum || base->kind == Kind::kUnion) {
      return base;
    }
    auto t = std::make_shared<schema::Type>(*base);
    t->logical_type = lt->get<std::string>();
    if (t->IsDecimal()) {
      Status ok = Decimal(j, where, t.get());
      if (!ok.ok()) {
        if (invalid_ == InvalidLogical::kIgnore) return base;
        return ok.error();
      }
    }
    return TypePtr(t);
  }

  // The decimal's precision and scale (Avro 1.11 "Decimal"): on bytes or fixed, precision a
  // positive integer that a fixed's size can hold, scale (default 0) between 0 and precision.
  Status Decimal(const json& j, const std::string& where, schema::Type* t) {
    const std::string hint =
        "e.g. {\"type\": \"bytes\", \"logicalType\": \"decimal\", \"precision\": 10, "
        "\"scale\": 2}";
    if (t->kind != Kind::kBytes && t->kind != Kind::kFixed) {
      return Fail(
          where,
          "logicalType decimal applies to bytes or fixed, not " + std::string(KindName(t->kind)),
          hint, "logicalType");
    }
    auto p = j.find("precision");
    if (p == j.end() || !p->is_number_integer() || p->get<int64_t>() < 1 ||
        p->get<int64_t>() > kMaxDecimalPrecision) {
      return Fail(where,
                  "decimal needs an integer \"precision\" between 1 and " +
                      std::to_string(kMaxDecimalPrecision) + ", got " +
                      (p == j.end() ? std::string("none") : Shown(*p)),
                  hint, "precision");
    }
    t->precision = static_cast<int>(p->get<int64_t>());
    if (auto s = j.find("scale"); s != j.end()) {
      if (!s->is_number_integer() || s->get<int64_t>() < 0 || s->get<int64_t>() > t->precision) {
        return Fail(where,
                    "decimal scale must be an integer between 0 and its precision (" +
                        std::to_string(t->precision) + "), got " + Shown(*s),
                    hint, "scale");
      }
      t->scale = static_cast<int>(s->get<int64_t>());
    }
    if (t->kind == Kind::kFixed) {
      // n bytes of two's complement hold floor(log10(2^(8n-1) - 1)) decimal digits.
      int64_t digits = t->size <= 0
                           ? 0
                           : static_cast<int64_t>(std::floor(
                                 static_cast<double>(8 * std::min<int64_t>(t->size, 1024) - 1) *
                                 std::log10(2.0)));
      if (t->precision > digits) {
        return Fail(where,
                    "decimal precision " + std::to_string(t->precision) + " does not fit fixed " +
                        Quote(t->name) + " of " + std::to_string(t->size) + " bytes (at most " +
                        std::to_string(digits) + " digits)",
                    "raise the fixed's size or lower the precision", "precision");
      }
    }
    return Status::Ok();
  }

  Result<TypePtr> Union(const json& j, const std::string& where, int depth) {
    if (j.empty()) return Fail(where, "empty union", "list at least one type", "");
    auto t = std::make_shared<schema::Type>();
    t->kind = Kind::kUnion;
    std::set<std::string> seen;
    for (size_t i = 0; i < j.size(); ++i) {
      std::string w = where + "[" + std::to_string(i) + "]";
      auto branch = Type(j[i], w, depth + 1);
      if (!branch.ok()) return branch;
      if ((*branch)->kind == Kind::kUnion) {
        return Fail(w, "a union may not directly contain another union",
                    "list every branch in one union", "");
      }
      std::string key = (*branch)->name.empty() ? KindName((*branch)->kind) : (*branch)->name;
      if (!seen.insert(key).second) {
        return Fail(w, "union contains " + Quote(key) + " twice", "drop the duplicate branch", "");
      }
      t->branches.push_back(*branch);
    }
    return TypePtr(t);
  }

  Result<std::string> Name(const json& j, const std::string& where, const char* what) {
    auto n = j.find("name");
    if (n == j.end() || !n->is_string()) {
      return Fail(where, std::string(what) + " needs a string \"name\"", "add \"name\": \"...\"",
                  "");
    }
    std::string name = n->get<std::string>();
    std::string last = name.substr(name.rfind('.') == std::string::npos ? 0 : name.rfind('.') + 1);
    if (!IsAvroName(last)) {
      return Fail(where, std::string(what) + " name " + Quote(name) + " is not a valid Avro name",
                  "letters, digits and '_', not starting with a digit", name);
    }
    auto ns = j.find("namespace");
    if (name.find('.') == std::string::npos && ns != j.end() && ns->is_string() &&
        !ns->get<std::string>().empty()) {
      name = ns->get<std::string>() + "." + name;
    } else if (name.find('.') == std::string::npos && !namespace_.empty()) {
      name = namespace_ + "." + name;
    }
    if (names_.count(name) || defining_.count(name)) {
      return Fail(where, "type " + Quote(name) + " is defined twice",
                  "define it once and refer to it by name", last);
    }
    return name;
  }

  void Register(const std::string& full, TypePtr t) {
    names_[full] = t;
    size_t dot = full.rfind('.');
    if (dot != std::string::npos) names_.emplace(full.substr(dot + 1), t);
  }

  Result<TypePtr> Record(const json& j, const std::string& where, int depth) {
    auto name = Name(j, where, "record");
    if (!name.ok()) return name.error();
    auto fields = j.find("fields");
    if (fields == j.end() || !fields->is_array()) {
      return Fail(where, "record " + Quote(*name) + " needs a \"fields\" list",
                  "add \"fields\": [{\"name\": ..., \"type\": ...}]", "");
    }
    auto t = std::make_shared<schema::Type>();
    t->kind = Kind::kRecord;
    t->name = *name;
    std::string saved_ns = namespace_;
    size_t dot = name->rfind('.');
    namespace_ = dot == std::string::npos ? "" : name->substr(0, dot);
    defining_.insert(*name);
    defining_.insert(name->substr(dot == std::string::npos ? 0 : dot + 1));
    std::set<std::string> seen;
    for (size_t i = 0; i < fields->size(); ++i) {
      std::string w = where + (where.empty() ? "" : ".") + "fields[" + std::to_string(i) + "]";
      auto f = FieldOf((*fields)[i], w, depth);
      if (!f.ok()) return f.error();
      if (!seen.insert(f->name).second) {
        return Fail(w, "duplicate field " + Quote(f->name), "each field name must be unique",
                    f->name);
      }
      t->fields.push_back(std::move(f).value());
    }
    defining_.erase(*name);
    defining_.erase(name->substr(dot == std::string::npos ? 0 : dot + 1));
    namespace_ = saved_ns;
    TypePtr done = t;
    Register(*name, done);
    return done;
  }

  Result<Field> FieldOf(const json& j, const std::string& where, int depth) {
    if (!j.is_object()) {
      return Fail(where, "a field must be an object, got " + Shown(j),
                  "{\"name\": \"x\", \"type\": \"long\"}", "");
    }
    static const std::vector<std::string> kKeys = {
        "name",  "type",        "doc",         "default",   "aliases",
        "order", "constraints", "logicalType", "precision", "scale"};
    Field f;
    auto n = j.find("name");
    if (n == j.end() || !n->is_string() || !IsAvroName(n->get<std::string>())) {
      return Fail(where,
                  "field needs a valid \"name\" (got " +
                      (n == j.end() ? std::string("none") : Shown(*n)) + ")",
                  "letters, digits and '_', not starting with a digit", "");
    }
    f.name = n->get<std::string>();
    std::string w = where + " (" + f.name + ")";
    auto type = j.find("type");
    if (type == j.end()) {
      return Fail(w, "field has no \"type\"", "add \"type\": \"string\" (or another)", f.name);
    }
    auto t = Type(*type, w, depth + 1);
    if (!t.ok()) return t.error();
    f.type = *t;
    if (j.contains("logicalType")) {
      auto with = WithLogical(f.type, j, w);
      if (!with.ok()) return with.error();
      f.type = *with;
    }
    if (j.contains("default")) f.default_json = j["default"].dump();
    if (auto a = j.find("aliases"); a != j.end()) {
      if (!a->is_array()) return Fail(w, "aliases must be a list of names", "", f.name);
      for (const auto& alias : *a) {
        if (!alias.is_string()) return Fail(w, "aliases must be a list of names", "", f.name);
        f.aliases.push_back(alias.get<std::string>());
      }
    }
    if (auto c = j.find("constraints"); c != j.end()) {
      auto cs = ConstraintsOf(*c, w, f);
      if (!cs.ok()) return cs.error();
      f.constraints = *cs;
    }
    (void)kKeys;
    return f;
  }

  Result<Constraints> ConstraintsOf(const json& j, const std::string& where, const Field& f) {
    if (!j.is_object()) {
      return Fail(where, "constraints must be an object", "{\"min\": 0, \"max\": 1}", f.name);
    }
    Constraints c;
    // Constraints of an array or map constrain its items ("items[]" in the data contract).
    const schema::Type* items = &f.type->NonNull();
    for (int depth = 0;
         depth < 32 && (items->kind == Kind::kArray || items->kind == Kind::kMap) && items->items;
         depth++) {
      items = &items->items->NonNull();
    }
    const schema::Type& base = *items;
    bool numeric = base.kind == Kind::kInt || base.kind == Kind::kLong ||
                   base.kind == Kind::kFloat || base.kind == Kind::kDouble || base.IsDecimal();
    for (const auto& [key, value] : j.items()) {
      if (key == "enum") {
        if (!value.is_array() || value.empty()) {
          return Fail(where, "constraints.enum must be a non-empty list of strings", "", f.name);
        }
        for (const auto& v : value) {
          if (!v.is_string()) {
            return Fail(where, "constraints.enum must be a list of strings, got " + Shown(v), "",
                        f.name);
          }
          c.enum_values.push_back(v.get<std::string>());
        }
        if (base.kind != Kind::kString && base.kind != Kind::kEnum) {
          return Fail(where, "constraints.enum applies to strings, not " + base.ToString(),
                      "use min/max for numbers", f.name);
        }
      } else if (key == "min" || key == "max") {
        if (!value.is_number()) {
          return Fail(where, "constraints." + key + " must be a number, got " + Shown(value), "",
                      f.name);
        }
        if (!numeric) {
          return Fail(where, "constraints." + key + " applies to numbers, not " + base.ToString(),
                      "use enum for strings", f.name);
        }
        (key == "min" ? c.min : c.max) = value.get<double>();
        if (value.is_number_integer() &&
            (value.is_number_unsigned() ? value.get<uint64_t>() <= INT64_MAX : true)) {
          (key == "min" ? c.min_int : c.max_int) = value.get<int64_t>();
        }
      } else {
        std::string close = ClosestMatch(key, {"enum", "min", "max"});
        return Fail(where, "unknown constraint " + Quote(key),
                    close.empty() ? "constraints: enum, min, max" : "did you mean '" + close + "'?",
                    key);
      }
    }
    if (c.min && c.max && *c.min > *c.max) {
      return Fail(
          where,
          "constraints.min " + json(*c.min).dump() + " is greater than max " + json(*c.max).dump(),
          "swap them", f.name);
    }
    return c;
  }

  Result<TypePtr> Enum(const json& j, const std::string& where) {
    auto name = Name(j, where, "enum");
    if (!name.ok()) return name.error();
    auto symbols = j.find("symbols");
    if (symbols == j.end() || !symbols->is_array() || symbols->empty()) {
      return Fail(where, "enum " + Quote(*name) + " needs a non-empty \"symbols\" list", "", "");
    }
    auto t = std::make_shared<schema::Type>();
    t->kind = Kind::kEnum;
    t->name = *name;
    std::set<std::string> seen;
    for (const auto& s : *symbols) {
      if (!s.is_string() || !IsAvroName(s.get<std::string>())) {
        return Fail(where, "enum symbol " + Shown(s) + " is not a valid name", "", "symbols");
      }
      if (!seen.insert(s.get<std::string>()).second) {
        return Fail(where, "enum symbol " + Shown(s) + " appears twice", "", "symbols");
      }
      t->symbols.push_back(s.get<std::string>());
    }
    Register(*name, t);
    return TypePtr(t);
  }

  Result<TypePtr> Container(const json& j, const std::string& kind, const std::string& where,
                            int depth) {
    const char* key = kind == "array" ? "items" : "values";
    auto inner = j.find(key);
    if (inner == j.end()) {
      return Fail(where, kind + " needs \"" + key + "\"",
                  std::string("add \"") + key + "\": \"float\" (or another type)", "");
    }
    auto t = Type(*inner, where + "." + key, depth + 1);
    if (!t.ok()) return t;
    auto c = std::make_shared<schema::Type>();
    c->kind = kind == "array" ? Kind::kArray : Kind::kMap;
    c->items = *t;
    if (auto size = j.find("size"); size != j.end() && kind == "array") {
      if (!size->is_number_integer() || size->get<int64_t>() < 1) {
        return Fail(where, "array size must be a positive integer, got " + Shown(*size), "",
                    "size");
      }
      c->size = size->get<int64_t>();
    }
    return WithLogical(c, j, where);
  }

  Result<TypePtr> Fixed(const json& j, const std::string& where) {
    auto name = Name(j, where, "fixed");
    if (!name.ok()) return name.error();
    auto size = j.find("size");
    if (size == j.end() || !size->is_number_integer() || size->get<int64_t>() < 0) {
      return Fail(where, "fixed " + Quote(*name) + " needs a non-negative integer \"size\"", "",
                  "");
    }
    auto t = std::make_shared<schema::Type>();
    t->kind = Kind::kFixed;
    t->name = *name;
    t->size = size->get<int64_t>();
    auto with = WithLogical(t, j, where);
    if (with.ok()) Register(*name, *with);
    return with;
  }

  const std::string& text_;
  InvalidLogical invalid_;
  std::map<std::string, TypePtr> names_;
  std::set<std::string> defining_;
  std::string namespace_;
};

}  // namespace

Result<Schema> ParseAvroSchema(const std::string& text, InvalidLogical invalid) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& ex) {
    Error e(codes::kSpecInvalid, "schema is not valid JSON: " + std::string(ex.what()));
    e.hint = "check brackets, quotes and commas";
    size_t byte = ex.byte == 0 ? 0 : ex.byte - 1;
    e.pos.line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++e.pos.line;
        line_start = i + 1;
      }
    }
    e.pos.column = static_cast<int>(std::min(byte, text.size()) - line_start) + 1;
    return e;
  } catch (const json::exception& ex) {  // e.g. a number too large for a double
    return Error(codes::kSpecInvalid, "schema is not valid JSON: " + std::string(ex.what()))
        .Hint("check the numbers and strings in the schema");
  }
  AvroParser parser(text, invalid);
  Result<TypePtr> t = Error(codes::kInternal, "unreachable");
  try {
    t = parser.Type(j, "", 0);
  } catch (const json::exception& ex) {  // a value of an unexpected JSON type
    return Error(codes::kSpecInvalid, std::string("schema: ") + ex.what())
        .Hint("check the schema against the Avro specification");
  }
  if (!t.ok()) return t.error();
  if ((*t)->kind != Kind::kRecord) {
    return parser.Fail(
        "", "a data schema must be a record, got " + (*t)->ToString(),
        "wrap the fields in {\"type\": \"record\", \"name\": ..., \"fields\": [...]}", "");
  }
  Schema s;
  s.root = *t;
  return s;
}

}  // namespace rsl::schema

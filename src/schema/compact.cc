#include "schema/compact.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "base/codes.h"
#include "base/strings.h"

namespace rsl::schema {

namespace {

// The largest N accepted in T[N]: bigger fixed arrays are almost certainly a typo, and this
// keeps N * element size far from overflow in readers.
constexpr int64_t kMaxArraySize = int64_t{1} << 31;

struct CompactPrim {
  const char* name;
  Kind kind;
  const char* logical;
};
constexpr CompactPrim kPrims[] = {
    {"bool", Kind::kBoolean, ""},   {"int32", Kind::kInt, ""},
    {"int64", Kind::kLong, ""},     {"float32", Kind::kFloat, ""},
    {"float64", Kind::kDouble, ""}, {"string", Kind::kString, ""},
    {"bytes", Kind::kBytes, ""},    {"timestamp", Kind::kLong, "timestamp-micros"},
};

Error Invalid(const std::string& message, const std::string& hint, int column) {
  Error e(codes::kSpecInvalid, message);
  e.hint = hint;
  if (column > 0) {
    e.pos.line = 1;
    e.pos.column = column;
  }
  return e;
}

// An integer of at most 4 digits, or -1.
int SmallInt(std::string_view digits) {
  digits = Trim(digits);
  if (digits.empty() || digits.size() > 4) return -1;
  int v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

// decimal(P) or decimal(P,S): Avro bytes with logicalType decimal.
Result<TypePtr> ParseCompactDecimal(const std::string& text, const std::string& base,
                                    int64_t size) {
  const std::string hint =
      "write decimal(P,S) with 1 <= P <= 1000 and 0 <= S <= P, e.g. decimal(10,2)";
  std::string_view rest = Trim(std::string_view(base).substr(7));
  if (size != 0)
    return Invalid("type " + Quote(text) + ": arrays of decimals are not supported", hint, 0);
  if (rest.size() < 2 || rest.front() != '(' || rest.back() != ')') {
    return Invalid("type " + Quote(text) + ": a decimal needs its precision", hint, 0);
  }
  rest = rest.substr(1, rest.size() - 2);
  size_t comma = rest.find(',');
  int precision = SmallInt(rest.substr(0, comma));
  int scale = comma == std::string_view::npos ? 0 : SmallInt(rest.substr(comma + 1));
  if (precision < 1 || precision > 1000 || scale < 0 || scale > precision) {
    return Invalid("type " + Quote(text) + ": bad decimal precision or scale", hint, 0);
  }
  auto t = std::make_shared<Type>();
  t->kind = Kind::kBytes;
  t->logical_type = "decimal";
  t->precision = precision;
  t->scale = scale;
  return TypePtr(t);
}

}  // namespace

const std::vector<std::string>& CompactTypeNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& p : kPrims) v.push_back(p.name);
    v.push_back("decimal(P,S)");
    return v;
  }();
  return names;
}

bool IsAvroName(const std::string& name) {
  if (name.empty()) return false;
  if (!(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

Result<TypePtr> ParseCompactType(const std::string& raw) {
  std::string text(Trim(raw));
  std::string base = text;
  int64_t size = 0;
  size_t bracket = text.find('[');
  if (bracket != std::string::npos) {
    base = std::string(Trim(text.substr(0, bracket)));
    if (text.back() != ']') {
      return Invalid("type " + Quote(text) + ": missing ']'", "write T[N], e.g. float32[128]", 0);
    }
    std::string digits(Trim(text.substr(bracket + 1, text.size() - bracket - 2)));
    if (digits.empty() || digits.size() > 10 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return Invalid(
          "type " + Quote(text) + ": array size " + Quote(digits) + " is not a positive integer",
          "write T[N] with N >= 1, e.g. float32[128]", 0);
    }
    size = std::stoll(digits);
    if (size < 1 || size > kMaxArraySize) {
      return Invalid("type " + Quote(text) + ": array size must be between 1 and " +
                         std::to_string(kMaxArraySize),
                     "write T[N] with N >= 1", 0);
    }
  }
  if (StartsWith(base, "decimal")) return ParseCompactDecimal(text, base, size);
  const CompactPrim* prim = nullptr;
  for (const auto& p : kPrims) {
    if (base == p.name) prim = &p;
  }
  if (!prim) {
    std::string close = ClosestMatch(base, CompactTypeNames());
    return Invalid("unknown type " + Quote(base),
                   close.empty()
                       ? "types: " + Join(CompactTypeNames(), ", ") + ", optionally with [N]"
                       : "did you mean '" + close + "'?",
                   0);
  }
  auto elem = std::make_shared<Type>();
  elem->kind = prim->kind;
  elem->logical_type = prim->logical;
  if (size == 0) return TypePtr(elem);
  auto arr = std::make_shared<Type>();
  arr->kind = Kind::kArray;
  arr->items = elem;
  arr->size = size;
  return TypePtr(arr);
}

Result<Schema> ParseCompactSchema(const std::string& text) {
  auto record = std::make_shared<Type>();
  record->kind = Kind::kRecord;
  record->name = "record";
  std::set<std::string> seen;
  size_t start = 0;
  while (start <= text.size()) {
    // The next ',' outside parentheses: decimal(10,2) is one type.
    size_t comma = start;
    for (int depth = 0; comma < text.size(); ++comma) {
      if (text[comma] == '(') depth++;
      if (text[comma] == ')' && depth > 0) depth--;
      if (text[comma] == ',' && depth == 0) break;
    }
    std::string item = text.substr(start, comma - start);
    int column = static_cast<int>(start) + 1;
    // Point at the first non-blank character of the item.
    while (column - 1 < static_cast<int>(text.size()) &&
           (text[column - 1] == ' ' || text[column - 1] == '\n')) {
      ++column;
    }
    std::string trimmed(Trim(item));
    if (trimmed.empty()) {
      return Invalid("empty field in compact schema", "write name:type pairs separated by ','",
                     column);
    }
    size_t colon = trimmed.find(':');
    if (colon == std::string::npos) {
      return Invalid("field " + Quote(trimmed) + " has no type",
                     "write name:type, e.g. label:int32", column);
    }
    std::string name(Trim(trimmed.substr(0, colon)));
    std::string type_text(Trim(trimmed.substr(colon + 1)));
    if (!IsAvroName(name)) {
      return Invalid("field name " + Quote(name) + " is not a valid name",
                     "names are letters, digits and '_', not starting with a digit", column);
    }
    if (!seen.insert(name).second) {
      return Invalid("duplicate field " + Quote(name), "each field name must be unique", column);
    }
    auto type = ParseCompactType(type_text);
    if (!type.ok()) {
      Error e = type.error();
      e.message = "field " + Quote(name) + ": " + e.message;
      e.pos.line = 1;
      e.pos.column = column + static_cast<int>(trimmed.find(':')) + 1;
      return e;
    }
    Field f;
    f.name = name;
    f.type = *type;
    record->fields.push_back(std::move(f));
    start = comma + 1;
  }
  Schema s;
  s.root = record;
  return s;
}

}  // namespace rsl::schema

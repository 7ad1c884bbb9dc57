#include "data/sink.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace rsl::data {

using schema::Kind;

const char* ValueKindName(ValueKind kind) {
  switch (kind) {
    case ValueKind::kBool:
      return "boolean";
    case ValueKind::kInt:
      return "integer";
    case ValueKind::kDouble:
      return "number";
    case ValueKind::kString:
      return "string";
    case ValueKind::kOther:
      return "value";
  }
  return "value";
}

int Plan::FieldIndex(std::string_view name) const {
  for (size_t i = 0; i < top_level; i++) {
    if (fields[i].name == name) return static_cast<int>(i);
  }
  for (size_t i = 0; i < top_level; i++) {
    for (const auto& a : fields[i].aliases) {
      if (a == name) return static_cast<int>(i);
    }
  }
  return -1;
}

int Plan::PathIndex(std::string_view path) const {
  int i = FieldIndex(path);
  if (i >= 0) return i;
  for (size_t k = top_level; k < fields.size(); k++) {
    if (fields[k].name == path) return static_cast<int>(k);
  }
  return -1;
}

namespace {

ValueKind KindOf(const schema::Type& t) {
  if (t.IsDecimal()) return ValueKind::kDouble;  // read as its value, with its scale
  switch (t.kind) {
    case Kind::kBoolean:
      return ValueKind::kBool;
    case Kind::kInt:
    case Kind::kLong:
      return ValueKind::kInt;
    case Kind::kFloat:
    case Kind::kDouble:
      return ValueKind::kDouble;
    case Kind::kString:
    case Kind::kBytes:
    case Kind::kEnum:
    case Kind::kFixed:
      return ValueKind::kString;
    default:
      return ValueKind::kOther;
  }
}

int64_t TimestampScale(const std::string& logical) {
  if (logical == "timestamp-micros" || logical == "local-timestamp-micros") return 1;
  if (logical == "timestamp-millis" || logical == "local-timestamp-millis") return 1000;
  if (logical == "timestamp-nanos" || logical == "local-timestamp-nanos") return -1000;
  return 0;
}

// An integer bound: exact when the constraint was an integer, else the double rounded
// inwards (min 0.5 -> 1) and clamped to the int64 range.
int64_t IntBound(std::optional<int64_t> exact, std::optional<double> bound, bool lower) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (exact) return *exact;
  if (!bound) return lower ? kMin : kMax;
  double b = lower ? std::ceil(*bound) : std::floor(*bound);
  if (b >= 9223372036854775807.0) return kMax;  // 2^63 and above
  if (b <= -9223372036854775808.0) return kMin;
  return static_cast<int64_t>(b);
}

// One primitive (or enum/fixed) found at `path` below a top-level field.
struct Leafpath {
  std::string path;
  schema::TypePtr type;
  const schema::Constraints* constraints;  // null: none
};

// The primitives below type `t` (the value at `path`); `c` are the constraints that apply to
// a primitive reached through arrays and maps only (those of the field that holds them).
void Walk(const schema::TypePtr& t, const std::string& path, const schema::Constraints* c,
          int depth, std::vector<Leafpath>* out) {
  if (depth > 32) return;
  const schema::Type& b = t->NonNull();
  switch (b.kind) {
    case Kind::kRecord:
      for (const auto& f : b.fields) {
        Walk(f.type, path + "." + f.name, f.constraints.empty() ? nullptr : &f.constraints,
             depth + 1, out);
      }
      return;
    case Kind::kArray:
      if (b.items) Walk(b.items, path + "[]", c, depth + 1, out);
      return;
    case Kind::kMap:
      if (b.items) Walk(b.items, path + "{}", c, depth + 1, out);
      return;
    case Kind::kUnion:  // a union of several non-null types: not addressable
      return;
    default:
      if (depth > 0) out->push_back({path, t, c});
      return;
  }
}

std::vector<Leafpath> Leaves(const schema::Schema& reader) {
  std::vector<Leafpath> out;
  for (const auto& f : reader.record().fields) {
    Walk(f.type, f.name, f.constraints.empty() ? nullptr : &f.constraints, 0, &out);
  }
  return out;
}

}  // namespace

std::vector<std::string> NestedPaths(const schema::Schema& reader) {
  std::vector<std::string> out;
  for (const auto& l : Leaves(reader)) out.push_back(l.path);
  return out;
}

namespace {

void SetConstraints(const schema::Constraints& c, FieldPlan* p) {
  p->has_min = c.min.has_value();
  p->has_max = c.max.has_value();
  p->min = c.min.value_or(0);
  p->max = c.max.value_or(0);
  p->imin = IntBound(c.min_int, c.min, true);
  p->imax = IntBound(c.max_int, c.max, false);
  p->enum_values = c.enum_values;
}

}  // namespace

void BuildPlan(const schema::Schema& reader, const std::string& unique_key, Plan* plan) {
  plan->fields.clear();
  plan->fields.reserve(reader.record().fields.size());
  for (const auto& f : reader.record().fields) {
    FieldPlan p;
    p.name = f.name;
    p.aliases = f.aliases;
    p.default_json = f.default_json;
    p.type = f.type;
    p.base = &f.type->NonNull();
    p.kind = KindOf(*p.base);
    p.has_min = f.constraints.min.has_value();
    p.has_max = f.constraints.max.has_value();
    p.min = f.constraints.min.value_or(0);
    p.max = f.constraints.max.value_or(0);
    p.imin = IntBound(f.constraints.min_int, f.constraints.min, true);
    p.imax = IntBound(f.constraints.max_int, f.constraints.max, false);
    p.enum_values = f.constraints.enum_values;
    if (p.enum_values.empty() && p.base->kind == Kind::kEnum) p.enum_values = p.base->symbols;
    if (p.base->kind == Kind::kArray) p.array_size = p.base->size;
    if (p.base->kind == Kind::kInt || p.base->kind == Kind::kLong) {
      p.ts_scale = TimestampScale(p.base->logical_type);
    }
    // Constraints of an array or map field constrain its items (the "items[]" path).
    if (p.base->kind == Kind::kArray || p.base->kind == Kind::kMap) {
      p.has_min = p.has_max = false;
      p.imin = std::numeric_limits<int64_t>::min();
      p.imax = std::numeric_limits<int64_t>::max();
      p.enum_values.clear();
    }
    plan->fields.push_back(std::move(p));
  }
  plan->top_level = plan->fields.size();
  // Nested paths the contract addresses: constrained ones and the uniqueKey.
  for (const auto& l : Leaves(reader)) {
    if (l.constraints == nullptr && l.path != unique_key) continue;
    FieldPlan p;
    p.name = l.path;
    p.type = l.type;
    p.base = &l.type->NonNull();
    p.kind = KindOf(*p.base);
    if (l.constraints) SetConstraints(*l.constraints, &p);
    if (p.enum_values.empty() && p.base->kind == Kind::kEnum) p.enum_values = p.base->symbols;
    std::string top = l.path.substr(0, l.path.find_first_of(".[{"));
    p.parent = plan->FieldIndex(top);
    p.default_json = std::string("null");  // absent from the data: nothing to check
    plan->fields.push_back(std::move(p));
  }
  // Views into the plan's own strings: built after the vector stopped moving.
  for (auto& p : plan->fields) {
    for (const auto& v : p.enum_values) p.enum_set.insert(v);
  }
  plan->key_field = unique_key.empty() ? -1 : plan->PathIndex(unique_key);
  plan->ts_field = -1;
  for (size_t i = 0; i < plan->top_level; i++) {
    if (plan->fields[i].ts_scale != 0) {
      plan->ts_field = static_cast<int>(i);
      break;
    }
  }
}

void ChunkSink::TypeError(int f, int64_t row, std::string_view value, const char* expected) {
  Violation& v = stats[f].type_error;
  if (v.count++ == 0) {
    v.row = row;
    v.value = std::string(value.substr(0, 64));
    v.detail = expected;
  }
  failed_ = true;
}

void ChunkSink::Violate(Violation* v, int64_t row, int64_t value) {
  if (v->count++ == 0) {
    v->row = row;
    v->value = std::to_string(value);
  }
}

void ChunkSink::Violate(Violation* v, int64_t row, double value) {
  if (v->count++ == 0) {
    v->row = row;
    // The shortest text that reads back as the same double: 10.01, not 10.009999999999999787.
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
    v->value = ec == std::errc() ? std::string(buf, end) : std::to_string(value);
  }
}

void ChunkSink::ViolateText(Violation* v, int64_t row, std::string_view value) {
  if (v->count++ == 0) {
    v->row = row;
    v->value = std::string(value.substr(0, 64));
  }
}

}  // namespace rsl::data

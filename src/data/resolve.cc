#include "data/resolve.h"

#include "base/codes.h"
#include "base/strings.h"

namespace rsl::data {

using schema::Kind;
using schema::Type;

namespace {

bool PrimitiveResolves(Kind w, Kind r) {
  if (w == r) return true;
  switch (w) {
    case Kind::kInt:
      return r == Kind::kLong || r == Kind::kFloat || r == Kind::kDouble;
    case Kind::kLong:
      return r == Kind::kFloat || r == Kind::kDouble;
    case Kind::kFloat:
      return r == Kind::kDouble;
    case Kind::kString:
      return r == Kind::kBytes;
    case Kind::kBytes:
      return r == Kind::kString;
    default:
      return false;
  }
}

std::string ShortName(const std::string& full) {
  size_t dot = full.find_last_of('.');
  return dot == std::string::npos ? full : full.substr(dot + 1);
}

// A time unit the data contradicts: timestamp-nanos written, timestamp-micros declared would
// read every value 1000 times too far in the future.
bool TimeUnitsConflict(const Type& w, const Type& r) {
  auto timed = [](const std::string& l) {
    return StartsWith(l, "timestamp-") || StartsWith(l, "local-timestamp-") ||
           StartsWith(l, "time-") || l == "date";
  };
  return timed(w.logical_type) && timed(r.logical_type) && w.logical_type != r.logical_type;
}

// A declared decimal reads a decimal of the same scale and no more digits (Avro resolves
// decimals whose scale and precision match; a narrower precision cannot lose a digit).
bool DecimalsResolve(const Type& w, const Type& r) {
  return w.IsDecimal() && w.scale == r.scale && w.precision <= r.precision;
}

// Where writer type `w` stops resolving against reader type `r`, which TypesResolve said it
// does not: appends nested field names to `path` ("nested.x", "tags[]") and says what differs.
std::string Explain(const Type& w, const Type& r, std::string* path) {
  if (w.kind == Kind::kUnion) {
    for (const auto& b : w.branches) {
      if (b->kind != Kind::kNull && !TypesResolve(*b, r)) return Explain(*b, r, path);
    }
  } else if (r.kind == Kind::kUnion) {
    for (const auto& b : r.branches) {
      if (b->kind == w.kind) return Explain(w, *b, path);
    }
  } else if (w.kind == r.kind) {
    switch (r.kind) {
      case Kind::kRecord:
        for (const auto& rf : r.fields) {
          const schema::Field* found = nullptr;
          for (const auto& wf : w.fields) {
            if (wf.name == rf.name) found = &wf;
          }
          if (found == nullptr && !rf.default_json) {
            *path += "." + rf.name;
            return "declared field is missing from the data and has no default";
          }
          if (found != nullptr && !TypesResolve(*found->type, *rf.type)) {
            *path += "." + rf.name;
            return Explain(*found->type, *rf.type, path);
          }
        }
        break;
      case Kind::kEnum:
        for (const auto& s : w.symbols) {
          bool declared = false;
          for (const auto& rs : r.symbols) declared = declared || rs == s;
          if (!declared) {
            return "the data's enum " + w.name + " has symbol " + Quote(s) +
                   ", which the declared enum " + r.name +
                   " lacks (declared: " + Join(r.symbols, ", ") + ")";
          }
        }
        break;
      case Kind::kArray:
      case Kind::kMap:
        if (w.items && r.items) {
          *path += r.kind == Kind::kArray ? "[]" : "{}";
          return Explain(*w.items, *r.items, path);
        }
        break;
      default:
        break;
    }
  }
  if (w.kind != Kind::kUnion && r.IsDecimal() && w.IsDecimal()) {
    return "data has " + w.ToString() + ", declared " + r.ToString() +
           ": a declared decimal reads decimals of the same scale and at most its precision";
  }
  return "data has " + w.ToString() + ", declared " + r.ToString();
}

}  // namespace

bool TypesResolve(const Type& w, const Type& r) {
  if (w.kind == Kind::kUnion) {
    bool any = false;
    for (const auto& b : w.branches) {
      if (b->kind == Kind::kNull) continue;
      if (!TypesResolve(*b, r)) return false;
      any = true;
    }
    return any || r.IsNullable() || r.kind == Kind::kNull;
  }
  if (r.kind == Kind::kUnion) {
    for (const auto& b : r.branches) {
      if (TypesResolve(w, *b)) return true;
    }
    return false;
  }
  if (r.IsDecimal()) return DecimalsResolve(w, r);
  if (w.IsDecimal() && (r.kind == Kind::kFloat || r.kind == Kind::kDouble)) return true;
  switch (r.kind) {
    case Kind::kRecord: {
      if (w.kind != Kind::kRecord) return false;
      for (const auto& rf : r.fields) {
        const schema::Field* found = nullptr;
        for (const auto& wf : w.fields) {
          if (wf.name == rf.name) found = &wf;
        }
        if (found == nullptr) {
          if (!rf.default_json) return false;
          continue;
        }
        if (!TypesResolve(*found->type, *rf.type)) return false;
      }
      return true;
    }
    case Kind::kEnum: {
      if (w.kind != Kind::kEnum) return false;
      for (const auto& s : w.symbols) {
        bool ok = false;
        for (const auto& rs : r.symbols) ok = ok || rs == s;
        if (!ok) return false;
      }
      return true;
    }
    case Kind::kArray:
      return w.kind == Kind::kArray && w.items && r.items && TypesResolve(*w.items, *r.items);
    case Kind::kMap:
      return w.kind == Kind::kMap && w.items && r.items && TypesResolve(*w.items, *r.items);
    case Kind::kFixed:
      return w.kind == Kind::kFixed && w.size == r.size && ShortName(w.name) == ShortName(r.name);
    default:
      return PrimitiveResolves(w.kind, r.kind) && !TimeUnitsConflict(w, r);
  }
}

Error MissingFieldError(const std::string& name, const std::vector<schema::Field>& data_fields,
                        const std::string& why, const std::string& file) {
  std::vector<std::string> names;
  for (const auto& f : data_fields) names.push_back(f.name);
  std::string close = ClosestMatch(name, names);
  return Error(codes::kDataSchemaMismatch, "declared field is " + why + " and has no default")
      .Path(name)
      .Value(file)
      .Hint(close.empty() ? "data fields: " + Join(names, ", ")
                          : "the data has " + Quote(close) + "; rename it or add a default");
}

Result<Binding> Resolve(const schema::Schema& writer, const Plan& plan, const std::string& file,
                        bool check_types) {
  Binding b;
  const Type& wr = writer.record();
  std::vector<bool> seen(plan.fields.size(), false);
  for (const auto& wf : wr.fields) {
    int idx = plan.FieldIndex(wf.name);
    b.writer_to_reader.push_back(idx);
    if (idx < 0) {
      b.ignored.push_back(wf.name);
      continue;
    }
    seen[idx] = true;
    const FieldPlan& rf = plan.fields[idx];
    if (check_types && !TypesResolve(*wf.type, *rf.type)) {
      std::string path = rf.name;
      std::string why = Explain(*wf.type, *rf.type, &path);
      return Error(codes::kDataSchemaMismatch, why)
          .Path(path)
          .Value(file)
          .Hint(
              "change the declared type (a timestamp in the data's own unit) or rewrite the data "
              "(Avro promotions: int -> long "
              "-> float -> double, string <-> bytes)");
    }
  }
  for (size_t i = 0; i < plan.top_level; i++) {
    if (seen[i]) continue;
    const FieldPlan& rf = plan.fields[i];
    if (!rf.default_json) {
      return MissingFieldError(rf.name, wr.fields, "missing from the data", file);
    }
    b.defaulted.push_back(static_cast<int>(i));
    b.default_is_null.push_back(*rf.default_json == "null");
  }
  return b;
}

}  // namespace rsl::data

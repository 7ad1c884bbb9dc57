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
      return PrimitiveResolves(w.kind, r.kind);
  }
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
      return Error(codes::kDataSchemaMismatch,
                   "data has " + wf.type->ToString() + ", declared " + rf.type->ToString())
          .Path(rf.name)
          .Value(file)
          .Hint(
              "change the declared type or rewrite the data (Avro promotions: int -> long "
              "-> float -> double, string <-> bytes)");
    }
  }
  for (size_t i = 0; i < plan.fields.size(); i++) {
    if (seen[i]) continue;
    const FieldPlan& rf = plan.fields[i];
    if (!rf.default_json) {
      std::vector<std::string> names;
      for (const auto& wf : wr.fields) names.push_back(wf.name);
      std::string close = ClosestMatch(rf.name, names);
      return Error(codes::kDataSchemaMismatch,
                   "declared field is missing from the data and has no default")
          .Path(rf.name)
          .Value(file)
          .Hint(close.empty() ? "data fields: " + Join(names, ", ")
                              : "the data has " + Quote(close) + "; rename it or add a default");
    }
    b.defaulted.push_back(static_cast<int>(i));
    b.default_is_null.push_back(*rf.default_json == "null");
  }
  return b;
}

}  // namespace rsl::data

#include "data/parquet_schema.h"

#include <algorithm>
#include <optional>

#include "base/codes.h"
#include "base/strings.h"
#include "data/format.h"

namespace rsl::data::parquet_decode {
namespace {

using schema::Kind;
using thrift::Node;

constexpr int kMaxNesting = 32;

class SchemaReader {
 public:
  SchemaReader(const std::string& file, std::vector<Column>* columns, std::vector<Top>* tops)
      : name_(file), columns_(columns), tops_(tops) {}

  Status Read(const Node& schema, size_t footer_at, schema::Schema* writer) {
    // The schema tree (depth first, each group followed by its children): top-level
    // primitives are flat columns; groups and repeated fields are nested (Dremel levels).
    std::vector<schema::Field> fields;
    size_t next = 1;
    const size_t top_n = static_cast<size_t>(std::max<int64_t>(schema.items[0].Int(5, 0), 0));
    for (size_t t = 0; t < top_n || (top_n == 0 && next < schema.items.size()); t++) {
      if (next >= schema.items.size()) {
        return FormatError(name_, footer_at, "schema has fewer elements than its root declares");
      }
      Top top;
      top.first_leaf = static_cast<int>(columns_->size());
      auto node = ParseNode(schema, &next, 0, 0, "", 0, footer_at);
      if (!node.ok()) return node.error();
      top.node = std::move(*node);
      top.leaves = static_cast<int>(columns_->size()) - top.first_leaf;
      top.flat = top.node.leaf >= 0 && top.node.rep != 2;
      AssignPaths(top.node, top.node.name);
      if (top.leaves == 0) {
        return FormatError(name_, footer_at,
                           "column " + Quote(top.node.name) + " is a group without columns");
      }
      auto type = FieldType(top.node, footer_at);
      if (!type.ok()) return type.error();
      fields.push_back(schema::Field{top.node.name, *type, std::nullopt, {}, {}});
      tops_->push_back(std::move(top));
    }
    leaf_el_.clear();
    if (next != schema.items.size()) {
      return FormatError(name_, footer_at, "schema elements do not form one tree");
    }
    *writer = RecordSchema(std::string(schema.items[0].Str(4)), std::move(fields));
    return Status::Ok();
  }

 private:
  // Parses the element at *next and its children. `def`/`rlevel`: the parent's levels;
  // `path`: the parent's column path (dotted, for messages); `slot_def`: the definition level
  // of the innermost repeated ancestor.
  Result<SNode> ParseNode(const Node& schema, size_t* next, int def, int rlevel,
                          const std::string& path, int slot_def, size_t footer_at, int depth = 0) {
    if (depth > kMaxNesting)
      return FormatError(name_, footer_at,
                         "schema nested deeper than " + std::to_string(kMaxNesting) + " levels");
    if (*next >= schema.items.size())
      return FormatError(name_, footer_at, "schema has fewer elements than its groups declare");
    const Node& el = schema.items[(*next)++];
    SNode n;
    n.name = std::string(el.Str(4));
    n.rep = static_cast<int>(el.Int(3, 0));
    if (n.rep < 0 || n.rep > 2) n.rep = 0;
    n.def = def + (n.rep != 0 ? 1 : 0);
    n.rlevel = rlevel + (n.rep == 2 ? 1 : 0);
    n.converted = static_cast<int>(el.Int(6, -1));
    const Node* logical = el.Field(10);
    n.list = n.converted == 3 || (logical && logical->Field(3));
    n.map = n.converted == 1 || n.converted == 2 || (logical && logical->Field(2));
    std::string my_path = path.empty() ? n.name : path + "." + n.name;
    if (n.rep == 2) slot_def = n.def;
    const int64_t kids = el.Int(5, 0);
    if (kids <= 0 && el.Field(1)) {  // a primitive column
      Column c;
      c.name = my_path;
      c.optional = n.rep == 1;
      const int64_t ptype = el.Int(1);
      c.type_length = static_cast<int32_t>(el.Int(2, 0));
      if (ptype < kBoolean || ptype > kFixed) {
        return FormatError(name_, footer_at, "column " + Quote(c.name) + " has an unknown type");
      }
      c.type = static_cast<PType>(ptype);
      if (c.type == kFixed && (c.type_length <= 0 || c.type_length > (1 << 20))) {
        return FormatError(name_, footer_at, "column " + Quote(c.name) + " has a bad type_length");
      }
      c.max_def = n.def;
      c.max_rep = n.rlevel;
      c.slot_def = slot_def;
      c.nested = depth > 0 || n.rep == 2;
      // LIST and MAP annotate groups: on a primitive they are meaningless (a fuzzed file once
      // had one, and the path assignment then looked for the list's element).
      n.list = n.map = false;
      n.leaf = static_cast<int>(columns_->size());
      leaf_el_.push_back(&el);
      columns_->push_back(std::move(c));
      return n;
    }
    if (kids <= 0 || static_cast<size_t>(kids) > schema.items.size() - *next) {
      return FormatError(name_, footer_at,
                         "column " + Quote(my_path) + " is a group with a bad number of children");
    }
    for (int64_t k = 0; k < kids; k++) {
      auto child =
          ParseNode(schema, next, n.def, n.rlevel, my_path, slot_def, footer_at, depth + 1);
      if (!child.ok()) return child.error();
      n.children.push_back(std::move(*child));
    }
    // A LIST or MAP needs one repeated child; otherwise it is read as the group it is.
    if ((n.list || n.map) && (n.children.size() != 1 || n.children[0].rep != 2)) {
      n.list = n.map = false;
    }
    if (n.map && (n.children[0].leaf >= 0 || n.children[0].children.empty())) n.map = false;
    return n;
  }

  // A LIST's element: in the 3-level form the single child of the repeated group; in the
  // legacy 2-level forms the repeated field itself (a primitive, a group of several fields,
  // or a group named "array" or "<list>_tuple").
  static const SNode& ListElement(const SNode& list, bool* two_level) {
    const SNode& r = list.children[0];
    *two_level = r.leaf >= 0 || r.children.size() != 1 || r.name == "array" ||
                 r.name == list.name + "_tuple";
    return *two_level ? r : r.children[0];
  }

  // The contract path of each column: "a.b" (record field), "items[]" (list elements, a
  // repeated field's values), "m{}" (map values; keys are "m{key}"), "items[].x".
  // `p` is the path of the value of `n`.
  void AssignPaths(const SNode& n, const std::string& p) {
    if (n.list) {
      bool two;
      const SNode& e = ListElement(n, &two);
      if (two) {
        AssignValue(e, p + "[]");  // the repeated field is the element
      } else {
        AssignPaths(e, p + "[]");
      }
      return;
    }
    if (n.map) {
      for (const SNode& kv : n.children[0].children) {
        AssignPaths(kv, kv.name == "key" ? p + "{key}" : p + "{}");
      }
      return;
    }
    if (n.rep == 2) {
      AssignValue(n, p + "[]");
      return;
    }
    AssignValue(n, p);
  }

  // As AssignPaths for a node whose own repetition is already accounted for in `p`.
  void AssignValue(const SNode& n, const std::string& p) {
    if (n.leaf >= 0) {
      (*columns_)[n.leaf].path = p;
      return;
    }
    if (n.list || n.map) {
      // A container as a list element: its own markers follow.
      if (n.list) {
        bool two;
        const SNode& e = ListElement(n, &two);
        two ? AssignValue(e, p + "[]") : AssignPaths(e, p + "[]");
      } else {
        for (const SNode& kv : n.children[0].children) {
          AssignPaths(kv, kv.name == "key" ? p + "{key}" : p + "{}");
        }
      }
      return;
    }
    for (const SNode& k : n.children) AssignPaths(k, p + "." + k.name);
  }

  // The schema type of the field `n` (nullable when optional, an array when repeated).
  Result<schema::TypePtr> FieldType(const SNode& n, size_t footer_at) {
    auto t = ValueType(n, footer_at);
    if (!t.ok()) return t;
    if (n.rep == 2) return ArrayOf(*t);
    if (n.rep == 1) return NullableType(*t);
    return t;
  }

  // The type of one value of `n`, its own repetition aside.
  Result<schema::TypePtr> ValueType(const SNode& n, size_t footer_at) {
    if (n.leaf >= 0) {
      Column& c = (*columns_)[n.leaf];
      bool opt = c.optional;
      c.optional = false;
      auto t = WriterType(*leaf_el_[n.leaf], &c);
      c.optional = opt;
      return t;
    }
    if (n.list) {
      bool two;
      const SNode& e = ListElement(n, &two);
      auto et = two ? ValueType(e, footer_at) : FieldType(e, footer_at);
      if (!et.ok()) return et;
      return ArrayOf(*et);
    }
    if (n.map) {
      const SNode& kv = n.children[0];
      const SNode* key = nullptr;
      const SNode* value = nullptr;
      for (const SNode& k : kv.children) {
        if (k.name == "key") key = &k;
        if (k.name == "value") value = &k;
      }
      if (key && value && key->leaf >= 0 && kv.children.size() == 2) {
        auto kt = ValueType(*key, footer_at);
        auto vt = FieldType(*value, footer_at);
        if (!kt.ok()) return kt;
        if (!vt.ok()) return vt;
        if ((*kt)->kind == Kind::kString) {
          auto m = std::make_shared<schema::Type>();
          m->kind = Kind::kMap;
          m->items = *vt;
          return schema::TypePtr(m);
        }
      }
      // A map whose keys are not strings: an array of key/value records.
      auto rt = RecordType(kv, footer_at);
      if (!rt.ok()) return rt;
      return ArrayOf(*rt);
    }
    return RecordType(n, footer_at);
  }

  Result<schema::TypePtr> RecordType(const SNode& n, size_t footer_at) {
    auto t = std::make_shared<schema::Type>();
    t->kind = Kind::kRecord;
    t->name = n.name;
    for (const SNode& k : n.children) {
      auto kt = FieldType(k, footer_at);
      if (!kt.ok()) return kt;
      t->fields.push_back(schema::Field{k.name, *kt, std::nullopt, {}, {}});
    }
    return schema::TypePtr(t);
  }

  static schema::TypePtr ArrayOf(schema::TypePtr items) {
    auto a = std::make_shared<schema::Type>();
    a->kind = Kind::kArray;
    a->items = std::move(items);
    return a;
  }

  static schema::TypePtr NullableType(schema::TypePtr t) {
    auto n = std::make_shared<schema::Type>();
    n->kind = Kind::kNull;
    auto u = std::make_shared<schema::Type>();
    u->kind = Kind::kUnion;
    u->branches = {n, std::move(t)};
    return u;
  }

  schema::TypePtr WriterType(const Node& el, Column* c) {
    auto t = std::make_shared<schema::Type>();
    int64_t converted = el.Int(6, -1);
    const Node* logical = el.Field(10);
    // ConvertedType UINT_8..UINT_64 (11..14), or LogicalType INTEGER (5) with isSigned false.
    c->is_unsigned = (converted >= 11 && converted <= 14) ||
                     (logical && logical->Field(10) && logical->Field(10)->Field(2) &&
                      logical->Field(10)->Int(2, 1) == 0);
    // ConvertedType DECIMAL (5) with SchemaElement.scale (7), or LogicalType DECIMAL (5).
    if (converted == 5 || (logical && logical->Field(5))) {
      c->decimal_scale = static_cast<int>(
          logical && logical->Field(5) ? logical->Field(5)->Int(1, 0) : el.Int(7, 0));
      int64_t precision =
          logical && logical->Field(5) ? logical->Field(5)->Int(2, 0) : el.Int(8, 0);
      if (c->decimal_scale < 0 || c->decimal_scale > 38) c->decimal_scale = 0;
      // The decimal's value, declared as double (or float), or as a decimal of the same scale.
      t->kind = Kind::kDouble;
      t->logical_type = "decimal";
      t->scale = c->decimal_scale;
      t->precision = static_cast<int>(std::clamp<int64_t>(precision, c->decimal_scale, 1000));
      return Nullable(t, *c);
    }
    switch (c->type) {
      case kBoolean:
        t->kind = Kind::kBoolean;
        break;
      case kInt32:
        // UINT_32 does not fit an int
        t->kind = c->is_unsigned && UnsignedBits(el) >= 32 ? Kind::kLong : Kind::kInt;
        if (converted == 6 || (logical && logical->Field(6))) t->logical_type = "date";
        break;
      case kInt64:
      case kInt96:
        t->kind = Kind::kLong;
        if (c->type == kInt96) {
          t->logical_type = "timestamp-micros";
        } else if (converted == 9) {
          t->logical_type = "timestamp-millis";
        } else if (converted == 10) {
          t->logical_type = "timestamp-micros";
        } else if (logical && logical->Field(8)) {
          const Node* unit = logical->Field(8)->Field(2);
          if (unit && unit->Field(1))
            t->logical_type = "timestamp-millis";
          else if (unit && unit->Field(3))
            t->logical_type = "timestamp-nanos";
          else
            t->logical_type = "timestamp-micros";
        }
        break;
      case kFloat:
        t->kind = Kind::kFloat;
        break;
      case kDouble:
        t->kind = Kind::kDouble;
        break;
      case kByteArray: {
        bool text = converted == 0 || converted == 4 || converted == 19 ||
                    (logical && (logical->Field(1) || logical->Field(4) || logical->Field(12)));
        t->kind = text ? Kind::kString : Kind::kBytes;
        break;
      }
      case kFixed:
        t->kind = Kind::kFixed;
        t->name = c->name;
        t->size = c->type_length;
        break;
    }
    return Nullable(t, *c);
  }

  // The width of an unsigned integer column: UINT_8 (11), UINT_16 (12), else its
  // LogicalType INTEGER bitWidth, else 32/64.
  static int64_t UnsignedBits(const Node& el) {
    int64_t converted = el.Int(6, -1);
    if (converted == 11) return 8;
    if (converted == 12) return 16;
    const Node* logical = el.Field(10);
    if (logical && logical->Field(10)) return logical->Field(10)->Int(1, 32);
    return converted == 14 ? 64 : 32;
  }

  static schema::TypePtr Nullable(std::shared_ptr<schema::Type> t, const Column& c) {
    if (!c.optional) return t;
    auto n = std::make_shared<schema::Type>();
    n->kind = Kind::kNull;
    auto u = std::make_shared<schema::Type>();
    u->kind = Kind::kUnion;
    u->branches = {n, t};
    return u;
  }

  const std::string& name_;
  std::vector<Column>* columns_;
  std::vector<Top>* tops_;
  std::vector<const Node*> leaf_el_;  // per column: its schema element
};

}  // namespace

Status ReadFileSchema(const Node& schema, const std::string& file, size_t footer_at,
                      std::vector<Column>* columns, std::vector<Top>* tops,
                      schema::Schema* writer) {
  return SchemaReader(file, columns, tops).Read(schema, footer_at, writer);
}

}  // namespace rsl::data::parquet_decode

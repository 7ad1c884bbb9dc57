// Parquet's schema: the footer's SchemaElement list (Thrift), depth first, read into the
// file's columns (each with its Dremel levels and contract path: "a.b", "items[]", "m{}"),
// its top-level fields and the writer schema RSL binds the declared one against. Apart from
// the reader (parquet.cc) so that each stays readable.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "data/parquet_decode.h"
#include "data/thrift.h"
#include "schema/schema.h"

namespace rsl::data::parquet_decode {

// A node of the Parquet schema tree.
struct SNode {
  std::string name;
  int rep = 0;         // 0 required, 1 optional, 2 repeated
  int def = 0;         // definition level at which this node is present
  int rlevel = 0;      // repetition level of this node
  int leaf = -1;       // column index of a primitive
  int converted = -1;  // ConvertedType: 1 MAP, 2 MAP_KEY_VALUE, 3 LIST
  bool list = false;   // LIST (converted or logical)
  bool map = false;    // MAP / MAP_KEY_VALUE
  std::vector<SNode> children;
};

// A top-level field: one flat column, or a nested tree of columns.
struct Top {
  SNode node;
  bool flat = true;
  int first_leaf = 0;  // its columns are [first_leaf, first_leaf + leaves)
  int leaves = 0;
};

//! Reads the schema elements `schema` (the footer's field 2) into `columns`, `tops` and the
//! writer schema; errors name `file` and the footer's offset `footer_at`.
Status ReadFileSchema(const thrift::Node& schema, const std::string& file, size_t footer_at,
                      std::vector<Column>* columns, std::vector<Top>* tops, schema::Schema* writer);

}  // namespace rsl::data::parquet_decode

// Maps a position inside a YAML scalar (a schema or a `when` expression, whose own parsers
// count lines and columns from 1 within the value) to the position in the YAML file.
#pragma once

#include <string>

#include "base/status.h"

namespace rsl::spec {

//! `value_pos` is where the scalar starts in `text` (its yaml-cpp mark: the opening quote or
//! the '|'/'>' indicator); (inner_line, inner_column) are 1-based within the value. Handles
//! plain, single- and double-quoted scalars on one line and block scalars; escapes inside
//! double quotes can shift the column by their length.
SourcePos MapInnerPos(const std::string& text, const SourcePos& value_pos, int inner_line,
                      int inner_column);

}  // namespace rsl::spec

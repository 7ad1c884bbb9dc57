#include "schema/schema.h"

#include <gtest/gtest.h>

TEST(SchemaPlaceholder, Builds) {}

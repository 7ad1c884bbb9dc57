#include "api/auth.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/sqlite.h"

namespace rsl::api {
namespace {

std::string TempDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("rsl-api-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

TEST(AuthTest, ParseRoleSuggestsTheClosestRole) {
  EXPECT_EQ(*ParseRole("editor"), Role::kEditor);
  auto bad = ParseRole("edtor");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, "INVALID_ARGUMENT");
  EXPECT_EQ(bad.error().hint, "did you mean 'editor'?");
}

TEST(AuthTest, CreatedTokenAuthenticatesAndOnlyItsHashIsStored) {
  std::string dir = TempDir("create");
  auto store = TokenStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  auto token = (*store)->Create("alice", Role::kEditor, {"risk"});
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(token->rfind("rsl_", 0), 0u);
  EXPECT_EQ(token->size(), 4u + 48u);

  auto who = (*store)->Authenticate(*token);
  ASSERT_TRUE(who.has_value());
  EXPECT_EQ(who->subject, "alice");
  EXPECT_TRUE(who->CanWrite("risk"));
  EXPECT_FALSE(who->CanRead("ads"));
  EXPECT_FALSE((*store)->Authenticate(*token + "x").has_value());
  EXPECT_FALSE((*store)->Authenticate("").has_value());

  // The database file never contains the token itself.
  std::ifstream in(StateDbPath(dir), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes.find(*token), std::string::npos);
  EXPECT_EQ(bytes.find(token->substr(4)), std::string::npos);
}

TEST(AuthTest, TokensCreatedByAnotherConnectionAreSeen) {
  std::string dir = TempDir("shared");
  auto server_side = TokenStore::Open(dir);
  auto cli_side = TokenStore::Open(dir);
  ASSERT_TRUE(server_side.ok() && cli_side.ok());
  auto token = (*cli_side)->Create("", Role::kViewer, {"risk"});
  ASSERT_TRUE(token.ok());
  auto who = (*server_side)->Authenticate(*token);
  ASSERT_TRUE(who.has_value());
  EXPECT_EQ(who->subject.rfind("viewer-risk-", 0), 0u);
  EXPECT_FALSE(who->CanWrite("risk"));
  EXPECT_TRUE(who->CanRead("risk"));
}

TEST(AuthTest, RolesAndNamespaces) {
  Principal admin{"root", Role::kAdmin, {"ops"}, ""};
  EXPECT_TRUE(admin.CanWrite("anything"));
  EXPECT_TRUE(admin.IsClusterAdmin());
  Principal wide{"w", Role::kViewer, {"*"}, ""};
  EXPECT_TRUE(wide.CanRead("x"));
  EXPECT_FALSE(wide.CanWrite("x"));
  EXPECT_EQ(wide.DefaultNamespace(), "default");
  Principal editor{"e", Role::kEditor, {"a", "b"}, ""};
  EXPECT_EQ(editor.DefaultNamespace(), "a");
  EXPECT_TRUE(editor.CanWrite("b"));
  EXPECT_FALSE(editor.CanRead("c"));
  EXPECT_FALSE(editor.IsClusterAdmin());
}

TEST(AuthTest, InvalidNamespaceIsRefused) {
  auto store = TokenStore::Open(TempDir("badns"));
  ASSERT_TRUE(store.ok());
  auto t = (*store)->Create("x", Role::kViewer, {"Risk_Team"});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, "INVALID_ARGUMENT");
  EXPECT_EQ(t.error().value, "Risk_Team");
  EXPECT_FALSE((*store)->Create("x", Role::kViewer, {}).ok());
}

TEST(AuthTest, TokensFileLinesAndErrors) {
  std::string dir = TempDir("file");
  auto store = TokenStore::Open(dir);
  ASSERT_TRUE(store.ok());
  std::string path = dir + "/tokens.csv";
  std::ofstream(path) << "# static tokens\n"
                      << "0123456789abcdef0123,bob,editor,risk;ads\n";
  ASSERT_TRUE((*store)->LoadTokensFile(path).ok());
  auto who = (*store)->Authenticate("0123456789abcdef0123");
  ASSERT_TRUE(who.has_value());
  EXPECT_EQ(who->subject, "bob");
  EXPECT_TRUE(who->CanWrite("ads"));

  std::ofstream(path) << "0123456789abcdef0123,bob,boss,risk\n";
  Status st = (*store)->LoadTokensFile(path);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().pos.line, 1);
  EXPECT_EQ(st.code(), "INVALID_ARGUMENT");
  std::ofstream(path) << "\nshort,bob,viewer\n";
  st = (*store)->LoadTokensFile(path);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().pos.line, 2);
  EXPECT_EQ(st.error().message, "expected 4 comma-separated fields, got 3");
}

}  // namespace
}  // namespace rsl::api

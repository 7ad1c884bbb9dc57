#include "api/auth.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "api/auth_limit.h"
#include "base/fake_env.h"
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

TEST(AuthTest, ACertificateSubjectMapsToAPrincipal) {
  auto who = PrincipalFromCertificate("alice", {"Acme Corp", "risk:editor", "fraud:editor"},
                                      "AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23");
  ASSERT_TRUE(who.ok()) << who.error().ToString();
  EXPECT_EQ(who->subject, "alice");
  EXPECT_EQ(who->role, Role::kEditor);
  EXPECT_EQ(who->namespaces, (std::vector<std::string>{"risk", "fraud"}));
  EXPECT_EQ(who->token_id, "x509:abcdef012345");
  EXPECT_TRUE(who->CanWrite("fraud"));
  EXPECT_FALSE(who->CanRead("ops"));

  auto admin = PrincipalFromCertificate("root", {"*:admin"}, "00");
  ASSERT_TRUE(admin.ok());
  EXPECT_TRUE(admin->IsClusterAdmin());
}

TEST(AuthTest, ACertificateSubjectThatNamesNoSingleRoleIsRefused) {
  struct Case {
    std::string cn;
    std::vector<std::string> orgs;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"", {"risk:viewer"}, "client certificate has no subject CN"},
      {"bob", {"Acme Corp"}, "client certificate CN=\"bob\" names no namespace role"},
      {"bob",
       {"risk:viewer", "ops:editor"},
       "client certificate CN=\"bob\" names two roles, viewer and editor"},
      {"bob",
       {"risk:admin"},
       "client certificate CN=\"bob\": O=\"risk:admin\" would make a cluster admin"},
      {"bob", {"risk:owner"}, "client certificate CN=\"bob\": invalid role entry O=\"risk:owner\""},
      {"bob",
       {"Risk Team:viewer"},
       "client certificate CN=\"bob\": invalid role entry O=\"Risk Team:viewer\""},
  };
  for (const Case& c : cases) {
    auto who = PrincipalFromCertificate(c.cn, c.orgs, "00");
    ASSERT_FALSE(who.ok()) << c.message;
    EXPECT_EQ(who.error().code, "UNAUTHENTICATED");
    EXPECT_EQ(who.error().message, c.message);
    EXPECT_FALSE(who.error().hint.empty()) << c.message;
  }
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

TEST(AuthTest, ExpiredTokenIsRefusedAndUseIsRecordedToTheMinute) {
  std::string dir = TempDir("ttl");
  FakeClockEnv env;
  auto store = TokenStore::Open(dir, &env);
  ASSERT_TRUE(store.ok());
  auto token = (*store)->Create("tess", Role::kViewer, {"risk"}, 3'600'000);
  ASSERT_TRUE(token.ok());
  AuthOutcome ok = (*store)->Check(*token);
  ASSERT_TRUE(ok.who.has_value());
  auto list = (*store)->List();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].expires_ms, kFakeEnvStartMs + 3'600'000);
  EXPECT_EQ((*list)[0].last_used_ms, kFakeEnvStartMs);
  env.Advance(30'000);  // within the resolution: not written again
  ASSERT_TRUE((*store)->Check(*token).who.has_value());
  EXPECT_EQ((*(*store)->List())[0].last_used_ms, kFakeEnvStartMs);
  env.Advance(kLastUsedResolutionMs);
  ASSERT_TRUE((*store)->Check(*token).who.has_value());
  EXPECT_EQ((*(*store)->List())[0].last_used_ms, kFakeEnvStartMs + 30'000 + kLastUsedResolutionMs);

  env.SetNowMs(kFakeEnvStartMs + 3'600'000);
  AuthOutcome late = (*store)->Check(*token);
  EXPECT_FALSE(late.who.has_value());
  EXPECT_EQ(late.failure, AuthFailure::kExpired);
  EXPECT_EQ(late.token_id, ok.who->token_id);
  EXPECT_EQ(late.when_ms, kFakeEnvStartMs + 3'600'000);
  EXPECT_EQ((*store)->Check("rsl_nope").failure, AuthFailure::kUnknown);
  EXPECT_EQ((*store)->Check("").failure, AuthFailure::kNoToken);
}

TEST(AuthTest, RevokedByAnotherConnectionIsRefusedOnTheNextRequest) {
  std::string dir = TempDir("revoke");
  auto server_side = TokenStore::Open(dir);
  auto cli_side = TokenStore::Open(dir);
  ASSERT_TRUE(server_side.ok() && cli_side.ok());
  auto token = (*server_side)->Create("rita", Role::kEditor, {"risk"});
  auto other = (*server_side)->Create("otto", Role::kEditor, {"risk"});
  ASSERT_TRUE(token.ok() && other.ok());
  std::string id = (*server_side)->Check(*token).who->token_id;
  ASSERT_TRUE((*server_side)->Authenticate(*token).has_value());

  auto revoked = (*cli_side)->Revoke(id.substr(0, 8));
  ASSERT_TRUE(revoked.ok()) << revoked.error().ToString();
  EXPECT_EQ(revoked->subject, "rita");
  AuthOutcome after = (*server_side)->Check(*token);
  EXPECT_FALSE(after.who.has_value());
  EXPECT_EQ(after.failure, AuthFailure::kRevoked);
  EXPECT_TRUE((*server_side)->Authenticate(*other).has_value());  // only that one
  EXPECT_TRUE((*cli_side)->Revoke(id).ok());                      // again: a no-op

  auto listed = (*cli_side)->List();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_GT((*listed)[0].revoked_ms, 0);
  EXPECT_EQ((*listed)[1].revoked_ms, 0);

  EXPECT_EQ((*cli_side)->Revoke("abc").error().code, "INVALID_ARGUMENT");       // too short
  EXPECT_EQ((*cli_side)->Revoke("zzzzzzzz").error().code, "INVALID_ARGUMENT");  // not hex
  std::string other_id = (*server_side)->Check(*other).who->token_id;
  std::string unused = "000000";
  while (id.rfind(unused, 0) == 0 || other_id.rfind(unused, 0) == 0) ++unused[0];
  auto none = (*cli_side)->Revoke(unused);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, "NOT_FOUND");
}

TEST(AuthTest, TokenLifetimes) {
  EXPECT_EQ(*ParseTokenTtl("30m"), 1'800'000);
  EXPECT_EQ(*ParseTokenTtl("12h"), 43'200'000);
  EXPECT_EQ(*ParseTokenTtl("90d"), int64_t{90} * 86'400'000);
  EXPECT_EQ(*ParseTokenTtl("45s"), 45'000);
  for (const char* bad : {"", "h", "0h", "-1h", "1.5h", "1w", "99999d", "12 h"}) {
    auto r = ParseTokenTtl(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, "INVALID_ARGUMENT");
  }
}

TEST(FailedAuthLimiterTest, TenFailuresAMinuteThenWaitForTheWindow) {
  FailedAuthLimiter limiter;
  const int64_t t0 = 1'000'000;
  for (int i = 1; i < kMaxFailedAuths; ++i) {
    EXPECT_FALSE(limiter.Failed("10.0.0.1", t0 + i));
    EXPECT_FALSE(limiter.RetryAfter("10.0.0.1", t0 + i).has_value());
  }
  EXPECT_TRUE(limiter.Failed("10.0.0.1", t0 + 100));
  ASSERT_TRUE(limiter.RetryAfter("10.0.0.1", t0 + 100).has_value());
  EXPECT_EQ(*limiter.RetryAfter("10.0.0.1", t0 + 100), 60);
  EXPECT_EQ(*limiter.RetryAfter("10.0.0.1", t0 + 59'500), 1);
  EXPECT_FALSE(limiter.RetryAfter("10.0.0.2", t0 + 100).has_value());  // per address
  // The window began at the first failure (t0 + 1).
  EXPECT_FALSE(limiter.RetryAfter("10.0.0.1", t0 + 1 + kFailedAuthWindowMs).has_value());
  EXPECT_FALSE(limiter.Failed("10.0.0.1", t0 + 2 + kFailedAuthWindowMs));  // a new window
}

}  // namespace
}  // namespace rsl::api

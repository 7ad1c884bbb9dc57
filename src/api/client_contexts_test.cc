// seedctl's contexts file: parsing (errors word for word), saving, and where a context stands
// among flags, environment and the older config file.
#include "api/client_contexts.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>

#include "api/client.h"
#include "base/file.h"
#include "base/test_util.h"

namespace rsl::api {
namespace {

std::string ErrorOf(const std::string& yaml) {
  Result<ContextsFile> f = ParseContexts(yaml, "/home/u/.config/rsl/config.yaml");
  return f.ok() ? "OK" : f.error().ToString();
}

TEST(ClientContextsTest, ParsesContextsAndTheCurrentOne) {
  Result<ContextsFile> f = ParseContexts(
      "currentContext: prod\n"
      "contexts:\n"
      "  - name: prod\n"
      "    server: https://rsl.example:7443\n"
      "    tokenFile: prod.token\n"
      "    certificateAuthority: /etc/rsl/ca.pem\n"
      "    clientCertificate: ~/me.crt\n"
      "    clientKey: me.key\n"
      "    namespace: risk\n"
      "  - name: dev\n"
      "    server: http://127.0.0.1:7070\n",
      "/home/u/.config/rsl/config.yaml");
  ASSERT_TRUE(f.ok()) << f.error().ToString();
  ASSERT_EQ(f->contexts.size(), 2u);
  EXPECT_EQ(f->Names(), "prod, dev");
  EXPECT_EQ(f->contexts[0].token_file, "prod.token");  // as written
  EXPECT_EQ(f->contexts[1].server, "http://127.0.0.1:7070");

  ::setenv("HOME", "/home/u", 1);
  Result<Context> c = CurrentContext(*f, "/home/u/.config/rsl/config.yaml");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->name, "prod");
  EXPECT_EQ(c->server, "https://rsl.example:7443");
  EXPECT_EQ(c->token_file, "/home/u/.config/rsl/prod.token");  // from the file's directory
  EXPECT_EQ(c->certificate_authority, "/etc/rsl/ca.pem");
  EXPECT_EQ(c->client_certificate, "/home/u/me.crt");
  EXPECT_EQ(c->client_key, "/home/u/.config/rsl/me.key");
  EXPECT_EQ(c->namespace_, "risk");

  f->current_context = "";
  EXPECT_EQ(CurrentContext(*f, "x.yaml")->name, "");
  f->current_context = "staging";
  Result<Context> unknown = CurrentContext(*f, "/c.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().ToString(),
            "/c.yaml: NOT_FOUND currentContext: no context named \"staging\" (known contexts: "
            "prod, dev; seedctl config use-context NAME)");
}

TEST(ClientContextsTest, ErrorsHaveThePlaceTheKeyAndAHint) {
  EXPECT_EQ(ErrorOf("contexts:\n  - name: a\n    tokenfile: t\n"),
            "/home/u/.config/rsl/config.yaml:3:5: CONFIG_INVALID contexts[0].tokenfile: unknown "
            "field \"tokenfile\" (did you mean 'tokenFile'?)");
  EXPECT_EQ(ErrorOf("current-context: a\n"),
            "/home/u/.config/rsl/config.yaml:1:1: CONFIG_INVALID current-context: unknown field "
            "\"current-context\" (did you mean 'currentContext'?)");
  EXPECT_EQ(ErrorOf("contexts:\n  name: a\n"),
            "/home/u/.config/rsl/config.yaml:2:3: CONFIG_INVALID contexts: must be a list, got a "
            "mapping (write a list: `- name: prod` then its keys)");
  EXPECT_EQ(ErrorOf("contexts:\n  - name: a\n    server: [x]\n"),
            "/home/u/.config/rsl/config.yaml:3:13: CONFIG_INVALID contexts[0].server: must be a "
            "string, got a list (quote the value)");
  EXPECT_EQ(ErrorOf("contexts:\n  - server: x\n"),
            "/home/u/.config/rsl/config.yaml:2:5: CONFIG_INVALID contexts[0].name: missing "
            "required field \"name\" (every context has a name: `- name: prod`)");
  EXPECT_EQ(ErrorOf("contexts:\n  - name: a\n  - name: a\n"),
            "/home/u/.config/rsl/config.yaml:3:11: CONFIG_INVALID contexts[1].name: a second "
            "context named \"a\" (give every context its own name)");
  EXPECT_EQ(ErrorOf(""), "OK");
}

TEST(ClientContextsTest, SavedAtomicallyPrivateAndReadBack) {
  rsl::testing::TempDir dir("contexts");
  std::string path = dir / "new/rsl/config.yaml";  // its directory is made
  ContextsFile f;
  f.current_context = "b";
  f.contexts.push_back({"a", "http://a:1", "/t/a.token", "", "", "", "ns-a"});
  f.contexts.push_back({"b", "https://b:2", "", "/ca.pem", "/c.crt", "/c.key", ""});
  ASSERT_TRUE(SaveContexts(f, path).ok());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir / "new/rsl").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  Result<ContextsFile> back = LoadContexts(path);
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(RenderContexts(*back), RenderContexts(f));
  EXPECT_EQ(back->current_context, "b");
  EXPECT_EQ(back->contexts[1].client_key, "/c.key");
  EXPECT_EQ(back->contexts[0].namespace_, "ns-a");
  // A missing file holds no contexts.
  EXPECT_TRUE(LoadContexts(dir / "none.yaml")->contexts.empty());
}

// ResolveClientConfig reads the environment: each test sets all of it.
class ResolveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v :
         {"SEEDCTL_SERVER", "SEEDCTL_TOKEN", "SEEDCTL_NAMESPACE", "SEEDCTL_CERTIFICATE_AUTHORITY",
          "SEEDCTL_CLIENT_CERTIFICATE", "SEEDCTL_CLIENT_KEY", "SEEDCTL_CONFIG", "RSL_CONFIG",
          "SEEDCTL_CONTEXT"}) {
      ::unsetenv(v);
    }
    ::setenv("HOME", dir_.path().c_str(), 1);
    ::setenv("XDG_CONFIG_HOME", (dir_ / "xdg").c_str(), 1);
    dir_.Write("prod.token", "tok-prod\n");
    dir_.Write("dev.token", "  tok-dev  \n");
    dir_.Write("xdg/rsl/config.yaml",
               "currentContext: prod\n"
               "contexts:\n"
               "  - {name: prod, server: 'https://prod:7443', tokenFile: ../../prod.token,"
               " namespace: risk}\n"
               "  - {name: dev, server: 'dev:7070', tokenFile: " +
                   (dir_ / "dev.token") + "}\n");
  }
  rsl::testing::TempDir dir_{"contexts"};
};

TEST_F(ResolveTest, TheCurrentContextGivesServerTokenAndNamespace) {
  Result<ClientConfig> c = ResolveClientConfig("", "", "");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->context, "prod");
  EXPECT_EQ(c->server, "https://prod:7443");
  EXPECT_EQ(c->token, "tok-prod");
  EXPECT_EQ(c->namespace_, "risk");
}

TEST_F(ResolveTest, FlagsThenEnvironmentThenContextThenTheOlderFile) {
  dir_.Write("xdg/seedctl/config", "server: http://old:1\nnamespace: old-ns\n");
  ::setenv("SEEDCTL_SERVER", "http://env:2", 1);
  Result<ClientConfig> c = ResolveClientConfig("http://flag:3", "", "");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->server, "http://flag:3");
  c = ResolveClientConfig("", "flag-token", "");
  EXPECT_EQ(c->server, "http://env:2");
  EXPECT_EQ(c->token, "flag-token");
  EXPECT_EQ(c->namespace_, "risk");  // the context's, not the older file's
  ::unsetenv("SEEDCTL_SERVER");
  ::setenv("SEEDCTL_TOKEN", "env-token", 1);
  c = ResolveClientConfig("", "", "");
  EXPECT_EQ(c->server, "https://prod:7443");
  EXPECT_EQ(c->token, "env-token");

  // RSL_CONFIG (seedctl --config) chooses another file: there dev is current.
  ::unsetenv("SEEDCTL_TOKEN");
  std::string other = dir_.Write("other.yaml",
                                 "currentContext: dev\ncontexts:\n  - name: dev\n"
                                 "    server: dev:7070\n"
                                 "    tokenFile: dev.token\n");
  ::setenv("RSL_CONFIG", other.c_str(), 1);
  c = ResolveClientConfig("", "", "");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->context, "dev");
  EXPECT_EQ(c->server, "http://dev:7070");
  EXPECT_EQ(c->token, "tok-dev");
  EXPECT_EQ(c->namespace_, "old-ns");  // the context has none: the older file's
  ::unsetenv("RSL_CONFIG");
}

TEST_F(ResolveTest, AMissingTokenFileOrUnknownContextIsAnError) {
  dir_.Write("xdg/rsl/config.yaml",
             "currentContext: prod\ncontexts:\n  - {name: prod, tokenFile: /nonexistent/t}\n");
  Result<ClientConfig> c = ResolveClientConfig("", "", "");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().ToString(),
            "INVALID_ARGUMENT tokenFile: context \"prod\": token file \"/nonexistent/t\" does "
            "not exist (put the token in that file (one line), or seedctl config set-context "
            "prod --token-file FILE)");
  // A token on the command line: the file is not needed.
  EXPECT_TRUE(ResolveClientConfig("", "tok", "").ok());

  dir_.Write("xdg/rsl/config.yaml", "currentContext: qa\ncontexts:\n  - {name: prod}\n");
  c = ResolveClientConfig("", "", "");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, "NOT_FOUND");
  EXPECT_NE(c.error().hint.find("known contexts: prod"), std::string::npos);
}

// seedctl --context NAME (SEEDCTL_CONTEXT) uses another context for one command; the file's
// currentContext stays as it is.
TEST_F(ResolveTest, TheContextFlagChoosesAnotherContextForOneCommand) {
  ::setenv("SEEDCTL_CONTEXT", "dev", 1);
  Result<ClientConfig> c = ResolveClientConfig("", "", "");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->context, "dev");
  EXPECT_EQ(c->server, "http://dev:7070");
  EXPECT_EQ(c->token, "tok-dev");
  EXPECT_EQ(c->namespace_, "");
  EXPECT_EQ(LoadContexts(ContextsPath())->current_context, "prod");
  // Flags still win over it.
  c = ResolveClientConfig("http://flag:3", "", "ns");
  EXPECT_EQ(c->server, "http://flag:3");
  EXPECT_EQ(c->namespace_, "ns");

  ::setenv("SEEDCTL_CONTEXT", "qa", 1);
  c = ResolveClientConfig("", "", "");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, "NOT_FOUND");
  EXPECT_EQ(c.error().path, "--context");
  EXPECT_EQ(c.error().value, "qa");
  EXPECT_EQ(c.error().hint, "known contexts: prod, dev (seedctl config get-contexts)");
  ::unsetenv("SEEDCTL_CONTEXT");
}

}  // namespace
}  // namespace rsl::api

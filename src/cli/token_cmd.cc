#include "cli/token_cmd.h"

#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "api/audit.h"
#include "api/auth.h"
#include "base/env.h"
#include "base/strings.h"
#include "cli/cli.h"
#include "cli/table.h"
#include "cli/workload_format.h"

namespace rsl::cli {

namespace {

// A change made on the controller's host: audited as the local user.
void Audit(const std::string& state_dir, const std::string& verb, const std::string& ns,
           const std::string& object, const std::string& message) {
  auto audit = api::AuditLog::Open(state_dir);
  if (!audit.ok()) return;
  api::AuditEntry e;
  const char* user = std::getenv("USER");
  e.subject = std::string("local:") + (user ? user : std::to_string(::getuid()));
  e.verb = verb;
  e.resource = "tokens";
  e.namespace_ = ns;
  e.object_id = object;
  e.result = "OK";
  e.message = message;
  (void)(*audit)->Append(e);
}

std::unique_ptr<api::TokenStore> OpenTokens(const std::string& state_dir) {
  auto store = api::TokenStore::Open(state_dir);
  if (!store.ok()) FailWith(store.error());
  return std::move(*store);
}

std::string Utc(int64_t ms) { return ms > 0 ? FormatUtc(ms / 1000, "%Y-%m-%dT%H:%M:%SZ") : ""; }

std::string TokenState(const api::TokenInfo& t, int64_t now) {
  if (t.revoked_ms > 0) return "revoked";
  if (t.expires_ms > 0 && now >= t.expires_ms) return "expired";
  return "active";
}

}  // namespace

void RunTokenCreate(const TokenCreateFlags& f) {
  auto role = api::ParseRole(f.role);
  if (!role.ok()) FailWith(role.error().Path("--role"));
  int64_t ttl_ms = 0;
  if (!f.ttl.empty()) {
    auto ttl = api::ParseTokenTtl(f.ttl);
    if (!ttl.ok()) FailWith(ttl.error().Path("--ttl"));
    ttl_ms = *ttl;
  }
  std::vector<std::string> nss;
  for (const auto& n : f.namespaces) {
    for (auto& part : api::SplitNamespaces(n)) nss.push_back(part);
  }
  auto store = OpenTokens(f.state_dir);
  auto tok = store->Create(f.subject, *role, nss, ttl_ms);
  if (!tok.ok()) FailWith(tok.error());
  // Looked up, not authenticated: a use would be recorded as its last use.
  const std::string id = api::TokenHash(*tok).substr(0, 12);
  std::string subject = f.subject;
  if (auto all = store->List(); all.ok()) {
    for (const auto& t : *all) {
      if (t.token_id == id) subject = t.subject;
    }
  }
  std::string expiry = ttl_ms > 0 ? ", expires " + Utc(Env::Default()->NowMs() + ttl_ms) : "";
  Audit(f.state_dir, "create", Join(nss, ";"), subject,
        std::string("role ") + api::RoleName(*role) + ", id " + id + expiry);
  std::cout << "Token created for " << Quote(subject) << " (role " << api::RoleName(*role)
            << ", namespaces " << Join(nss, ",") << expiry << ").\n"
            << "It is shown only this once; only its hash is stored.\n"
            << *tok << "\n";
}

void RunTokenList(const TokenListFlags& f) {
  auto store = OpenTokens(f.state_dir);
  auto tokens = store->List();
  if (!tokens.ok()) FailWith(tokens.error());
  const int64_t now = Env::Default()->NowMs();
  if (f.output == "json") {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& t : *tokens) {
      out.push_back({{"id", t.token_id},
                     {"subject", t.subject},
                     {"role", api::RoleName(t.role)},
                     {"namespaces", t.namespaces},
                     {"created", Utc(t.created_ms)},
                     {"expires", Utc(t.expires_ms)},
                     {"lastUsed", Utc(t.last_used_ms)},
                     {"revoked", Utc(t.revoked_ms)},
                     {"status", TokenState(t, now)}});
    }
    std::cout << out.dump(2) << "\n";
    return;
  }
  Table table({"ID", "SUBJECT", "ROLE", "NAMESPACES", "AGE", "EXPIRES", "LAST USED", "STATUS"});
  for (const auto& t : *tokens) {
    table.AddRow({t.token_id, t.subject, api::RoleName(t.role), Join(t.namespaces, ","),
                  Age(t.created_ms, now), t.expires_ms > 0 ? Utc(t.expires_ms) : "never",
                  t.last_used_ms > 0 ? Age(t.last_used_ms, now) + " ago" : "never",
                  TokenState(t, now)});
  }
  if (table.size() == 0) {
    std::cout << "No tokens in " << f.state_dir << " (create one with `seedctl token create`).\n";
    return;
  }
  std::cout << table.Render();
}

void RunTokenRevoke(const TokenRevokeFlags& f) {
  auto store = OpenTokens(f.state_dir);
  auto t = store->Revoke(f.id);
  if (!t.ok()) FailWith(t.error());
  Audit(f.state_dir, "revoke", Join(t->namespaces, ";"), t->subject, "id " + t->token_id);
  std::cout << "Token " << t->token_id << " of " << Quote(t->subject)
            << " revoked; requests with it get 401 from now on.\n";
}

void RegisterTokenCommands(CLI::App& app) {
  CLI::App* token = app.add_subcommand("token", "Bearer tokens for rsl-controller");
  token->require_subcommand(1);

  auto create = std::make_shared<TokenCreateFlags>();
  CLI::App* cmd = token->add_subcommand(
      "create", "Create a token in the controller's state directory; prints it as the last line");
  cmd->add_option("--state-dir", create->state_dir, "the controller's state directory")->required();
  cmd->add_option("--namespace,-n", create->namespaces,
                  "namespace(s) the role applies in (repeat or comma-separate; '*' = all)")
      ->required();
  cmd->add_option("--role", create->role, "viewer | editor | admin")->required();
  cmd->add_option("--subject", create->subject, "who the token stands for (default: generated)");
  cmd->add_option("--ttl", create->ttl, "lifetime: 30m, 12h, 90d... (default: never expires)");
  Bind(cmd, create, &RunTokenCreate);

  auto list = std::make_shared<TokenListFlags>();
  cmd =
      token->add_subcommand("list", "Tokens of the state directory (never the tokens themselves)");
  cmd->add_option("--state-dir", list->state_dir, "the controller's state directory")->required();
  cmd->add_option("-o,--output", list->output, "json")->check(CLI::IsMember({"json"}));
  Bind(cmd, list, &RunTokenList);

  auto revoke = std::make_shared<TokenRevokeFlags>();
  cmd = token->add_subcommand("revoke", "Revoke a token: 401 from its next request on");
  cmd->add_option("id", revoke->id, "the ID column of `seedctl token list`")->required();
  cmd->add_option("--state-dir", revoke->state_dir, "the controller's state directory")->required();
  Bind(cmd, revoke, &RunTokenRevoke);
}

}  // namespace rsl::cli

// Completion scripts and man pages generated from the command tree: the tree model on a small
// app, then seedctl's own scripts driven in real bash and zsh sessions and its pages rendered
// by groff, man and mandoc (scripts/deps/completion.txt installs zsh and mandoc).
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <set>
#include <sstream>

#include "base/env.h"
#include "base/test_util.h"
#include "cli/cli.h"
#include "cli/command_tree.h"
#include "cli/completion.h"
#include "cli/completion_cmd.h"
#include "cli/man_page.h"

namespace rsl::cli {
namespace {

using rsl::testing::TempDir;

const std::string kSeedctl = std::string(RSL_BINARY_DIR) + "/bin/seedctl";
constexpr int64_t kShellTimeoutMs = 120000;  // generous: CI machines are loaded

ProcessResult RunTool(const std::vector<std::string>& argv) {
  ProcessSpec spec;
  spec.argv = argv;
  spec.timeout_ms = kShellTimeoutMs;
  auto r = Env::Default()->RunProcess(spec);
  EXPECT_TRUE(r.ok()) << argv[0] << ": " << (r.ok() ? "" : r.error().ToString());
  return r.ok() ? *r : ProcessResult{};
}

bool Installed(const std::string& tool) {
  return RunTool({"sh", "-c", "command -v " + tool}).exit_code == 0;
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // a pseudo-terminal's CRLF
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

//! seedctl's tree, registered as seedctl_main.cc registers it.
void RegisterSeedctl(CLI::App& app) {
  app.require_subcommand(1);
  app.fallthrough();
  RegisterSpecCommands(app);
  RegisterRunCommands(app);
  RegisterDataCommands(app);
  RegisterModelCommands(app);
  RegisterImageCommands(app);
  RegisterGovernCommands(app);
  RegisterWorkloadCommands(app);
  RegisterConfigCommands(app);
  RegisterCompletionCommands(app);
  AddConfigFileFlag(app);
}

//! A small tree with one of each kind of value.
struct SmallApp {
  CLI::App app{"tool: a test tool", "tool"};
  std::string s;
  std::vector<std::string> v;
  bool b = false;
  SmallApp() {
    app.fallthrough();
    app.add_option("--config", s, "settings file");
    CLI::App* widget = app.add_subcommand("widget", "Widgets");
    widget->add_option("-o,--output", s, "format")->check(CLI::IsMember({"json", "yaml"}));
    CLI::App* make = widget->add_subcommand("frobnicate", "Frobnicate a widget");
    make->add_option("-f,--filename", v, "manifest (repeatable)");
    make->add_option("--state-dir", s, "state directory");
    make->add_option("--server", s, "controller URL, e.g. https://x:1");
    make->add_option("--certificate-authority", s, "CAs");
    make->add_option("--uri", s, "data URI (file:// or s3://)");
    make->add_option("--context", s, "the context (else the file's currentContext)");
    make->add_flag("--dry-run", b, "only print");
    make->add_option("--secret", s, "hidden")->group("");
    make->add_option("SPEC", s, "the spec YAML")->required();
    app.add_subcommand("hidden", "not shown")->group("");
  }
};

const OptionNode* Find(const std::vector<OptionNode>& options, const std::string& name) {
  for (const auto& o : options) {
    if (o.Names().find(name) != std::string::npos) return &o;
  }
  return nullptr;
}

TEST(CommandTreeTest, ReadsCommandsOptionsAndWhatTheirValuesAre) {
  SmallApp small;
  CommandNode root = DescribeApp(small.app);
  ASSERT_EQ(root.subcommands.size(), 1u) << "the hidden command is left out";
  const CommandNode& widget = root.subcommands[0];
  ASSERT_EQ(widget.subcommands.size(), 1u);
  const CommandNode& make = widget.subcommands[0];
  EXPECT_EQ(make.path, (std::vector<std::string>{"widget", "frobnicate"}));
  EXPECT_EQ(make.FullName("tool"), "tool widget frobnicate");

  const OptionNode* out = Find(widget.options, "--output");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->Names(), "-o, --output");
  EXPECT_EQ(out->kind, ValueKind::kChoice);
  EXPECT_EQ(out->choices, (std::vector<std::string>{"json", "yaml"}));

  auto kind = [&](const std::string& name) { return Find(make.options, name)->kind; };
  EXPECT_EQ(kind("--filename"), ValueKind::kFile);
  EXPECT_TRUE(Find(make.options, "--filename")->repeatable);
  EXPECT_EQ(kind("--state-dir"), ValueKind::kDir);
  EXPECT_EQ(kind("--server"), ValueKind::kAny);
  EXPECT_EQ(kind("--certificate-authority"), ValueKind::kFile);
  EXPECT_EQ(kind("--uri"), ValueKind::kAny) << "a URL, not a local path";
  EXPECT_EQ(kind("--context"), ValueKind::kAny) << "\"the file's\" does not make it a file";
  EXPECT_EQ(kind("--dry-run"), ValueKind::kNone);
  EXPECT_EQ(Find(make.options, "--secret"), nullptr) << "hidden options are left out";
  ASSERT_EQ(make.positionals.size(), 1u);
  EXPECT_EQ(make.positionals[0].positional, "SPEC");
  EXPECT_EQ(make.positionals[0].kind, ValueKind::kFile);
  EXPECT_TRUE(make.positionals[0].required);
}

TEST(CommandTreeTest, FallthroughCommandsAcceptTheirParentsOptions) {
  SmallApp small;
  CommandNode root = DescribeApp(small.app);
  const CommandNode& widget = root.subcommands[0];
  std::vector<OptionNode> accepted = AcceptedOptions({&root, &widget}, widget.subcommands[0]);
  EXPECT_NE(Find(accepted, "--config"), nullptr) << "the root's option, through two levels";
  EXPECT_NE(Find(accepted, "--output"), nullptr);
  EXPECT_EQ(std::count_if(accepted.begin(), accepted.end(),
                          [](const OptionNode& o) { return o.Names() == "-h, --help"; }),
            1)
      << "a name the command declares itself is not inherited again";
}

TEST(ManPageTest, RoffEscapeGuardsRequestsBackslashesAndHyphens) {
  EXPECT_EQ(RoffEscape("a-b"), "a\\-b");
  EXPECT_EQ(RoffEscape("C:\\dir"), "C:\\edir");
  EXPECT_EQ(RoffEscape(".TH x\n'br\nok.x"), "\\&.TH x\n\\&'br\nok.x");
}

TEST(ManPageTest, OnePagePerCommandWithItsOptionsAndCrossReferences) {
  SmallApp small;
  ManInfo info;
  info.program = "tool";
  info.version = "tool 1";
  info.date = "2026-01-02";
  info.environment = {{"TOOL_X", "what x does"}};
  std::vector<ManPage> pages = ManPages(DescribeApp(small.app), info);
  std::vector<std::string> names;
  for (const auto& p : pages) names.push_back(p.file_name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"tool.1", "tool-widget.1", "tool-widget-frobnicate.1"}));
  const std::string& leaf = pages[2].text;
  EXPECT_NE(leaf.find(".TH \"TOOL\\-WIDGET\\-FROBNICATE\" 1 \"2026-01-02\" \"tool 1\""),
            std::string::npos)
      << leaf;
  EXPECT_NE(leaf.find(".SH NAME\ntool\\-widget\\-frobnicate \\- Frobnicate a widget\n"),
            std::string::npos)
      << leaf;
  EXPECT_NE(leaf.find("\\fB\\-f\\fR, \\fB\\-\\-filename\\fR \\fIFILE\\fR"), std::string::npos);
  EXPECT_NE(leaf.find(".SH INHERITED OPTIONS"), std::string::npos);
  EXPECT_NE(leaf.find("\\fB\\-\\-config\\fR \\fIFILE\\fR"), std::string::npos)
      << "the root's option, inherited";
  EXPECT_NE(leaf.find("\\fBtool\\-widget\\fR(1)"), std::string::npos) << "SEE ALSO the parent";
  EXPECT_EQ(leaf.find("hidden"), std::string::npos);
  EXPECT_NE(pages[0].text.find(".SH ENVIRONMENT\n.TP\n\\fBTOOL_X\\fR\nwhat x does"),
            std::string::npos)
      << pages[0].text;
}

// --- bash -------------------------------------------------------------------------------------

//! Sources `script` in `bash --norc` and prints, for each line of `lines`, what TAB offers
//! there ("LINE -> A B C"), by setting COMP_WORDS/COMP_CWORD/COMP_LINE and calling _<program>
//! as bash's programmable completion does (words split as bash splits them). The last line is
//! `complete -p <program>`.
std::vector<std::string> BashComplete(const std::string& script, const std::string& program,
                                      const std::vector<std::string>& lines) {
  std::string driver =
      "source \"$1\" || exit 1\n"
      "c() {\n"
      "  COMP_LINE=\"$1\"; COMP_POINT=${#COMP_LINE}\n"
      // bash splits words at COMP_WORDBREAKS' '=' too: --output=json is "--output" "=" "json".
      "  read -ra COMP_WORDS <<<\"${1//=/ = }\"\n"
      "  [[ \"$1\" == *' ' ]] && COMP_WORDS+=('')\n"
      "  COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()\n"
      "  _" +
      program +
      "\n"
      "  echo \"$1-> ${COMPREPLY[*]}\"\n"
      "}\n";
  for (const auto& line : lines) driver += "c '" + line + "'\n";
  driver += "complete -p " + program + "\n";
  ProcessResult r = RunTool({"bash", "--norc", "--noprofile", "-c", driver, "bash", script});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  return Lines(r.out);
}

TEST(BashCompletionTest, ANewCommandCompletesWithoutChangingTheGenerator) {
  SmallApp small;
  TempDir dir;
  std::string script = dir.Write("tool.bash", BashCompletion(DescribeApp(small.app), "tool"));
  dir.Write("spec.yaml", "");
  auto got = BashComplete(script, "tool",
                          {"tool w", "tool widget ", "tool widget -o ",
                           "tool widget --output=", "tool widget frobnicate -f " + dir.Sub("sp"),
                           "tool widget frobnicate --dry-run " + dir.Sub("sp"),
                           "tool widget frobnicate --con", "tool h"});
  EXPECT_EQ(got,
            (std::vector<std::string>{
                "tool w-> widget",
                "tool widget -> frobnicate",
                "tool widget -o -> json yaml",
                "tool widget --output=-> json yaml",
                "tool widget frobnicate -f " + dir.Sub("sp") + "-> " + dir.Sub("spec.yaml"),
                // SPEC, the argument, is a file too; --dry-run takes no value.
                "tool widget frobnicate --dry-run " + dir.Sub("sp") + "-> " + dir.Sub("spec.yaml"),
                "tool widget frobnicate --con-> --context --config",
                "tool h-> ",
                "complete -F _tool tool",
            }));
}

TEST(SeedctlCompletionTest, BashCompletesCommandsFormatsAndFiles) {
  TempDir dir;
  ProcessResult gen = RunTool({kSeedctl, "completion", "bash"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  std::string script = dir.Write("seedctl", gen.out);
  dir.Write("fraud.yaml", "");
  dir.Write("prod.token", "");
  Env::Default()->MakeDirs(dir.Sub("state"));
  auto got = BashComplete(
      script, "seedctl",
      {"seedctl wor", "seedctl workload ", "seedctl workload list -o ",
       "seedctl workload submit -f " + dir.Sub("fr"),
       "seedctl config set-context prod --token-file " + dir.Sub("pr"),
       "seedctl run --state-dir " + dir.Sub("st"),
       "seedctl --config " + dir.Sub("fr") + " workload ", "seedctl datasource register "});
  ASSERT_EQ(got.size(), 9u);
  EXPECT_EQ(got[0], "seedctl wor-> workload");
  // Subcommands from workload_cmd.cc, with no list of them in the generator.
  EXPECT_EQ(got[1],
            "seedctl workload -> submit list status logs events describe lineage cancel history");
  EXPECT_EQ(got[2], "seedctl workload list -o -> json yaml wide");
  EXPECT_EQ(got[3], "seedctl workload submit -f " + dir.Sub("fr") + "-> " + dir.Sub("fraud.yaml"));
  EXPECT_EQ(got[4], "seedctl config set-context prod --token-file " + dir.Sub("pr") + "-> " +
                        dir.Sub("prod.token"));
  EXPECT_EQ(got[5], "seedctl run --state-dir " + dir.Sub("st") + "-> " + dir.Sub("state"));
  EXPECT_EQ(got[6], "seedctl --config " + dir.Sub("fr") +
                        " workload -> submit list status logs events describe lineage cancel "
                        "history")
      << "the global option's value is not taken for a command";
  EXPECT_EQ(got[7], "seedctl datasource register -> hdfs ceph s3 local");
  EXPECT_EQ(got[8], "complete -F _seedctl seedctl");
}

TEST(SeedctlCompletionTest, BashCompletionLoadsTheInstalledScriptOnDemand) {
  // As installed: bash-completion finds completions/seedctl the first time seedctl is
  // completed (/usr/share/bash-completion/completions for the package; here the user
  // directory, which it searches first).
  const std::string loader = "/usr/share/bash-completion/bash_completion";
  ASSERT_TRUE(Env::Default()->Stat(loader).ok())
      << "bash-completion is missing: scripts/install-deps.sh installs it";
  TempDir dir;
  ProcessResult gen = RunTool({kSeedctl, "completion", "bash"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  dir.Write("completions/seedctl", gen.out);
  ProcessResult r =
      RunTool({"bash", "--norc", "--noprofile", "-c",
               "source \"$1\"\n"
               "complete -p seedctl 2>/dev/null && exit 1  # not loaded before it is needed\n"
               "BASH_COMPLETION_USER_DIR=\"$2\" _completion_loader seedctl\n"
               "complete -p seedctl || exit 1\n"
               "COMP_WORDS=(seedctl workload li); COMP_CWORD=2; COMP_LINE='seedctl workload li'\n"
               "COMP_POINT=${#COMP_LINE}; _seedctl; echo \"${COMPREPLY[*]}\"\n",
               "bash", loader, dir.path()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "complete -F _seedctl seedctl\nlist lineage\n");
}

// --- zsh --------------------------------------------------------------------------------------

//! What zsh's completion system offers for LINE<TAB> with _seedctl in `fpath_dir`, driven in
//! an interactive zsh in a pseudo-terminal (testdata/zsh_capture.zsh).
std::vector<std::string> ZshComplete(const std::string& fpath_dir, const std::string& line) {
  ProcessResult r =
      RunTool({"zsh", "-f", std::string(RSL_SOURCE_DIR) + "/src/cli/testdata/zsh_capture.zsh",
               fpath_dir, line});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> got = Lines(r.out);
  std::sort(got.begin(), got.end());
  return got;
}

TEST(SeedctlCompletionTest, ZshParsesAndCompletesNatively) {
  ASSERT_TRUE(Installed("zsh")) << "zsh is missing: scripts/install-deps.sh installs it";
  TempDir dir;
  ProcessResult gen = RunTool({kSeedctl, "completion", "zsh"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  ASSERT_EQ(gen.out.rfind("#compdef seedctl\n", 0), 0u);
  std::string script = dir.Write("_seedctl", gen.out);
  ProcessResult parse = RunTool({"zsh", "-n", script});
  EXPECT_EQ(parse.exit_code, 0) << parse.err;
  EXPECT_EQ(parse.err, "");
  dir.Write("fraud.yaml", "");

  EXPECT_EQ(ZshComplete(dir.path(), "seedctl wor"), (std::vector<std::string>{"workload"}));
  EXPECT_EQ(ZshComplete(dir.path(), "seedctl workload "),
            (std::vector<std::string>{"cancel", "describe", "events", "history", "lineage", "list",
                                      "logs", "status", "submit"}));
  EXPECT_EQ(ZshComplete(dir.path(), "seedctl workload list -o "),
            (std::vector<std::string>{"json", "wide", "yaml"}));
  EXPECT_EQ(ZshComplete(dir.path(), "seedctl config use"),
            (std::vector<std::string>{"use-context"}));
  EXPECT_EQ(ZshComplete(dir.path(), "seedctl validate --con"),
            (std::vector<std::string>{"--config", "--context"}));
  auto files = ZshComplete(dir.path(), "seedctl validate -f " + dir.path() + "/fr");
  EXPECT_EQ(files, (std::vector<std::string>{"fraud.yaml"}));
}

// --- man pages --------------------------------------------------------------------------------

TEST(SeedctlManTest, EveryPageRendersWithoutWarnings) {
  TempDir dir;
  ProcessResult gen = RunTool({kSeedctl, "man", dir.Sub("man"), "--date", "2026-12-03"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  std::vector<std::string> written = Lines(gen.out);
  ASSERT_GT(written.size(), 20u);

  // Every command at every depth has its page, from whichever file registered it.
  CLI::App app{"seedctl: declarative AI workloads (RSL)", "seedctl"};
  RegisterSeedctl(app);
  CommandNode tree = DescribeApp(app);
  std::set<std::string> files(written.begin(), written.end());
  for (const CommandNode* node : tree.Flatten()) {
    std::string name = dir.Sub("man") + "/seedctl";
    for (const auto& p : node->path) name += "-" + p;
    EXPECT_TRUE(files.count(name + ".1")) << name;
  }
  EXPECT_TRUE(files.count(dir.Sub("man") + "/rsl-controller.1"));
  for (const char* page :
       {"seedctl-config-use-context.1", "seedctl-image-prune.1", "seedctl-datasource-register-s3.1",
        "seedctl-k8s-crd-diff.1", "seedctl-workload-submit.1", "seedctl-completion.1"}) {
    EXPECT_TRUE(files.count(dir.Sub("man") + "/" + page)) << page;
  }

  auto main_page = Env::Default()->ReadFile(dir.Sub("man") + "/seedctl.1");
  ASSERT_TRUE(main_page.ok());
  for (const auto& sub : tree.subcommands) {
    EXPECT_NE(main_page->find(".TP\n\\fB" + RoffEscape(sub.name) + "\\fR\n"), std::string::npos)
        << sub.name;
  }
  for (const char* section :
       {".SH SYNOPSIS", ".SH COMMANDS", ".SH GLOBAL OPTIONS", ".SH ENVIRONMENT", "SEEDCTL_SERVER",
        "SEEDCTL_TOKEN", "SEEDCTL_NAMESPACE", "SEEDCTL_CONTEXT", "RSL_CONFIG", "RSL_STATE_DIR",
        ".SH FILES", "~/.config/rsl/config.yaml", ".SH SEE ALSO", "\\fBrsl\\-controller\\fR(1)"}) {
    EXPECT_NE(main_page->find(section), std::string::npos) << section;
  }

  ASSERT_TRUE(Installed("groff")) << "groff is missing: scripts/install-deps.sh installs it";
  ASSERT_TRUE(Installed("mandoc")) << "mandoc is missing: scripts/install-deps.sh installs it";
  for (const auto& page : written) {
    // -ww: every warning; -z: no output, only the diagnostics.
    ProcessResult groff = RunTool({"groff", "-man", "-Tutf8", "-ww", "-z", page});
    EXPECT_EQ(groff.exit_code, 0) << page;
    EXPECT_EQ(groff.err, "") << page;
    ProcessResult lint = RunTool({"mandoc", "-T", "lint", "-W", "warning", page});
    EXPECT_EQ(lint.exit_code, 0) << page << "\n" << lint.out << lint.err;
    EXPECT_EQ(lint.out + lint.err, "") << page;
  }
  // man itself renders the page as a user sees it.
  ProcessResult man = RunTool({"sh", "-c", "MANWIDTH=100 MANPAGER=cat man -l \"$1\" 2>&1", "sh",
                               dir.Sub("man") + "/seedctl-workload-list.1"});
  EXPECT_EQ(man.exit_code, 0) << man.out;
  EXPECT_NE(man.out.find("seedctl workload list [options]"), std::string::npos) << man.out;
  EXPECT_NE(man.out.find("-o, --output json|yaml|wide"), std::string::npos) << man.out;
}

}  // namespace
}  // namespace rsl::cli

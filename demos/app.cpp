// app.cpp — the flashdemo command line: one subcommand per lecture demo, plus the classroom
// walkthrough, the lab's check, and the tools around them (main.cpp calls run; so does the
// command-line fuzzer, tests/fuzz/fuzz_cli.cpp, once per input).
//
// Errors the user can fix end as one line on stderr ("flashdemo: error: ...") and a non-zero
// exit code (README, "Exit codes"); --help and --version print and exit 0. The language is
// settled before the command line is built, so --help is translated too.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <new>
#include <string>

#include "app.hpp"
#include "backward.hpp"
#include "bench.hpp"
#include "check.hpp"
#include "cli_tools.hpp"
#include "common.hpp"
#include "flashdemo/npy.hpp"
#include "forward.hpp"
#include "info.hpp"
#include "memory.hpp"
#include "softmax.hpp"
#include "ui/output.hpp"
#include "walkthrough.hpp"

namespace {

using fd::ui::Msg;
using fd::ui::tr;

int fail(int code, const std::string& message) {
  fmt::print(stderr, "{}", tr(Msg::err_prefix, message));
  return code;
}

// The text after the last ": " of a CLI11 message, or the whole message.
std::string tail(const std::string& what) {
  const auto k = what.rfind(": ");
  return k == std::string::npos ? what : what.substr(k + 2);
}

// CLI11's own messages, in the catalog's words where we know their shape.
std::string parse_message(const CLI::ParseError& e) {
  const std::string what = e.what(), name = e.get_name();
  auto words = [&](std::size_t a, std::size_t b) {
    std::vector<std::string> w;
    std::string cur;
    for (char c : what) {
      if (c == ' ') {
        if (!cur.empty()) w.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    if (!cur.empty()) w.push_back(cur);
    return std::pair<std::string, std::string>{w.size() > a ? w[a] : "", w.size() > b ? w[b] : ""};
  };
  if (name == "ExtrasError") return tr(Msg::err_unexpected, tail(what));
  if (name == "ExcludesError") {
    const auto [a, b] = words(0, 2);
    return tr(Msg::err_excludes, a, b);
  }
  if (name == "RequiresError") {
    const auto [a, b] = words(0, 2);
    return tr(Msg::err_requires, a, b);
  }
  if (name == "RequiredError" && what.rfind("--", 0) == 0)
    return tr(Msg::err_required, words(0, 0).first);
  if (name == "ArgumentMismatch") return tr(Msg::err_value_missing, what.substr(0, what.find(':')));
  return what;
}

void add_global_options(CLI::App& app, fd::ui::ColorMode& color, std::string& lang) {
  app.add_option("--lang", lang, tr(Msg::opt_lang))->check(CLI::IsMember({"en", "zh"}));
  fd::demos::add_choice<fd::ui::ColorMode>(&app, "--color", color,
                                           {{"auto", fd::ui::ColorMode::auto_},
                                            {"always", fd::ui::ColorMode::always},
                                            {"never", fd::ui::ColorMode::never}},
                                           tr(Msg::opt_color))
      ->default_str("auto");
  app.add_flag("--quiet,-q", fd::ui::settings().quiet, tr(Msg::opt_quiet));
  app.add_flag("--json", fd::ui::settings().json, tr(Msg::opt_json));
}

}  // namespace

namespace fd::demos {

int run(int argc, char** argv) {
  fd::ui::settings() = fd::ui::Settings{};  // a fresh start for every run, not only the first
  fd::ui::set_lang(fd::ui::detect_lang(argc, argv));
  CLI::App app{tr(Msg::app_help), "flashdemo"};
  app.set_version_flag("--version", std::string("flashdemo ") + FLASHDEMO_VERSION);
  app.require_subcommand(1);
  app.fallthrough();  // global options may follow the subcommand: flashdemo forward --lang zh
  app.footer(tr(Msg::app_footer));
  fd::ui::ColorMode color = fd::ui::ColorMode::auto_;
  std::string lang;
  add_global_options(app, color, lang);
  app.parse_complete_callback([&] { fd::ui::settings().color = fd::ui::color_wanted(color); });
  fd::demos::setup_softmax(app);
  fd::demos::setup_forward(app);
  fd::demos::setup_backward(app);
  fd::demos::setup_memory(app);
  fd::demos::setup_check(app);
  fd::demos::setup_walkthrough(app);
  fd::demos::setup_info(app);
  fd::demos::setup_bench(app);
  fd::demos::setup_completion(app);
  fd::demos::setup_manpage(app);
  std::string names;
  bool known = false;
  for (const CLI::App* sub : app.get_subcommands({})) {
    names += (names.empty() ? "" : ", ") + sub->get_name();
    known = known || (argc > 1 && sub->check_name(argv[1]));
  }
  if (argc < 2) return fail(fd::demos::kUsage, tr(Msg::err_missing_subcommand, names));
  if (argv[1][0] != '-' && !known)
    return fail(fd::demos::kUsage, tr(Msg::err_unknown_subcommand, argv[1], names));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::RequiredError& e) {
    if (std::string(e.what()).find("subcommand") != std::string::npos)
      return fail(fd::demos::kUsage, tr(Msg::err_missing_subcommand, names));
    return fail(fd::demos::kUsage, parse_message(e));
  } catch (const CLI::ParseError& e) {
    return fail(fd::demos::kUsage, parse_message(e));
  } catch (const fd::demos::Error& e) {
    return fail(e.code, e.what());
  } catch (const fd::NpyError& e) {
    return fail(fd::demos::kFile, e.what());
  } catch (const std::bad_alloc&) {
    return fail(fd::demos::kTooLarge, tr(Msg::err_out_of_memory));
  } catch (const std::exception& e) {  // a bug: still one line, never a stack trace
    return fail(fd::demos::kInternal, e.what());
  }
  return fd::demos::kOk;
}

}  // namespace fd::demos

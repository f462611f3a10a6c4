// app.cpp — the flashdemo command line: one subcommand per lecture demo, plus the classroom
// walkthrough, the lab's check, and the tools around them (main.cpp calls run; so does the
// command-line fuzzer, tests/fuzz/fuzz_cli.cpp, once per input).
//
// Errors the user can fix end as one line on stderr ("flashdemo: error: ...") and a non-zero
// exit code (README, "Exit codes"); --help and --version print and exit 0. The language is
// settled before the command line is built, so --help is translated too.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <new>
#include <string>

#include "app.hpp"
#include "backward.hpp"
#include "bench.hpp"
#include "check.hpp"
#include "cli_tools.hpp"
#include "common.hpp"
#include "flashdemo/file_io.hpp"
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
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {  // CLI11 lists them last first: reorder
    const std::string extras = tail(what);
    std::vector<std::string> w;
    std::string cur;
    for (char c : extras + " ")
      if (c == ' ') {
        if (!cur.empty()) w.insert(w.begin(), cur);
        cur.clear();
      } else {
        cur += c;
      }
    std::string ordered;
    for (const std::string& x : w) ordered += (ordered.empty() ? "" : " ") + x;
    return tr(Msg::err_unexpected, ordered);
  }
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
  if (name == "ArgumentMismatch" && what.find("received") != std::string::npos)
    return tr(Msg::err_given_twice, what.substr(0, what.find(':')));
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

// Standard output, held during the run, written at its end: a closed pipe ends quietly, any other
// failure to write is one line and exit 4.
int finish_stdout(int code) {
  const std::string why = fd::ui::flush_stdout();
  if (why.empty() || why == "closed pipe") return code;
  return fail(fd::demos::kFile, tr(Msg::err_stdout, why));
}

// A failed run prints its error line and nothing else; a failed check still shows its table.
int failed(int code, const std::string& message) {
  if (code == fd::demos::kCheckFailed) {
    const std::string why = fd::ui::flush_stdout();
    if (!why.empty() && why != "closed pipe")
      return fail(fd::demos::kFile, tr(Msg::err_stdout, why));
  }
  fd::ui::reset_stdout();
  return fail(code, message);
}

int parse_and_run(int argc, char** argv) {
  fd::ui::settings() = fd::ui::Settings{};  // a fresh start for every run, not only the first
  fd::ui::set_lang(fd::ui::detect_lang(argc, argv));
  CLI::App app{tr(Msg::app_help), "flashdemo"};
  app.set_version_flag("--version", std::string("flashdemo ") + FLASHDEMO_VERSION);
  app.require_subcommand(1);
  app.fallthrough();  // global options may follow the subcommand: flashdemo forward --lang zh
  app.footer(tr(Msg::app_footer));
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::Throw);  // --n 5 --n 6
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
  for (int k = 1; k < argc; ++k) {  // --values= would take the next argument as its value
    const std::string a = argv[k];
    if (a.size() > 3 && a.rfind("--", 0) == 0 && a.back() == '=')
      return fail(fd::demos::kUsage, tr(Msg::err_empty_value, a.substr(0, a.size() - 1)));
  }
  if (argv[1][0] != '-' && !known)
    return fail(fd::demos::kUsage, tr(Msg::err_unknown_subcommand, argv[1], names));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return finish_stdout(app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return finish_stdout(app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    return finish_stdout(app.exit(e));
  } catch (const CLI::RequiredError& e) {
    if (std::string(e.what()).find("subcommand") != std::string::npos)
      return failed(fd::demos::kUsage, tr(Msg::err_missing_subcommand, names));
    return failed(fd::demos::kUsage, parse_message(e));
  } catch (const CLI::ParseError& e) {
    return failed(fd::demos::kUsage, parse_message(e));
  } catch (const fd::demos::Interrupted&) {
    return finish_stdout(fd::demos::kInterrupted);
  } catch (const fd::demos::Error& e) {
    return failed(e.code, e.what());
  } catch (const fd::NpyError& e) {
    return failed(fd::demos::kFile, e.what());
  } catch (const fd::FileError& e) {
    return failed(fd::demos::kFile, e.what());
  } catch (const std::bad_alloc&) {
    return failed(fd::demos::kTooLarge, tr(Msg::err_out_of_memory));
  } catch (const std::exception& e) {  // a bug: still one line, never a stack trace
    return failed(fd::demos::kInternal, e.what());
  }
  return finish_stdout(fd::demos::kOk);
}

}  // namespace

namespace fd::demos {

int run(int argc, char** argv) {
  fd::ui::reset_stdout();
  std::signal(SIGXFSZ, SIG_IGN);  // past a file-size limit a write fails (EFBIG) and is reported
  return parse_and_run(argc, argv);
}

}  // namespace fd::demos

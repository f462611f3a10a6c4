// app.cpp — the flashdemo command line: one subcommand per lecture demo, plus the classroom
// walkthrough, the lab's check, and the tools around them (main.cpp calls run; so does the
// command-line fuzzer, tests/fuzz/fuzz_cli.cpp, once per input).
//
// Errors the user can fix end as one line on stderr ("flashdemo: error: ...") and a non-zero
// exit code (README, "Exit codes"), in the run's language: CLI11's messages and the library's
// file errors (ui::describe) are worded through the catalog. A misspelt option or subcommand is
// named with the nearest one ("did you mean --causal?"); --help and --version print and exit 0.
// The language is settled before the command line is built, so --help is translated too.
#include <fmt/core.h>

#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "app.hpp"
#include "backward.hpp"
#include "bench.hpp"
#include "check.hpp"
#include "cli_tools.hpp"
#include "common.hpp"
#include "decode.hpp"
#include "flashdemo/io/file_io.hpp"
#include "flashdemo/io/npy.hpp"
#include "forward.hpp"
#include "info.hpp"
#include "ladder.hpp"
#include "memory.hpp"
#include "ring.hpp"
#include "softmax.hpp"
#include "ui/file_errors.hpp"
#include "ui/format.hpp"
#include "ui/output.hpp"
#include "ui/pager.hpp"
#include "walkthrough.hpp"

namespace {

using fd::ui::Msg;
using fd::ui::tr;

// The error line (dropped when stderr cannot take it: the exit code stays) and the code.
int fail(int code, const std::string& message) {
  fd::ui::error(message);
  return code;
}

// Optimal string alignment distance: an insertion, a deletion, a substitution or a swap of two
// neighbours costs 1 ("causl" is 1 from "causal", "forwrad" 1 from "forward").
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The candidate `word` most likely meant: the nearest within a third of its length (one edit for
// 2 to 4 letters, two for 5 to 7, ...), or one it begins (3 letters at least); else empty (and
// for a word too long to be a name).
std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
  if (word.size() > 64) return "";
  const std::size_t limit = std::min<std::size_t>(3, (word.size() + 1) / 3);
  std::string best;
  std::size_t best_distance = std::string::npos;
  for (const std::string& c : candidates) {
    const std::size_t dist = edit_distance(word, c);
    const bool prefix = word.size() >= 3 && c.rfind(word, 0) == 0;
    if ((dist <= limit || prefix) && dist < best_distance) best = c, best_distance = dist;
  }
  return best;
}

// The option names of `app` without their dashes, long ones ("causal") or short ones ("q").
std::vector<std::string> option_names(const CLI::App& app, bool long_names) {
  std::vector<std::string> out;
  for (const CLI::Option* opt : app.get_options())
    for (const std::string& name : long_names ? opt->get_lnames() : opt->get_snames())
      out.push_back(name);
  return out;
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::App* sub : app.get_subcommands({})) out.push_back(sub->get_name());
  return out;
}

std::string joined_names(const CLI::App& app) {
  std::string names;
  for (const std::string& name : subcommand_names(app))
    names += (names.empty() ? "" : fd::ui::text(Msg::list_comma)) + name;
  return names;
}

std::string unknown_subcommand(const CLI::App& app, const std::string& word) {
  const std::string near = nearest(word, subcommand_names(app));
  if (near.empty()) return tr(Msg::err_unknown_subcommand, word, joined_names(app));
  return tr(Msg::err_unknown_subcommand_near, word, near, joined_names(app));
}

// The option `arg` ("--causl", "--causl=1", "-x", "causal") most likely meant, with its dashes,
// among those of the subcommand given (if any) and the global ones; else empty.
std::string meant_option(const CLI::App& app, const CLI::App* sub, const std::string& arg) {
  const std::size_t dashes = arg.rfind("--", 0) == 0 ? 2 : arg.rfind('-', 0) == 0 ? 1 : 0;
  const std::string word = arg.substr(dashes, arg.find('=') - dashes);
  std::vector<std::string> names = option_names(app, dashes != 1);
  if (sub) {
    const std::vector<std::string> own = option_names(*sub, dashes != 1);
    names.insert(names.begin(), own.begin(), own.end());
  }
  const std::string near = word.empty() ? "" : nearest(word, names);
  return near.empty() ? "" : (dashes == 1 ? "-" : "--") + near;
}

// Arguments no option or subcommand took, as one line: the first one's likely meaning when
// there is one ("did you mean --causal?", "did you mean forward?").
std::string unexpected(const CLI::App& app, const std::vector<std::string>& extras) {
  std::string all;
  for (const std::string& x : extras) all += (all.empty() ? "" : " ") + x;
  const std::vector<CLI::App*> parsed = app.get_subcommands();
  const CLI::App* sub = parsed.empty() ? nullptr : parsed.back();
  const std::string& first = extras.front();
  if (!sub && first[0] != '-') return unknown_subcommand(app, first);
  const std::string near = meant_option(app, sub, first);
  return near.empty() ? tr(Msg::err_unexpected, all) : tr(Msg::err_unexpected_near, all, near);
}

// The catalog's way of joining a list of choices ("en, zh"; "en、zh"), from CLI11's "{en,zh}"
// or "en,zh".
std::string spoken_choices(std::string choices) {
  std::string out;
  for (std::size_t k = 0; k <= choices.size();) {
    const std::size_t comma = std::min(choices.find(',', k), choices.size());
    std::string item = choices.substr(k, comma - k);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    out += (out.empty() ? "" : fd::ui::text(Msg::list_comma)) + item;
    k = comma + 1;
  }
  return out;
}

// CLI11's own messages, in the catalog's words: every shape the parse of flashdemo's options can
// throw (CLI11 2.x, CLI/Error.hpp). Only CLI11's "should not see this" errors (HorribleError,
// InvalidError: a bug in the options' setup, not the user's input) keep its English.
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
  const auto ends_with = [&](const std::string& tail) {
    return what.size() >= tail.size() &&
           what.compare(what.size() - tail.size(), tail.size(), tail) == 0;
  };
  if (name == "ExcludesError") {
    const auto [a, b] = words(0, 2);
    return tr(Msg::err_excludes, a, b);
  }
  if (name == "RequiresError") {
    const auto [a, b] = words(0, 2);
    return tr(Msg::err_requires, a, b);
  }
  if (name == "RequiredError" && ends_with(" is required"))  // an option, or a positional: shell
    return tr(Msg::err_required, what.substr(0, what.size() - 12));
  if (name == "ArgumentMismatch") {  // "--n: At Most 1 required but received 2", "--n: 1 required
                                     // INT missing", "Expected exactly 1 arguments to --n, got 0"
    std::string option = what.substr(0, what.find_first_of(": "));
    const auto to = what.find(" arguments to ");
    if (what.rfind("Expected ", 0) == 0 && to != std::string::npos)
      option = what.substr(to + 14, what.find(',', to) - to - 14);
    if (what.find("At Most") != std::string::npos) return tr(Msg::err_given_twice, option);
    return tr(Msg::err_value_missing, option);
  }
  // A flag given a value it does not take: "Could not convert: --causal = maybe", "The value
  // maybe is not an allowed value for --causal", "--causal: too many inputs for a flag", ...
  if (name == "ConversionError") {
    constexpr const char* kConvert = "Could not convert: ";
    const auto eq = what.find(" = ");
    if (what.rfind(kConvert, 0) == 0 && eq != std::string::npos)
      return tr(Msg::err_cannot_take, what.substr(19, eq - 19), what.substr(eq + 3));
    const auto is_not = what.find(" is not an allowed value for ");
    if (what.rfind("The value ", 0) == 0 && is_not != std::string::npos)
      return tr(Msg::err_cannot_take, what.substr(is_not + 29), what.substr(10, is_not - 10));
    return tr(Msg::err_flag_value, what.substr(0, what.find_first_of(": ")));
  }
  const auto colon = what.find(": ");
  if (name == "ValidationError" && colon != std::string::npos) {
    // CLI::IsMember's "--lang: xx not in {en,zh}", in the words of the other choices
    const auto not_in = what.rfind(" not in {");
    if (not_in != std::string::npos && not_in >= colon + 1 && what.back() == '}')
      return tr(Msg::err_option_value, what.substr(0, colon),
                tr(Msg::err_choice, what.substr(colon + 2, not_in - colon - 2),
                   spoken_choices(what.substr(not_in + 9, what.size() - not_in - 10))));
    return tr(Msg::err_option_value, what.substr(0, colon), what.substr(colon + 2));  // ours
  }
  return what;
}

// A usage error's one line. Arguments that nothing took come first (a misspelt option is often
// why a required one seems missing), then a missing subcommand, then CLI11's own message.
std::string usage_message(const CLI::App& app, const CLI::ParseError& e) {
  const std::vector<std::string> extras = app.remaining(true);
  if (!extras.empty()) return unexpected(app, extras);
  if (e.get_name() == "RequiredError" &&
      std::string(e.what()).find("subcommand") != std::string::npos)
    return tr(Msg::err_missing_subcommand, joined_names(app));
  return parse_message(e);
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
// The files the run committed stay only once its standard output is written too. On a terminal,
// the output of a subcommand that asks for pages is shown a page at a time (ui/pager.hpp); its
// files stay once the first page is shown, and Ctrl-C at a pause exits 130, as in the walkthrough.
int finish_stdout(int code) {
  const fd::ui::Paged paged = fd::ui::page_held([] { fd::settle_outputs(true); });
  const std::string why = fd::ui::flush_stdout();
  const bool written = why.empty() || why == "closed pipe";
  fd::settle_outputs(written);
  if (!written) return fail(fd::demos::kFile, tr(Msg::err_stdout, why));
  return paged == fd::ui::Paged::interrupted ? fd::demos::kInterrupted : code;
}

// A failed run prints its error line and nothing else, and replaces no file; a failed check still
// shows its table.
int failed(int code, const std::string& message) {
  if (code == fd::demos::kCheckFailed) {
    const std::string why = fd::ui::flush_stdout();
    if (!why.empty() && why != "closed pipe") {
      fd::settle_outputs(false);
      return fail(fd::demos::kFile, tr(Msg::err_stdout, why));
    }
  }
  fd::settle_outputs(code == fd::demos::kCheckFailed);
  fd::ui::reset_stdout();
  return fail(code, message);
}

// Under mpirun every rank parses the same command line: rank 0 alone says what is wrong with it,
// and the other ranks leave quietly with 0, as ring's refusals do (a rank that left first with
// the code could let mpirun end the job before rank 0's line was written).
bool other_mpi_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK"})
    if (const char* rank = std::getenv(name)) return std::atoll(rank) > 0;
  return false;
}

int usage_error(const std::string& message) {
  if (!other_mpi_rank()) return failed(fd::demos::kUsage, message);
  fd::settle_outputs(false);
  fd::ui::reset_stdout();
  return fd::demos::kOk;
}

// --help within 100 columns: a subcommand's description wrapped at 100, option descriptions at
// the 70 columns right of CLI11's 30-column name field (CLI11 indents each line after a newline
// to that field itself).
class WrappingFormatter : public CLI::Formatter {
 public:
  std::string make_option_desc(const CLI::Option* opt) const override {
    return wrapped(CLI::Formatter::make_option_desc(opt));
  }
  std::string make_subcommand(const CLI::App* sub) const override {  // the list in --help
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true), wrapped(sub->get_description()),
                             get_column_width());
    return out.str();
  }
  std::string make_description(const CLI::App* app) const override {  // the line under Usage
    const std::string text = CLI::Formatter::make_description(app);
    std::string out, line;
    for (char c : text) {
      if (c != '\n') {
        line += c;
        continue;
      }
      out += line.empty() ? "\n" : fd::ui::wrap(line, 100, "", "");
      line.clear();
    }
    return out + line;
  }

 private:
  static constexpr std::size_t kWidth = 100 - 30;
  static std::string wrapped(const std::string& description) {
    std::string text = fd::ui::wrap(description, kWidth, "", "");
    if (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  }
};

// The formatter of every --help, its labels in the current language ("Usage", "Needs", ...; the
// placeholders OPTIONS, SUBCOMMAND, TEXT, INT stay, as FILE and ROW do).
std::shared_ptr<CLI::Formatter> help_formatter() {
  auto formatter = std::make_shared<WrappingFormatter>();
  formatter->label("Usage", tr(Msg::help_usage));
  formatter->label("Positionals", tr(Msg::help_positionals));
  formatter->label("REQUIRED", tr(Msg::help_required));
  formatter->label("Needs", tr(Msg::help_needs));
  formatter->label("Excludes", tr(Msg::help_excludes));
  return formatter;
}

int parse_and_run(int argc, char** argv) {
  fd::ui::settings() = fd::ui::Settings{};  // a fresh start for every run, not only the first
  fd::ui::set_lang(fd::ui::detect_lang(argc, argv));
  CLI::App app{tr(Msg::app_help), "flashdemo"};
  app.formatter(help_formatter());                      // the subcommands inherit it
  app.option_defaults()->group(tr(Msg::help_options));  // CLI11's words of --help, translated
  app.group(tr(Msg::help_subcommands));                 // (the subcommands inherit both)
  app.set_help_flag("-h,--help", tr(Msg::help_help));
  app.set_version_flag("--version", std::string("flashdemo ") + FLASHDEMO_VERSION,
                       tr(Msg::help_version));
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
  fd::demos::setup_ladder(app);
  fd::demos::setup_decode(app);
  fd::demos::setup_ring(app);
  fd::demos::setup_completion(app);
  fd::demos::setup_manpage(app);
  for (CLI::App* sub : app.get_subcommands({}))  // its -h came before the group was inherited
    if (CLI::Option* help = sub->get_help_ptr()) help->group(tr(Msg::help_options));
  // Longer than a projector's 30 rows as they stand (memory 77 lines, backward 40): on a
  // terminal, a page at a time; piped or redirected, the same text whole.
  for (const char* name : {"memory", "backward"})
    app.get_subcommand(name)->parse_complete_callback([] { fd::ui::settings().paged = true; });
  if (argc < 2) return usage_error(tr(Msg::err_missing_subcommand, joined_names(app)));
  for (int k = 1; k < argc; ++k) {  // --values= would take the next argument as its value
    const std::string a = argv[k];
    if (a.size() > 3 && a.rfind("--", 0) == 0 && a.back() == '=')
      return usage_error(tr(Msg::err_empty_value, a.substr(0, a.size() - 1)));
  }
  bool known = false;
  for (const CLI::App* sub : app.get_subcommands({})) known = known || sub->check_name(argv[1]);
  if (argv[1][0] != '-' && !known) return usage_error(unknown_subcommand(app, argv[1]));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return finish_stdout(app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return finish_stdout(app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    return finish_stdout(app.exit(e));
  } catch (const CLI::ParseError& e) {
    return usage_error(usage_message(app, e));
  } catch (const fd::demos::Interrupted&) {
    return finish_stdout(fd::demos::kInterrupted);
  } catch (const fd::demos::Error& e) {
    return failed(e.code, e.what());
  } catch (const fd::NpyTooLarge& e) {
    return failed(fd::demos::kTooLarge, fd::ui::describe(e));
  } catch (const fd::NpyError& e) {
    return failed(fd::demos::kFile, fd::ui::describe(e));
  } catch (const fd::FileError& e) {
    return failed(fd::demos::kFile, fd::ui::describe(e));
  } catch (const std::bad_alloc&) {
    return failed(fd::demos::kTooLarge, tr(Msg::err_out_of_memory,
                                           fd::demos::format_bytes(fd::demos::memory_available())));
  } catch (const std::system_error& e) {  // a thread that could not start, past the checks
    if (e.code() != std::errc::resource_unavailable_try_again)
      return failed(fd::demos::kInternal, e.what());
    return failed(fd::demos::kTooLarge,
                  tr(Msg::err_thread_start, fd::ui::errno_text(EAGAIN), fd::demos::thread_limit()));
  } catch (const std::exception& e) {  // a bug: still one line, never a stack trace
    return failed(fd::demos::kInternal, e.what());
  }
  return finish_stdout(fd::demos::kOk);
}

// A standard descriptor the caller closed (2>&-) is opened on /dev/null the wrong way round: no
// file the run opens takes its number (an error line would land in an output file), and a write
// to it still fails (EBADF) as it would have: stdout's failure is reported, stderr's dropped.
void reserve_standard_fds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int got = ::open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
    if (got >= 0 && got != fd) ::dup2(got, fd), ::close(got);
  }
}

// Room for the way out of a run that runs out of memory: set aside before the run, given back
// by the first allocation that fails (which still throws std::bad_alloc, and the run ends with
// exit 3), so that what runs while the exception unwinds finds memory: destructors that allocate
// (nlohmann::json's takes a stack to free a value), the error line. Without it such a destructor
// would throw, and a throwing destructor aborts.
constexpr std::size_t kReserve = std::size_t(32) << 20;
char* g_reserve = nullptr;

void give_back_reserve() {
  if (g_reserve == nullptr) throw std::bad_alloc();
  std::free(g_reserve);
  g_reserve = nullptr;
  throw std::bad_alloc();
}

void set_reserve_aside() {
  if (g_reserve == nullptr) g_reserve = static_cast<char*>(std::malloc(kReserve));
  std::set_new_handler(give_back_reserve);
}

// What escaped every handler of parse_and_run (one ran out of memory itself, or a bug threw
// something else): still one line and a documented code, every output undone.
int escaped(int code) {
  fd::settle_outputs(false);
  fd::ui::reset_stdout();
  try {
    fd::ui::error(
        code == fd::demos::kTooLarge
            ? tr(Msg::err_out_of_memory, fd::demos::format_bytes(fd::demos::memory_available()))
            : tr(Msg::err_unknown));
  } catch (...) {
    fd::ui::error("out of memory");
  }
  return code;
}

}  // namespace

namespace fd::demos {

int run(int argc, char** argv) {
  reserve_standard_fds();
  fd::ui::reset_stdout();
  std::signal(SIGXFSZ, SIG_IGN);  // past a file-size limit a write fails (EFBIG) and is reported
  std::signal(SIGPIPE, SIG_IGN);  // a reader gone is EPIPE: stdout's ends quietly, stderr's dropped
  set_reserve_aside();
  try {
    return parse_and_run(argc, argv);
  } catch (const std::bad_alloc&) {
    return escaped(kTooLarge);
  } catch (...) {
    return escaped(kInternal);
  }
}

}  // namespace fd::demos

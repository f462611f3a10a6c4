// cli_tools.cpp — shell completion scripts and the man page, from the CLI definition: the
// subcommands, their options, and what each option takes (its choices, its kind of file, a value).
#include "cli_tools.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "common.hpp"
#include "recording.hpp"
#include "ui/output.hpp"

namespace fd::demos {
namespace {

using ui::Msg;

struct OptionInfo {
  std::string name;   // --long, -s when it has no long name, or a positional's name
  std::string alias;  // -s beside a long name ("-q" of --quiet), or empty
  std::string help;
  std::string value;                    // what it takes (INT, FILE, a|b|c); empty for a flag
  std::vector<std::string> choices;     // from a validator named "{a, b, c}"
  std::vector<std::string> extensions;  // of the files it takes ("npy"); empty: takes no file
  bool flag = false;                    // takes no value
  bool positional = false;              // no dashes: `flashdemo completion bash`
  bool file() const { return !extensions.empty(); }
};

struct CommandInfo {
  std::string name, help, footer;
  std::vector<OptionInfo> options;
};

std::vector<std::string> choices_of(const std::string& type_name) {
  std::vector<std::string> out;
  const auto b = type_name.find('{'), e = type_name.find('}');
  if (b == std::string::npos || e == std::string::npos) return out;
  std::string item;
  for (char c : type_name.substr(b + 1, e - b - 1)) {
    if (c == ',') {
      out.push_back(item);
      item.clear();
    } else if (c != ' ') {
      item += c;
    }
  }
  if (!item.empty()) out.push_back(item);
  return out;
}

std::string joined(const std::vector<std::string>& items, const std::string& sep) {
  std::string s;
  for (const std::string& x : items) s += (s.empty() ? "" : sep) + x;
  return s;
}

// What an option takes, as a word for the man page: its choices, FILE, or its type (INT, ...).
std::string value_word(const OptionInfo& info, const std::string& type_name) {
  if (info.flag) return "";
  if (!info.choices.empty()) return joined(info.choices, "|");
  if (info.file()) return "FILE";
  return type_name.substr(0, type_name.find(':'));
}

OptionInfo option_info(CLI::Option* opt) {
  OptionInfo info;
  const std::string type = opt->get_type_name();
  const auto& longs = opt->get_lnames();
  const auto& shorts = opt->get_snames();
  info.positional = longs.empty() && shorts.empty();
  info.name = !longs.empty()    ? "--" + longs[0]
              : !shorts.empty() ? "-" + shorts[0]
                                : opt->get_name();
  if (!longs.empty() && !shorts.empty()) info.alias = "-" + shorts[0];
  info.help = opt->get_description();
  info.choices = choices_of(type);
  info.extensions = file_extensions(opt);
  info.flag = opt->get_items_expected_max() == 0;
  info.value = value_word(info, type);
  return info;
}

std::vector<OptionInfo> options_of(CLI::App* app) {
  std::vector<OptionInfo> out;
  for (CLI::Option* opt : app->get_options()) out.push_back(option_info(opt));
  return out;
}

// The app first (its options are the global ones), then every subcommand.
std::vector<CommandInfo> commands_of(CLI::App& app) {
  std::vector<CommandInfo> out{{"", app.get_description(), app.get_footer(), options_of(&app)}};
  for (CLI::App* sub : app.get_subcommands({}))
    out.push_back({sub->get_name(), sub->get_description(), sub->get_footer(), options_of(sub)});
  return out;
}

// The words offered after subcommand k (k = 0: before any): its options, then the global ones it
// does not share, and its positional's choices; before any subcommand, the subcommands first.
std::string words_of(const std::vector<CommandInfo>& cmds, std::size_t k) {
  std::vector<std::string> words;
  auto add = [&words](const std::string& w) {
    if (std::find(words.begin(), words.end(), w) == words.end()) words.push_back(w);
  };
  for (std::size_t s = 1; k == 0 && s < cmds.size(); ++s) add(cmds[s].name);
  for (std::size_t c : {k, std::size_t(0)})
    for (const OptionInfo& o : cmds[c].options)
      for (const std::string& w : o.positional ? o.choices : std::vector<std::string>{o.name})
        add(w);
  return joined(words, " ");
}

// The bash case for the word after option `o`: its choices, its files, or nothing to offer.
std::string bash_value_case(const std::string& pattern, const OptionInfo& o) {
  if (!o.choices.empty())
    return fmt::format("    {}) COMPREPLY=($(compgen -W \"{}\" -- \"$cur\")); return ;;\n", pattern,
                       joined(o.choices, " "));
  if (o.file())
    return fmt::format("    {}) _flashdemo_files {}; return ;;\n", pattern,
                       joined(o.extensions, " "));
  return fmt::format("    {}) COMPREPLY=(); return ;;\n", pattern);  // a number, a list, ...
}

std::string bash_value_cases(const std::vector<CommandInfo>& cmds) {
  std::string cases;
  for (std::size_t k = 0; k < cmds.size(); ++k)
    for (const OptionInfo& o : cmds[k].options)
      if (!o.flag && !o.positional)
        cases += bash_value_case((k == 0 ? "*" : cmds[k].name) + ":" + o.name, o);
  return cases;
}

std::string bash_word_cases(const std::vector<CommandInfo>& cmds) {
  std::string cases;
  for (std::size_t k = 0; k < cmds.size(); ++k)
    cases +=
        fmt::format("    {}) opts=\"{}\" ;;\n", k == 0 ? "\"\"" : cmds[k].name, words_of(cmds, k));
  return cases;
}

// The subcommand is the first word that names one; the word before the cursor, when an option
// that takes a value, says what to offer (a value after "--opt=" too).
std::string bash_script(const std::vector<CommandInfo>& cmds) {
  std::vector<std::string> subs;
  for (std::size_t k = 1; k < cmds.size(); ++k) subs.push_back(cmds[k].name);
  return fmt::format(R"(# bash completion for flashdemo (generated by `flashdemo completion bash`)
# Directories, and the files that end in one of the extensions given.
_flashdemo_files() {{
  local f e
  compopt -o filenames 2>/dev/null
  COMPREPLY=()
  while IFS= read -r f; do COMPREPLY+=("$f"); done < <(compgen -d -- "$cur")
  for e in "$@"; do
    while IFS= read -r f; do
      [[ -d "$f" ]] || COMPREPLY+=("$f")
    done < <(compgen -f -X "!*.$e" -- "$cur")
  done
}}
_flashdemo() {{
  local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}"
  if [[ "$cur" == "=" ]]; then
    cur=""
  elif [[ "$prev" == "=" && COMP_CWORD -ge 2 ]]; then
    prev="${{COMP_WORDS[COMP_CWORD-2]}}"
  fi
  local subs="{}" sub="" w
  for w in "${{COMP_WORDS[@]:1:COMP_CWORD-1}}"; do
    case " $subs " in *" $w "*) sub="$w"; break ;; esac
  done
  case "$sub:$prev" in
{}  esac
  local opts
  case "$sub" in
{}  esac
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}}
complete -F _flashdemo flashdemo
)",
                     joined(subs, " "), bash_value_cases(cmds), bash_word_cases(cmds));
}

// Text for a zsh _arguments description ("[...]") or a _describe item: brackets and colons
// escaped with a backslash, a single quote closing and reopening the quotes around it.
std::string zsh_safe(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else if (c == '[' || c == ']' || c == ':' || c == '\\')
      out += std::string("\\") + c;
    else
      out += c;
  }
  return out;
}

// What zsh offers after option `o`: its choices, its files (and directories), or any value.
std::string zsh_action(const OptionInfo& o) {
  if (o.flag) return "";
  if (!o.choices.empty()) return ":value:(" + joined(o.choices, " ") + ")";
  if (o.file() && o.extensions.size() == 1) return ":file:_files -g \"*." + o.extensions[0] + "\"";
  if (o.file()) return ":file:_files -g \"*.(" + joined(o.extensions, "|") + ")\"";
  return ":value: ";
}

// One _arguments spec per name of every option of `opts` (a positional: "1:shell:(bash zsh)"),
// each after `sep`.
std::string zsh_specs(const std::vector<OptionInfo>& opts, const std::string& sep) {
  std::string specs;
  for (const OptionInfo& o : opts) {
    if (o.positional) {
      specs += fmt::format("{}'1:{}:({})'", sep, o.name, joined(o.choices, " "));
      continue;
    }
    for (const std::string& name : {o.alias, o.name})
      if (!name.empty())
        specs += fmt::format("{}'{}[{}]{}'", sep, name, zsh_safe(o.help), zsh_action(o));
  }
  return specs;
}

// The global options, then per subcommand its own (those it shares with the app left to the
// globals): _arguments' state "args" is the words after the subcommand.
std::string zsh_script(const std::vector<CommandInfo>& cmds) {
  std::string subs, cases;
  for (std::size_t k = 1; k < cmds.size(); ++k) {
    subs += fmt::format("    '{}:{}'\n", cmds[k].name, zsh_safe(cmds[k].help));
    std::vector<OptionInfo> own;
    for (const OptionInfo& o : cmds[k].options)
      if (std::none_of(cmds[0].options.begin(), cmds[0].options.end(),
                       [&o](const OptionInfo& g) { return g.name == o.name; }))
        own.push_back(o);
    cases += fmt::format("        {}) _arguments $globals{} ;;\n", cmds[k].name,
                         zsh_specs(own, " \\\n            "));
  }
  return fmt::format(R"(#compdef flashdemo
# zsh completion for flashdemo (generated by `flashdemo completion zsh`)
_flashdemo() {{
  local curcontext="$curcontext" state line
  local -a subcommands globals
  subcommands=(
{}  )
  globals=({}
  )
  _arguments -C $globals '1:subcommand:->subcommand' '*::arg:->args'
  case $state in
    subcommand) _describe 'subcommand' subcommands ;;
    args)
      case $words[1] in
{}      esac ;;
  esac
}}
_flashdemo "$@"
)",
                     subs, zsh_specs(cmds[0].options, "\n    "), cases);
}

// roff-escaped text: backslashes, dashes, and a dot or quote that starts a line.
std::string roff(const std::string& s) {
  std::string out;
  bool line_start = true;
  for (char c : s) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else
      out += c;
    line_start = c == '\n';
  }
  return out;
}

// The tag of an option's .TP entry: "\fB\-q\fR, \fB\-\-quiet\fR", "\fB\-\-n\fR \fIINT\fR",
// "\fIshell\fR bash|zsh" for a positional.
std::string man_tag(const OptionInfo& o) {
  if (o.positional) return fmt::format("\\fI{}\\fR {}", roff(o.name), roff(o.value));
  std::string tag = o.alias.empty() ? "" : fmt::format("\\fB{}\\fR, ", roff(o.alias));
  tag += fmt::format("\\fB{}\\fR", roff(o.name));
  if (!o.value.empty()) tag += fmt::format(" \\fI{}\\fR", roff(o.value));
  return tag;
}

std::string man_options(const std::vector<OptionInfo>& opts) {
  std::string s;
  for (const OptionInfo& o : opts) s += fmt::format(".TP\n{}\n{}\n", man_tag(o), roff(o.help));
  return s;
}

std::string man_header() {
  return fmt::format(
      ".TH FLASHDEMO 1 \"\" \"flashdemo {}\" \"User Commands\"\n.SH NAME\nflashdemo \\- {}\n"
      ".SH SYNOPSIS\n.B flashdemo\n[\\fIGLOBAL OPTIONS\\fR] \\fISUBCOMMAND\\fR [\\fIOPTIONS\\fR]\n"
      ".SH DESCRIPTION\n"
      "flashdemo teaches FlashAttention from a terminal: one subcommand per demo of lecture 5 "
      "(05_flash_attention.py), each printing real numbers and step\\-by\\-step traces of the tile "
      "updates.\n",
      FLASHDEMO_VERSION, roff(ui::tr(Msg::manpage_name)));
}

std::string man_footer() {
  return ".SH EXIT STATUS\n.TP\n0\nsuccess\n.TP\n1\ncheck: an array failed its grade\n.TP\n2\n"
         "bad usage (the message names the option)\n.TP\n3\nthe run would not fit in the memory "
         "available, or could not start its threads\n"
         ".TP\n4\nan input file is missing or malformed, or an output cannot be written\n"
         ".TP\n5\n\\-\\-device cuda without CUDA in the build or without a GPU\n"
         ".TP\n130\nwalkthrough: left with Ctrl-C at a pause\n"
         ".TP\n70\na bug in flashdemo (one line, never a stack trace): please report it\n"
         ".SH ENVIRONMENT\n.TP\n.B LANG, LC_ALL, LC_MESSAGES\nzh* selects Chinese output\n.TP\n"
         ".B NO_COLOR\nwhen set and not empty, no colour\n.SH SEE ALSO\nThe tutorials in docs/ of "
         "the source tree.\n";
}

std::string man_page(CLI::App& app) {
  const std::vector<CommandInfo> cmds = commands_of(app);
  std::string page = man_header() + ".SH GLOBAL OPTIONS\n" + man_options(cmds[0].options);
  page += ".SH SUBCOMMANDS\n";
  for (std::size_t k = 1; k < cmds.size(); ++k) {
    page += fmt::format(".SS {}\n{}\n", cmds[k].name, roff(cmds[k].help));
    page += man_options(cmds[k].options);
    if (!cmds[k].footer.empty()) page += ".PP\n.nf\n" + roff(cmds[k].footer) + "\n.fi\n";
  }
  return page + man_footer();
}

}  // namespace

void setup_completion(CLI::App& app) {
  auto shell = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand("completion", ui::tr(Msg::completion_help));
  add_choice<std::string>(sub, "shell", *shell, {{"bash", "bash"}, {"zsh", "zsh"}},
                          ui::tr(Msg::completion_opt_shell))
      ->required();
  sub->footer(ui::tr(Msg::completion_examples));
  sub->callback([&app, shell] {
    const std::vector<CommandInfo> cmds = commands_of(app);
    ui::out() << (*shell == "zsh" ? zsh_script(cmds) : bash_script(cmds));
  });
}

void setup_manpage(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("manpage", ui::tr(Msg::manpage_help));
  sub->footer(ui::tr(Msg::manpage_examples));
  sub->callback([&app] { ui::out() << man_page(app); });
}

}  // namespace fd::demos

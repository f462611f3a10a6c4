// recording.cpp — JSON Lines to stdout or a file, the HTML replay, and the run's files checked and
// written, their errors in the user's words (see recording.hpp).
#include "recording.hpp"

#include <fmt/core.h>

#include <cstdio>
#include <sstream>

#include "common.hpp"
#include "ui/file_errors.hpp"
#include "ui/html_replay.hpp"
#include "ui/output.hpp"

namespace fd::demos {

namespace {
// A file option's validator is named this, then its extensions (the name is never shown).
const std::string kFileValidator = "file:";
}  // namespace

CLI::Option* add_file(CLI::App* sub, const std::string& name, std::string& path,
                      const std::string& help, const std::string& extensions) {
  return sub->add_option(name, path, help)
      ->check(CLI::Validator(
          [](const std::string& s) {
            return s.empty() ? ui::tr(ui::Msg::err_empty_file) : std::string();
          },
          "FILE", kFileValidator + extensions));
}

std::vector<std::string> file_extensions(CLI::Option* opt) {
  for (int k = 0;; ++k) {
    const CLI::Validator* v = nullptr;
    try {
      v = opt->get_validator(k);
    } catch (const CLI::OptionNotFound&) {  // past the last validator
      return {};
    }
    if (v->get_name().rfind(kFileValidator, 0) != 0) continue;
    std::vector<std::string> out;
    std::istringstream words(v->get_name().substr(kFileValidator.size()));
    for (std::string w; words >> w;) out.push_back(w);
    return out;
  }
}

double recorded_bytes(const TraceFiles& files, double events, double numbers) {
  const double text = events * 160 + numbers * 16;
  const double html = files.html_file.empty() ? 0 : 4 * text + events * 64;  // + each string's
  return (ui::settings().json ? 3 * text : 0) + (files.json_file.empty() ? 0 : 3 * text) + html;
}

void add_trace_files(CLI::App* sub, TraceFiles& files) {
  add_file(sub, "--trace-json", files.json_file, ui::tr(ui::Msg::opt_trace_json), "jsonl json");
  add_file(sub, "--html", files.html_file, ui::tr(ui::Msg::opt_html), "html");
}

void RunFiles::input(const std::string& option, const std::string& path) {
  if (!path.empty()) inputs_.push_back({option, path});
}

void RunFiles::output(const std::string& option, const std::string& path) {
  outputs_.add(option, path);
}

void RunFiles::outputs(const TraceFiles& files) {
  output("--trace-json", files.json_file);
  output("--html", files.html_file);
}

void RunFiles::check() const {
  try {
    outputs_.check(inputs_);
  } catch (const FileClash& e) {
    throw Error(kUsage, ui::describe(e));
  } catch (const FileError& e) {
    throw Error(kFile, ui::describe(e));
  }
}

void RunFiles::stage(const std::string& path, const std::string& bytes) {
  if (path.empty()) return;
  try {
    outputs_.stage(path, bytes);
  } catch (const FileError& e) {
    throw Error(kFile, ui::describe(e));
  }
}

void RunFiles::commit() {
  try {
    outputs_.commit();
  } catch (const FileError& e) {
    throw Error(kFile, ui::describe(e));
  }
}

Recording::Recording(const TraceFiles& files, std::string title)
    : files_(files), title_(std::move(title)) {
  if (ui::settings().json)
    tee_.add((stdout_json_ = std::make_unique<ui::JsonTrace>(ui::out())).get());
  if (!files.json_file.empty())
    tee_.add((file_json_ = std::make_unique<ui::JsonTrace>(file_buffer_)).get());
  if (!files.html_file.empty())
    tee_.add((html_json_ = std::make_unique<ui::JsonTrace>()).get());  // values, for the page
}

Recording::~Recording() = default;

void Recording::emit(const nlohmann::json& object) {
  for (ui::JsonTrace* j : {stdout_json_.get(), file_json_.get(), html_json_.get()})
    if (j) j->emit(object);
}

void Recording::finish(RunFiles& files) {
  if (file_json_) files.stage(files_.json_file, file_buffer_.str());
  if (html_json_)
    files.stage(files_.html_file, ui::html_replay(title_, html_json_->written(), ui::lang()));
}

}  // namespace fd::demos

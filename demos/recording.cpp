// recording.cpp — JSON Lines to stdout or a file, and the HTML replay (see recording.hpp).
#include "recording.hpp"

#include <fmt/core.h>

#include <cstdio>
#include <iostream>

#include "common.hpp"
#include "flashdemo/file_io.hpp"
#include "ui/html_replay.hpp"
#include "ui/output.hpp"

namespace fd::demos {
namespace {

void write_atomically(const std::string& path, const std::string& text) {
  try {
    write_file_atomically(path, text);
  } catch (const FileError&) {
    throw Error(kFile, ui::tr(ui::Msg::err_cannot_write, path));
  }
}

}  // namespace

void add_trace_files(CLI::App* sub, TraceFiles& files) {
  sub->add_option("--trace-json", files.json_file, ui::tr(ui::Msg::opt_trace_json));
  sub->add_option("--html", files.html_file, ui::tr(ui::Msg::opt_html));
}

Recording::Recording(const TraceFiles& files, std::string title)
    : files_(files), title_(std::move(title)) {
  for (const std::string& path : {files.json_file, files.html_file}) {
    if (!path.empty() && !can_write(path))
      throw Error(kFile, ui::tr(ui::Msg::err_cannot_write, path));
  }
  if (ui::settings().json)
    tee_.add((stdout_json_ = std::make_unique<ui::JsonTrace>(std::cout)).get());
  if (!files.json_file.empty())
    tee_.add((file_json_ = std::make_unique<ui::JsonTrace>(file_buffer_)).get());
  if (!files.html_file.empty())
    tee_.add((html_json_ = std::make_unique<ui::JsonTrace>(html_buffer_)).get());
}

Recording::~Recording() = default;

void Recording::emit(const nlohmann::json& object) {
  for (ui::JsonTrace* j : {stdout_json_.get(), file_json_.get(), html_json_.get()})
    if (j) j->emit(object);
}

void Recording::finish() {
  std::cout.flush();
  if (file_json_) write_atomically(files_.json_file, file_buffer_.str());
  if (html_json_) {
    try {
      ui::write_html_replay(files_.html_file, title_, html_json_->written());
    } catch (const std::runtime_error& e) {
      throw Error(kFile, e.what());
    }
  }
}

}  // namespace fd::demos

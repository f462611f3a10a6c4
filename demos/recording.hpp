// recording.hpp — where a run's events go besides the terminal: JSON Lines on stdout (--json),
// a JSON Lines file (--trace-json FILE), an HTML page that replays them (--html FILE).
#pragma once

#include <CLI/CLI.hpp>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "ui/json_trace.hpp"

namespace fd::demos {

struct TraceFiles {
  std::string json_file;  // --trace-json
  std::string html_file;  // --html
};

// --trace-json FILE and --html FILE on a subcommand.
void add_trace_files(CLI::App* sub, TraceFiles& files);

class Recording {
 public:
  Recording(const TraceFiles& files, std::string title);
  ~Recording();

  // The terminal's text sink, when the trace level asks for one.
  void add_text(TraceSink* text) { tee_.add(text); }
  // Every listener at once; nullptr when nobody listens, so tracing costs nothing.
  TraceSink* sink() { return tee_.empty() ? nullptr : &tee_; }
  // A problem or result object, to every JSON destination.
  void emit(const nlohmann::json& object);
  // Writes the trace file and the HTML page (each to a temporary name, then renamed).
  void finish();

 private:
  TraceFiles files_;
  std::string title_;
  std::unique_ptr<ui::JsonTrace> stdout_json_, file_json_, html_json_;
  std::ostringstream file_buffer_, html_buffer_;
  ui::TeeTrace tee_;
};

}  // namespace fd::demos

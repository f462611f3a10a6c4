// recording.hpp — where a run's results go besides the terminal: JSON Lines on stdout (--json),
// a JSON Lines file (--trace-json FILE), an HTML page that replays them (--html FILE), and the
// run's files as a whole (RunFiles): every input and output named before any work, the outputs
// checked against the inputs and each other, written together at the end or not at all.
#pragma once

#include <CLI/CLI.hpp>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "flashdemo/io/file_io.hpp"
#include "ui/json_trace.hpp"

namespace fd::demos {

struct TraceFiles {
  std::string json_file;  // --trace-json
  std::string html_file;  // --html
};

// --trace-json FILE and --html FILE on a subcommand.
void add_trace_files(CLI::App* sub, TraceFiles& files);

// The memory a run's Recording holds for `events` objects of `numbers` numbers in all, in bytes
// (measured: about 160 bytes an object and 16 a number as JSON text): the text held for stdout
// (--json) and for a file (--trace-json), three times over each (a buffer grown by doubling,
// then copied out); for the HTML page (--html) the objects' texts, joined, escaped and set in
// the page. The memory guard counts it (ensure_fits).
double recorded_bytes(const TraceFiles& files, double events, double numbers);

// A file option that refuses an empty name ("--q needs a file name"), its value in `path`.
// `extensions`: what its files end in, space-separated ("npy", "jsonl json"), for completion.
CLI::Option* add_file(CLI::App* sub, const std::string& name, std::string& path,
                      const std::string& help, const std::string& extensions = "npy");

// The extensions add_file gave `opt` ({"npy"}, ...); empty for an option that takes no file.
std::vector<std::string> file_extensions(CLI::Option* opt);

// The files of one run. input()/output() name them; check() refuses, before any work, an output
// that is an input or another output (exit 2) or that cannot be written (exit 4, with the
// reason); stage() hands over an output's bytes; commit() puts every staged output in place. A
// run that throws before commit() replaces no file and leaves no temporary.
class RunFiles {
 public:
  void input(const std::string& option, const std::string& path);
  void output(const std::string& option, const std::string& path);
  void outputs(const TraceFiles& files);  // --trace-json, --html
  void check() const;
  void stage(const std::string& path, const std::string& bytes);  // path "": nothing to do
  void commit();

 private:
  std::vector<NamedFile> inputs_;
  OutputFiles outputs_;
};

class Recording {
 public:
  // title: the HTML page's title, the subcommand's heading in the run's language.
  Recording(const TraceFiles& files, std::string title);
  ~Recording();

  // The terminal's text sink, when the trace level asks for one.
  void add_text(TraceSink* text) { tee_.add(text); }
  void remove_text(TraceSink* text) { tee_.remove(text); }
  // Every listener at once; nullptr when nobody listens, so tracing costs nothing.
  TraceSink* sink() { return tee_.empty() ? nullptr : &tee_; }
  // A problem or result object, to every JSON destination.
  void emit(const nlohmann::json& object);
  // Hands the trace file and the HTML page to the run's files (written when they commit).
  void finish(RunFiles& files);

 private:
  TraceFiles files_;
  std::string title_;
  std::unique_ptr<ui::JsonTrace> stdout_json_, file_json_, html_json_;
  std::ostringstream file_buffer_;
  ui::TeeTrace tee_;
};

}  // namespace fd::demos

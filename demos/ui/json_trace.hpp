// json_trace.hpp — trace events and results as JSON Lines: one object per line, each with an
// "event" field (schema: docs/trace-format.md). Written with nlohmann::json, never by hand.
// JSON has no infinities: -inf, inf and NaN are written as the strings "-inf", "inf", "nan".
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "flashdemo/teaching/trace.hpp"

namespace fd::ui {

// A number as JSON: finite values as numbers, the rest as strings.
nlohmann::json number(double v);
nlohmann::json numbers(const std::vector<double>& v);
nlohmann::json json_range(Range r);  // [begin, end)

// Writes every event it receives, and any result object given to emit(), as one line each; or,
// made with no stream, keeps each one's JSON text instead (the HTML replay embeds them). Text,
// not values: a value's destructor allocates (nlohmann::json's), which must not happen to a
// large record while a failed run unwinds.
class JsonTrace : public TraceSink {
 public:
  explicit JsonTrace(std::ostream& out) : out_(&out) {}
  JsonTrace() = default;
  void emit(const nlohmann::json& object);  // must hold an "event" field
  void on(const SoftmaxBlockEvent& e) override;
  void on(const TileEvent& e) override;
  void on(const TileSkippedEvent& e) override;
  void on(const RowsFinalEvent& e) override;
  void on(const BackwardTileEvent& e) override;
  void on(const KeysDoneEvent& e) override;

  // Every object kept so far, as JSON text (made with no stream; else none).
  const std::vector<std::string>& written() const { return written_; }

 private:
  std::ostream* out_ = nullptr;
  std::vector<std::string> written_;
};

// Forwards every event to several sinks (text on the terminal and JSON to a file, say).
class TeeTrace : public TraceSink {
 public:
  void add(TraceSink* sink) {
    if (sink) sinks_.push_back(sink);
  }
  void remove(TraceSink* sink) { std::erase(sinks_, sink); }
  bool empty() const { return sinks_.empty(); }
  void on(const SoftmaxBlockEvent& e) override { each(e); }
  void on(const TileEvent& e) override { each(e); }
  void on(const TileSkippedEvent& e) override { each(e); }
  void on(const RowsFinalEvent& e) override { each(e); }
  void on(const BackwardTileEvent& e) override { each(e); }
  void on(const KeysDoneEvent& e) override { each(e); }

 private:
  template <class E>
  void each(const E& e) {
    for (TraceSink* s : sinks_) s->on(e);
  }
  std::vector<TraceSink*> sinks_;
};

}  // namespace fd::ui

// json_trace.cpp — trace events as JSON Lines (see json_trace.hpp, docs/trace-format.md).
#include "ui/json_trace.hpp"

#include <cmath>

namespace fd::ui {
namespace {

const char* kind_name(TileKind kind) {
  return kind == TileKind::full ? "full" : kind == TileKind::partial ? "partial" : "skipped";
}

}  // namespace

nlohmann::json number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  return v;
}

nlohmann::json numbers(const std::vector<double>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (double x : v) a.push_back(number(x));
  return a;
}

nlohmann::json json_range(Range r) {
  return nlohmann::json::array({r.begin, r.end});
}

void JsonTrace::emit(const nlohmann::json& object) {
  if (out_)
    *out_ << object.dump() << '\n';
  else
    written_.push_back(object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void JsonTrace::on(const SoftmaxBlockEvent& e) {
  emit({{"event", "softmax_block"},
        {"block", e.block},
        {"range", json_range(e.range)},
        {"m_old", number(e.m_old)},
        {"m_new", number(e.m_new)},
        {"alpha", number(e.alpha)},
        {"l", number(e.l)}});
}

void JsonTrace::on(const TileEvent& e) {
  emit({{"event", "tile"},
        {"pass", "forward"},
        {"i", e.i},
        {"j", e.j},
        {"rows", json_range(e.rows)},
        {"cols", json_range(e.cols)},
        {"kind", kind_name(e.kind)},
        {"m_old", numbers(e.m_old)},
        {"m_new", numbers(e.m_new)},
        {"alpha", numbers(e.alpha)},
        {"l", numbers(e.l)}});
}

void JsonTrace::on(const TileSkippedEvent& e) {
  emit({{"event", "tile_skipped"},
        {"i", e.i},
        {"j", e.j},
        {"rows", json_range(e.rows)},
        {"cols", json_range(e.cols)}});
}

void JsonTrace::on(const RowsFinalEvent& e) {
  emit({{"event", "rows_final"},
        {"i", e.i},
        {"rows", json_range(e.rows)},
        {"m", numbers(e.m)},
        {"l", numbers(e.l)},
        {"L", numbers(e.L)}});
}

void JsonTrace::on(const BackwardTileEvent& e) {
  emit({{"event", "tile"},
        {"pass", "backward"},
        {"i", e.i},
        {"j", e.j},
        {"rows", json_range(e.rows)},
        {"cols", json_range(e.cols)},
        {"kind", kind_name(e.kind)},
        {"L", numbers(e.L)},
        {"D", numbers(e.D)},
        {"p_min", numbers(e.p_min)},
        {"p_max", numbers(e.p_max)},
        {"ds_min", numbers(e.ds_min)},
        {"ds_max", numbers(e.ds_max)}});
}

void JsonTrace::on(const KeysDoneEvent& e) {
  emit({{"event", "keys_done"}, {"j", e.j}, {"cols", json_range(e.cols)}});
}

}  // namespace fd::ui

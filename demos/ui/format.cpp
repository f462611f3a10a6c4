// format.cpp — number and list formatting for the terminal.
#include "ui/format.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace fd::ui {

std::string fixed(double v, int decimals) {
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (std::abs(v) >= 1e6) return fmt::format("{:.{}e}", v, decimals);  // keep columns narrow
  return fmt::format("{:.{}f}", v, decimals);
}

void wrap(const std::string& text, std::size_t width, const std::string& first,
          const std::string& rest) {
  std::string line = first;
  std::size_t start = 0;
  bool empty = true;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!empty && line.size() + 1 + word.size() > width) {
      fmt::print("{}\n", line);
      line = rest, empty = true;
    }
    line += (empty ? "" : " ") + word;
    empty = false;
    start = end + 1;
  }
  fmt::print("{}\n", line);
}

std::string sci(double v) {
  return v == 0 ? "0" : fmt::format("{:.1e}", v);
}

std::string list(const std::vector<double>& v, int decimals, std::size_t max_width) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::string item = (i ? ", " : "") + fixed(v[i], decimals);
    if (out.size() + item.size() + 1 > max_width && i + 1 < v.size()) return out + ", …]";
    out += item;
  }
  return out + "]";
}

std::string span(const std::vector<double>& v, int decimals) {
  if (v.empty()) return "-";
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  if (*lo == *hi) return fixed(*lo, decimals);
  return fmt::format("[{}, {}]", fixed(*lo, decimals), fixed(*hi, decimals));
}

std::string range(Range r) {
  return r.size() == 1 ? fmt::format("{}", r.begin) : fmt::format("{}-{}", r.begin, r.end - 1);
}

std::string grouped(double v) {
  const std::string digits = fmt::format("{:.0f}", std::abs(v));
  std::string out = v < 0 && digits != "0" ? "-" : "";
  for (std::size_t k = 0; k < digits.size(); ++k) {
    if (k > 0 && (digits.size() - k) % 3 == 0) out += ',';
    out += digits[k];
  }
  return out;
}

void heading(const std::string& title, const std::string& source) {
  fmt::print("\n{}\n", title);
  fmt::print("{}\n", source);
}

void section(const std::string& title) {
  fmt::print("\n{}\n", title);
}

}  // namespace fd::ui

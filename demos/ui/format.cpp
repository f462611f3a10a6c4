// format.cpp — number and list formatting for the terminal.
#include "ui/format.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "ui/output.hpp"

namespace fd::ui {

std::string fixed(double v, int decimals) {
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (std::abs(v) >= 1e6) return fmt::format("{:.{}e}", v, decimals);  // keep columns narrow
  std::string text = fmt::format("{:.{}f}", v, decimals);
  if (text[0] == '-' && text.find_first_not_of("-0.") == std::string::npos) text.erase(0, 1);
  return text;  // "-0.0000" (a tiny negative, or -0) reads as 0.0000
}

std::size_t display_width(const std::string& text) {
  return fmt::detail::compute_width(fmt::string_view(text));
}

std::string wrap(const std::string& text, std::size_t width, const std::string& first,
                 const std::string& rest) {
  // Units: an ASCII word, or one multi-byte character (Chinese breaks between characters).
  std::string out, line = first;
  bool line_empty = true;
  std::size_t k = 0;
  while (k < text.size()) {
    const bool space_before = text[k] == ' ';
    while (k < text.size() && text[k] == ' ') ++k;
    if (k >= text.size()) break;
    std::size_t end = k;
    if (static_cast<unsigned char>(text[k]) < 0x80) {
      while (end < text.size() && text[end] != ' ' && static_cast<unsigned char>(text[end]) < 0x80)
        ++end;
    } else {
      ++end;
      while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
    }
    const std::string unit = text.substr(k, end - k);
    const std::string sep = line_empty || !space_before ? "" : " ";
    if (!line_empty && display_width(line) + sep.size() + display_width(unit) > width) {
      out += line + "\n";
      line = rest + unit;
    } else {
      line += sep + unit;
    }
    line_empty = false;
    k = end;
  }
  return out + line + "\n";
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

std::string shape_text(const std::vector<index_t>& shape) {
  std::string t = "(";
  for (std::size_t x = 0; x < shape.size(); ++x) t += (x ? ", " : "") + std::to_string(shape[x]);
  return t + (shape.size() == 1 ? ",)" : ")");
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

std::string grouped(double v, int decimals) {
  const std::string digits = fmt::format("{:.{}f}", std::abs(v), decimals);
  const std::size_t point = std::min(digits.find('.'), digits.size());
  std::string out = v < 0 && digits.find_first_not_of("0.") != std::string::npos ? "-" : "";
  for (std::size_t k = 0; k < digits.size(); ++k) {
    if (k > 0 && k < point && (point - k) % 3 == 0) out += ',';
    out += digits[k];
  }
  return out;
}

std::string grouped_fit(double v, std::size_t width) {
  const std::string g = grouped(v);
  return g.size() < width ? g : fmt::format("{:.2e}", v);
}

void heading(const std::string& title, const std::string& source) {
  say_raw(fmt::format("\n{}\n{}\n", paint(title, Paint::heading), paint(source, Paint::dim)));
}

void section(const std::string& title) {
  say_raw(fmt::format("\n{}\n", paint(title, Paint::heading)));
}

void result_section(const std::string& title) {
  result_raw(fmt::format("\n{}\n", paint(title, Paint::heading)));
}

}  // namespace fd::ui

// format.hpp — how numbers, lists and headings look on the terminal.
#pragma once

#include <string>
#include <vector>

#include "flashdemo/host_device/tiling.hpp"

namespace fd::ui {

// Fixed-point with `decimals` places; -inf and inf spelled out.
std::string fixed(double v, int decimals);
// Text wrapped to width columns, ending in a newline: the first line starts with `first`, the
// others with `rest`.
std::string wrap(const std::string& text, std::size_t width, const std::string& first,
                 const std::string& rest);
// Terminal columns of UTF-8 text (a CJK character counts two).
std::size_t display_width(const std::string& text);
// An error size such as 5.0e-16 (0 prints as 0).
std::string sci(double v);
// [a, b, c] with `decimals` places, cut with "…" to fit max_width columns.
std::string list(const std::vector<double>& v, int decimals, std::size_t max_width);
// [min, max] of v, or the single value when they agree.
std::string span(const std::vector<double>& v, int decimals);
// rows 0-15 style range (inclusive end), "3" for a single index.
std::string range(Range r);
// 1,234,567
std::string grouped(double v);
// 1,234.567: grouped digits before the point, `decimals` after it.
std::string grouped(double v, int decimals);
// An array's shape as Python prints it: (2, 64, 32), (64,), ().
std::string shape_text(const std::vector<index_t>& shape);
// grouped(v) where it leaves a space in a column `width` wide, else v in scientific notation
// ("2.36e+13"): a huge value keeps its column.
std::string grouped_fit(double v, std::size_t width);
// The heading of a subcommand: a title and its place in the lecture.
void heading(const std::string& title, const std::string& source);
void section(const std::string& title);
// A table's title, kept by --quiet (which keeps the tables).
void result_section(const std::string& title);

}  // namespace fd::ui

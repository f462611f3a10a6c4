// tile_map.hpp — the grid of query tiles x key tiles: computed, partially masked, skipped.
#pragma once

#include <string>
#include <vector>

#include "flashdemo/host_device/mask.hpp"
#include "flashdemo/host_device/tiling.hpp"

namespace fd::ui {

// Draws the map (or says it is too large to draw) and the tile and entry counts under it;
// tile (current_i, current_j), when given, is highlighted.
void print_tile_map(const Tiling& tiling, const Mask& mask, index_t current_i = -1,
                    index_t current_j = -1);

// Which rows drift: one mark per row (█ off, · right) in lines of 50, each line opened by its
// first row; past 200 rows a mark stands for several rows (off when any of them is).
void print_row_map(const std::vector<bool>& off, const std::string& label);

}  // namespace fd::ui

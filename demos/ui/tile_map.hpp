// tile_map.hpp — the grid of query tiles x key tiles: computed, partially masked, skipped.
#pragma once

#include "flashdemo/mask.hpp"
#include "flashdemo/tiling.hpp"

namespace fd::ui {

// Draws the map (or says it is too large to draw) and the tile and entry counts under it;
// tile (current_i, current_j), when given, is highlighted.
void print_tile_map(const Tiling& tiling, const Mask& mask, index_t current_i = -1,
                    index_t current_j = -1);

}  // namespace fd::ui

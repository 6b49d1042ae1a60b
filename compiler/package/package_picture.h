// A picture of a package's memory plan and schedule, as SVG (`kilnc inspect PKG --svg OUT.svg`).
// Below: the arena as a timeline, x = parallel group, y = arena offset, one rectangle per arena
// slot over the groups it is live in, labelled with the launch that writes it and its size (two
// rectangles overlap nowhere, or the plan would be wrong). Above: each parallel group's launches,
// stacked. Every shape has a <title> (hover text) with the full numbers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

// Throws kiln::Error if the bytes are not a valid package.
std::string package_picture_svg(const std::vector<uint8_t>& package, const std::string& title);

}  // namespace kiln

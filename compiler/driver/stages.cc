#include "compiler/driver/stages.h"

namespace kiln {

const std::vector<Stage>& stages() {
  static const std::vector<Stage> all = [] {
    std::vector<Stage> s = middle_end_stages();
    for (const Stage& b : back_end_stages()) s.push_back(b);
    return s;
  }();
  return all;
}

std::vector<std::string> stage_names() {
  std::vector<std::string> names;
  for (const Stage& s : stages()) names.push_back(s.name);
  return names;
}

}  // namespace kiln

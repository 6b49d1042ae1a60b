#include "compiler/package/package_picture.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "compiler/package/package_reader.h"
#include "compiler/support/error.h"
#include "kiln/schema/kiln_generated.h"

namespace kiln {

namespace {

std::string xml(const std::string& s) {
  std::string r;
  for (char c : s) switch (c) {
      case '&':
        r += "&amp;";
        break;
      case '<':
        r += "&lt;";
        break;
      case '>':
        r += "&gt;";
        break;
      case '"':
        r += "&quot;";
        break;
      default:
        r += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
    }
  return r;
}

std::string bytes_text(uint64_t b) {
  const char* unit[] = {"B", "KB", "MB", "GB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1000 && u < 3) v /= 1000, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : v < 10 ? "%.2f %s" : "%.1f %s", v, unit[u]);
  return buf;
}

// `s` cut to about `chars` characters (an SVG text does not clip itself).
std::string fit(const std::string& s, double chars) {
  size_t n = chars < 2 ? 0 : static_cast<size_t>(chars);
  if (s.size() <= n) return s;
  return n < 2 ? "" : s.substr(0, n - 1) + "…";
}

// A stable, readable fill for a label.
std::string color_for(const std::string& label) {
  uint32_t h = 2166136261u;
  for (char c : label) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  char buf[48];
  std::snprintf(buf, sizeof buf, "hsl(%u,55%%,%u%%)", h % 360, 62 + (h >> 9) % 14);
  return buf;
}

struct LaunchBox {
  uint32_t index, kernel, ntasks;
  std::string label, kernel_name;
};

}  // namespace

std::string package_picture_svg(const std::vector<uint8_t>& bytes, const std::string& title) {
  const fb::Package* p = verified_package(bytes);
  const auto* slots = p->slots();
  const auto* groups = p->groups();
  size_t ngroups = groups ? groups->size() : 0;
  std::vector<std::string> kernel_names;
  if (p->kernels())
    for (const fb::Kernel* k : *p->kernels())
      kernel_names.push_back(k->name() ? k->name()->str() : "?");
  // The launches of each group, and which launch writes each slot (argument 0).
  std::vector<std::vector<LaunchBox>> per_group(ngroups);
  std::vector<std::string> writer(slots ? slots->size() : 0);
  uint32_t li = 0;
  size_t tallest = 1;
  for (size_t g = 0; g < ngroups; ++g) {
    const auto* ls = groups->Get(static_cast<flatbuffers::uoffset_t>(g))->launches();
    if (!ls) continue;
    for (const fb::Launch* l : *ls) {
      std::string kn = l->kernel() < kernel_names.size() ? kernel_names[l->kernel()] : "?";
      std::string label = l->label() ? l->label()->str() : kn;
      per_group[g].push_back({li++, l->kernel(), l->ntasks(), label, kn});
      if (l->args() && l->args()->size() && l->args()->Get(0) < writer.size())
        writer[l->args()->Get(0)] = label;
    }
    tallest = std::max(tallest, per_group[g].size());
  }
  const double left = 78, top = 44, box_h = 15,
               col_w = std::clamp(960.0 / std::max<size_t>(1, ngroups), 12.0, 72.0);
  const double plot_w = col_w * static_cast<double>(std::max<size_t>(1, ngroups));
  const double sched_h = static_cast<double>(tallest) * (box_h + 2) + 6;
  const double mem_top = top + sched_h + 34, mem_h = 460;
  const uint64_t arena = p->arena_size();
  const std::string heading = str_cat(title, ": arena ", bytes_text(arena), " (lower bound ",
                                      bytes_text(p->arena_lower_bound()), "), ", ngroups,
                                      " parallel groups, ", li, " launches");
  // (Wide enough for the heading at 13 px bold, about 7.5 px a character.)
  const double width =
                   std::max(left + plot_w + 24, left + 7.5 * static_cast<double>(heading.size())),
               height = mem_top + mem_h + 44;
  size_t arena_slots = 0;
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
     << "\" viewBox=\"0 0 " << width << " " << height
     << "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"10\">\n"
     << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << "<text x=\"" << left << "\" y=\"18\" font-size=\"13\" font-weight=\"bold\">" << xml(heading)
     << "</text>\n";
  // The schedule: each group's launches, stacked (launches of a group may run at once).
  os << "<text x=\"4\" y=\"" << top + 10 << "\">launches</text>\n";
  for (size_t g = 0; g < ngroups; ++g)
    for (size_t k = 0; k < per_group[g].size(); ++k) {
      const LaunchBox& b = per_group[g][k];
      double x = left + static_cast<double>(g) * col_w,
             y = top + static_cast<double>(k) * (box_h + 2);
      os << "<g class=\"launch\" data-launch=\"" << b.index << "\" data-group=\"" << g << "\">"
         << "<title>"
         << xml(str_cat("launch ", b.index, " (group ", g, "): ", b.label, "; ", b.kernel_name,
                        " x ", b.ntasks, " tasks"))
         << "</title><rect x=\"" << x + 0.5 << "\" y=\"" << y << "\" width=\"" << col_w - 1
         << "\" height=\"" << box_h << "\" rx=\"2\" fill=\"" << color_for(b.label)
         << "\" stroke=\"#444\" stroke-width=\"0.4\"/>";
      std::string text = fit(b.label, (col_w - 4) / 5.6);
      if (!text.empty())
        os << "<text x=\"" << x + 2.5 << "\" y=\"" << y + 10.5 << "\" font-size=\"8.5\">"
           << xml(text) << "</text>";
      os << "</g>\n";
    }
  // The arena timeline.
  os << "<text x=\"4\" y=\"" << mem_top - 8 << "\">arena offset</text>\n"
     << "<rect x=\"" << left << "\" y=\"" << mem_top << "\" width=\"" << plot_w << "\" height=\""
     << mem_h << "\" fill=\"#f6f6f6\" stroke=\"#888\" stroke-width=\"0.6\"/>\n";
  for (int t = 0; t <= 4; ++t) {
    double y = mem_top + mem_h * t / 4;
    os << "<line x1=\"" << left - 4 << "\" y1=\"" << y << "\" x2=\"" << left << "\" y2=\"" << y
       << "\" stroke=\"#888\"/><text x=\"" << left - 6 << "\" y=\"" << y + 3
       << "\" text-anchor=\"end\">" << bytes_text(arena * static_cast<uint64_t>(t) / 4)
       << "</text>\n";
  }
  size_t every = std::max<size_t>(1, static_cast<size_t>(std::ceil(28 / col_w)));
  for (size_t g = 0; g < ngroups; g += every)
    os << "<text x=\"" << left + (static_cast<double>(g) + 0.5) * col_w << "\" y=\""
       << mem_top + mem_h + 13 << "\" text-anchor=\"middle\">" << g << "</text>\n";
  os << "<text x=\"" << left + plot_w / 2 << "\" y=\"" << mem_top + mem_h + 30
     << "\" text-anchor=\"middle\">parallel group</text>\n";
  if (slots && arena > 0)
    for (size_t s = 0; s < slots->size(); ++s) {
      const fb::Slot* sl = slots->Get(static_cast<flatbuffers::uoffset_t>(s));
      if (sl->kind() != fb::SlotKind::Arena || sl->size() == 0) continue;
      ++arena_slots;
      double x = left + sl->first_group() * col_w;
      double w = (static_cast<double>(sl->last_group()) - sl->first_group() + 1) * col_w;
      double y = mem_top + mem_h * static_cast<double>(sl->offset()) / static_cast<double>(arena);
      double h =
          std::max(0.8, mem_h * static_cast<double>(sl->size()) / static_cast<double>(arena));
      const std::string& who = writer[s].empty() ? str_cat("slot ", s) : writer[s];
      os << "<g class=\"slot\" data-slot=\"" << s << "\" data-offset=\"" << sl->offset()
         << "\" data-size=\"" << sl->size() << "\" data-first=\"" << sl->first_group()
         << "\" data-last=\"" << sl->last_group() << "\"><title>"
         << xml(str_cat(who, ": ", sl->size(), " bytes at offset ", sl->offset(),
                        ", live in groups ", sl->first_group(), "-", sl->last_group()))
         << "</title><rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << h
         << "\" fill=\"" << color_for(who) << "\" stroke=\"white\" stroke-width=\"0.5\"/>";
      if (h >= 11 && w >= 36) {
        std::string text = fit(who + " " + bytes_text(sl->size()), (w - 4) / 5.6);
        os << "<text x=\"" << x + 2.5 << "\" y=\"" << y + std::min(h / 2 + 3.5, 11.0)
           << "\" font-size=\"9\">" << xml(text) << "</text>";
      }
      os << "</g>\n";
    }
  if (arena_slots == 0)
    os << "<text x=\"" << left + plot_w / 2 << "\" y=\"" << mem_top + mem_h / 2
       << "\" text-anchor=\"middle\">no intermediates: the arena is empty</text>\n";
  os << "</svg>\n";
  return os.str();
}

}  // namespace kiln

// SPDX-License-Identifier: Apache-2.0
// The HTML report: a page of inline SVG charts and tables, written from
// numbers the tools already have. No scripts and no external resources, so
// it opens anywhere, offline, and a CI artifact viewer shows it as it is.
#include <edo/human_bytes.hpp>
#include <edo/report_html.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace edo {

namespace {

std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string short_label(const std::string& s) {
  constexpr size_t kMax = 28;
  return s.size() <= kMax ? s
                          : "\xe2\x80\xa6" + s.substr(s.size() - (kMax - 1));  // keep the end: file names differ there
}

constexpr const char* kBlue = "#1f5fa8";
constexpr const char* kOrange = "#d9822b";
constexpr const char* kGrey = "#9aa5b1";
constexpr const char* kGreen = "#2e8b57";

// A chart's frame: plot area [left, left+width] x [top, top+height], with
// `right` and `bottom` margins (a second axis, a legend below).
struct Frame {
  double left = 70, top = 20, width = 620, height = 280, right = 30, bottom = 60;
  double total_width() const { return left + width + right; }
  double total_height() const { return top + height + bottom; }
};

std::string svg_open(const std::string& id, const Frame& f, const std::string& caption) {
  return fmt::format(
      "<svg id=\"{}\" role=\"img\" aria-label=\"{}\" width=\"{:.0f}\" height=\"{:.0f}\" viewBox=\"0 0 {:.0f} "
      "{:.0f}\">\n"
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fbfcfd\" stroke=\"#c8d0d8\"/>\n",
      id, esc(caption), f.total_width(), f.total_height(), f.total_width(), f.total_height(), f.left, f.top, f.width,
      f.height);
}

std::string text_at(double x, double y, const std::string& s, const char* anchor = "middle", int size = 11,
                    const std::string& extra = "") {
  return fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"{}\" text-anchor=\"{}\"{}>{}</text>\n", x, y, size,
                     anchor, extra, esc(s));
}

// A y axis from lo to hi with a grid line and label every `step`; on the
// right edge (a second scale: labels only, in `colour`) when `right`.
std::string y_axis(const Frame& f, double lo, double hi, double step, const std::string& title, bool percent = false,
                   bool right = false, const char* colour = "#333") {
  std::string s;
  for (double v = lo; v <= hi + step * 1e-6; v += step) {
    const double y = f.top + f.height * (1 - (v - lo) / (hi - lo));
    const std::string label = percent ? fmt::format("{:.0f}%", v * 100) : fmt::format("{:.3g}", v);
    if (right) {
      s += text_at(f.left + f.width + 6, y + 4, label, "start", 11, fmt::format(" fill=\"{}\"", colour));
      continue;
    }
    s += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e3e8ee\"/>\n", f.left,
                     f.left + f.width, y, y);
    s += text_at(f.left - 6, y + 4, label, "end");
  }
  const double x = right ? f.total_width() - 14 : 16;
  s += text_at(x, f.top + f.height / 2, title, "middle", 12,
               fmt::format(" transform=\"rotate(-90 {:.1f} {:.1f})\" fill=\"{}\"", x, f.top + f.height / 2, colour));
  return s;
}

// The lower end of a 0..1 axis that shows `lowest` with a margin.
double axis_floor(double lowest) { return std::max(0.0, std::floor((lowest - 0.02) * 10) / 10); }

// A step of 1, 2 or 5 times a power of ten giving about `ticks` intervals over `range`.
double nice_step(double range, int ticks) {
  const double raw = range / ticks, p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

std::string recall_chart(const HtmlReport& rep) {
  std::vector<ReportPoint> points = rep.points;
  std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  double bmin = rep.fp32_bytes > 0 ? rep.fp32_bytes : HUGE_VAL, bmax = rep.fp32_bytes, ymin = 1, amin = 1;
  bool analogy = std::isfinite(rep.fp32_analogy);
  if (analogy) amin = rep.fp32_analogy;
  for (const auto& p : points) {
    if (p.bytes > 0) bmin = std::min(bmin, p.bytes), bmax = std::max(bmax, p.bytes);
    if (std::isfinite(p.recall)) ymin = std::min(ymin, p.recall);
    if (std::isfinite(p.analogy)) amin = std::min(amin, p.analogy), analogy = true;
  }
  if (!(bmin < HUGE_VAL)) return "";
  const double lx0 = std::floor(std::log10(bmin) * 4 - 1) / 4,
               lx1 = std::ceil(std::log10(std::max(bmax, bmin)) * 4 + 1) / 4;
  // Recall on the left axis; analogy accuracy, another quantity on its own
  // range, on the right one.
  const double y0 = axis_floor(ymin), y1 = 1.0, a0 = axis_floor(amin), a1 = 1.0;
  Frame f;
  f.right = analogy ? 70 : 30;
  f.bottom = 84;  // the legend, below the axis title
  const auto X = [&](double b) { return f.left + f.width * (std::log10(b) - lx0) / (lx1 - lx0); };
  const auto Y = [&](double v) { return f.top + f.height * (1 - (v - y0) / (y1 - y0)); };
  const auto A = [&](double v) { return f.top + f.height * (1 - (v - a0) / (a1 - a0)); };
  std::string s = svg_open("recall-bytes", f, rep.recall_name + " against file bytes");
  s += y_axis(f, y0, y1, nice_step(y1 - y0, 5), rep.recall_name);
  if (analogy) s += y_axis(f, a0, a1, nice_step(a1 - a0, 5), "analogy accuracy (3CosAdd)", false, true, kOrange);
  for (int e = static_cast<int>(std::floor(lx0)); e <= static_cast<int>(std::ceil(lx1)); ++e)
    for (double m : {1.0, 2.0, 5.0}) {
      const double b = m * std::pow(10.0, e), lb = std::log10(b);
      if (lb < lx0 || lb > lx1) continue;
      const double x = X(b);
      s += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\"/>\n", x, x, f.top,
                       f.top + f.height, m == 1 ? "#d5dce3" : "#eef1f4");
      s += text_at(x, f.top + f.height + 16, human_bytes(b, 0));
    }
  s += text_at(f.left + f.width / 2, f.top + f.height + 38, "file bytes (log scale)", "middle", 12);
  // The Pareto front as a line through its points, smallest first.
  std::string front;
  for (const auto& p : points)
    if (p.front && std::isfinite(p.recall)) front += fmt::format("{:.1f},{:.1f} ", X(p.bytes), Y(p.recall));
  if (!front.empty())
    s += fmt::format(
        "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\"/>\n", front,
        kBlue);
  if (rep.fp32_bytes > 0) {
    s += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"none\" stroke=\"#333\"><title>fp32: "
        "{}</title></rect>\n",
        X(rep.fp32_bytes) - 5, Y(1.0) - 5, esc(human_bytes(rep.fp32_bytes)));
    s += text_at(X(rep.fp32_bytes) - 8, Y(1.0) + 16, "fp32", "end");
    if (std::isfinite(rep.fp32_analogy))
      s += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"9\" height=\"9\" fill=\"none\" stroke=\"{}\" "
          "transform=\"rotate(45 {:.1f} {:.1f})\"/>\n",
          X(rep.fp32_bytes) - 4.5, A(rep.fp32_analogy) - 4.5, kOrange, X(rep.fp32_bytes), A(rep.fp32_analogy));
  }
  for (const auto& p : points) {
    const double x = X(p.bytes);
    if (std::isfinite(p.analogy))
      s += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"8\" height=\"8\" fill=\"{}\" transform=\"rotate(45 {:.1f} "
          "{:.1f})\"><title>{}: analogy {:.4f}</title></rect>\n",
          x - 4, A(p.analogy) - 4, kOrange, x, A(p.analogy), esc(p.label), p.analogy);
    if (!std::isfinite(p.recall)) continue;
    const double y = Y(p.recall);
    s += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"{}\" stroke=\"{}\" stroke-width=\"{}\"><title>{}: {} "
        "{:.4f}, {}</title></circle>\n",
        x, y, p.chosen ? 7 : 5, p.front ? kBlue : kGrey, p.chosen ? "#111" : "none", p.chosen ? 2 : 0, esc(p.label),
        esc(rep.recall_name), p.recall, esc(human_bytes(p.bytes)));
    // A label that would run past the plot's right edge goes on the point's left.
    const std::string label = short_label(p.label) + (p.chosen ? " (chosen)" : "");
    const bool fits = x + 8 + 6.0 * static_cast<double>(label.size()) <= f.left + f.width;
    s += text_at(fits ? x + 8 : x - 8, y - 8, label, fits ? "start" : "end", 10);
  }
  // Legend: one row under the axis title, outside the plot, so it covers no point.
  double lx = f.left + 6;
  const double ly = f.top + f.height + 62;
  const size_t on_front = static_cast<size_t>(
      std::count_if(points.begin(), points.end(), [](const auto& p) { return p.front && std::isfinite(p.recall); }));
  const auto legend = [&](const std::string& mark, const std::string& what) {
    s += mark + text_at(lx + 10, ly + 4, what, "start", 10);
    lx += 22 + 6.0 * static_cast<double>(what.size());
  };
  legend(fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{}\"/>\n", lx, ly, kBlue),
         rep.recall_name + (on_front > 1 ? " on the front (dashed)" : " on the front"));
  if (on_front < points.size())
    legend(fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{}\"/>\n", lx, ly, kGrey), "behind the front");
  if (analogy)
    legend(
        fmt::format("<rect x=\"{}\" y=\"{}\" width=\"8\" height=\"8\" fill=\"{}\" transform=\"rotate(45 {} {})\"/>\n",
                    lx - 4, ly - 4, kOrange, lx, ly),
        "analogy accuracy (right axis)");
  return s + "</svg>\n";
}

std::string tier_chart(const std::vector<ReportTier>& tiers) {
  Frame f;
  f.left = 110;
  f.width = 560;
  f.height = 28.0 * static_cast<double>(tiers.size()) + 10;
  double most = 1;
  for (const auto& t : tiers) most = std::max(most, static_cast<double>(t.bytes));
  std::string s = svg_open("tier-bytes", f, "bytes by tier and residency");
  for (size_t i = 0; i < tiers.size(); ++i) {
    const ReportTier& t = tiers[i];
    const double y = f.top + 8 + 28.0 * static_cast<double>(i), w = 0.7 * f.width * static_cast<double>(t.bytes) / most;
    const char* colour = t.residency == Residency::gpu ? kGreen : t.residency == Residency::disk ? kGrey : kBlue;
    s += text_at(f.left - 8, y + 14, t.name, "end", 12);
    s +=
        fmt::format("<rect x=\"{}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"18\" fill=\"{}\"><title>{}</title></rect>\n",
                    f.left, y, std::max(w, 1.0), colour, esc(t.name + ": " + t.codec));
    s += text_at(f.left + std::max(w, 1.0) + 6, y + 13,
                 fmt::format("{} \xc2\xb7 {} \xc2\xb7 {} rows \xc2\xb7 {}", t.codec, residency_name(t.residency),
                             t.rows, human_bytes(static_cast<double>(t.bytes))),
                 "start", 10);
  }
  const double ly = f.top + f.height + 22;
  double lx = f.left;
  for (const auto& [where, colour] :
       {std::pair{Residency::gpu, kGreen}, std::pair{Residency::host, kBlue}, std::pair{Residency::disk, kGrey}}) {
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n", lx, ly - 10, colour);
    s += text_at(lx + 16, ly, residency_name(where), "start", 11);
    lx += 70;
  }
  return s + "</svg>\n";
}

std::string histogram_chart(const CosHistogram& h) {
  const auto& edges = CosHistogram::edges();
  std::vector<std::pair<std::string, uint64_t>> bars;
  for (size_t i = 0; i < h.counts.size(); ++i)
    bars.emplace_back(i < edges.size() ? fmt::format("\xe2\x89\xa4{:g}", edges[i]) : std::string(">1"), h.counts[i]);
  if (h.nan > 0) bars.emplace_back("NaN", h.nan);
  uint64_t most = 1, total = 0;
  for (const auto& b : bars) most = std::max(most, b.second), total += b.second;
  Frame f;
  f.height = 240;
  std::string s = svg_open("cos-hist", f, "rows by 1 - cosine");
  s += y_axis(f, 0, 1, 0.2, "share of rows", true);
  const double slot = f.width / static_cast<double>(bars.size());
  for (size_t i = 0; i < bars.size(); ++i) {
    const double share = static_cast<double>(bars[i].second) / static_cast<double>(std::max<uint64_t>(total, 1));
    const double x = f.left + slot * static_cast<double>(i), hgt = f.height * share;
    s += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"><title>1 - cos {}: "
        "{} rows</title></rect>\n",
        x + 2, f.top + f.height - hgt, slot - 4, hgt, bars[i].first == "NaN" ? "#c0392b" : kBlue, esc(bars[i].first),
        bars[i].second);
    const double lx = x + slot / 2, ly = f.top + f.height + 12;
    s += text_at(lx, ly, bars[i].first, "end", 9, fmt::format(" transform=\"rotate(-45 {:.1f} {:.1f})\"", lx, ly));
  }
  s += text_at(f.left + f.width / 2, f.top + f.height + 54, "1 \xe2\x88\x92 cos(row, decoded row)", "middle", 12);
  return s + "</svg>\n";
}

std::string bucket_chart(const EvalResult& r) {
  // Log scale: a head kept in fp16 and a pruned tail differ by orders of magnitude.
  const char* names[] = {"head", "torso", "tail"};
  const std::pair<const char*, const char*> series[] = {{".rel_fro", kBlue}, {".rel_err.p99.9", kOrange}};
  double lo = HUGE_VAL, hi = 0;
  for (const char* b : names)
    for (const auto& m : series)
      if (const auto v = r.get(std::string(b) + m.first); v && std::isfinite(*v) && *v > 0)
        lo = std::min(lo, *v), hi = std::max(hi, *v);
  if (!(hi > 0)) lo = hi = 1;
  const int e0 = static_cast<int>(std::floor(std::log10(lo))),
            e1 = std::max(e0 + 1, static_cast<int>(std::ceil(std::log10(hi))));
  Frame f;
  f.height = 220;
  const auto Y = [&](double v) { return f.top + f.height * (1 - (std::log10(v) - e0) / (e1 - e0)); };
  std::string s = svg_open("buckets", f, "relative error by frequency bucket");
  for (int e = e0; e <= e1; ++e) {
    const double y = Y(std::pow(10.0, e));
    s += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e3e8ee\"/>\n", f.left,
                     f.left + f.width, y, y);
    s += text_at(f.left - 6, y + 4, fmt::format("1e{}", e), "end");
  }
  s += text_at(16, f.top + f.height / 2, "relative error (log scale)", "middle", 12,
               fmt::format(" transform=\"rotate(-90 16 {:.1f})\"", f.top + f.height / 2));
  const double slot = f.width / 3;
  for (int b = 0; b < 3; ++b) {
    const std::string n = names[b];
    const double x = f.left + slot * b;
    for (int i = 0; i < 2; ++i) {
      const auto v = r.get(n + series[i].first);
      const double bx = x + slot * (0.2 + 0.3 * i), bottom = f.top + f.height;
      const bool drawn = v && std::isfinite(*v) && *v > 0;
      const double top = drawn ? Y(*v) : bottom;
      if (drawn)
        s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/>\n", bx, top,
                         slot * 0.28, bottom - top, series[i].second);
      s += text_at(bx + slot * 0.14, top - 4, v ? fmt::format("{:.3g}", *v) : std::string("-"), "middle", 10);
    }
    s += text_at(x + slot / 2, f.top + f.height + 16,
                 fmt::format("{}: {:.0f} rows, {:.1f}% of lookups", n, r.get(n + ".rows").value_or(0),
                             100 * r.get(n + ".lookups").value_or(0)),
                 "middle", 11);
  }
  const double ly = f.top + f.height + 40;
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n", f.left, ly - 10, kBlue);
  s += text_at(f.left + 16, ly, "access-weighted rel_fro", "start", 11);
  s +=
      fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n", f.left + 200, ly - 10, kOrange);
  s += text_at(f.left + 216, ly, "worst 0.1% of rows (rel_err.p99.9)", "start", 11);
  return s + "</svg>\n";
}

// `words`: cells of text (left-aligned) rather than numbers.
std::string html_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                       const std::string& caption = "", bool words = false) {
  std::string s = words ? "<table class=\"words\">\n" : "<table>\n";
  if (!caption.empty()) s += "<caption>" + esc(caption) + "</caption>\n";
  s += "<tr>";
  for (const auto& h : header) s += "<th>" + esc(h) + "</th>";
  s += "</tr>\n";
  for (const auto& row : rows) {
    s += "<tr>";
    for (size_t c = 0; c < row.size(); ++c) s += (c == 0 ? "<td class=\"name\">" : "<td>") + esc(row[c]) + "</td>";
    s += "</tr>\n";
  }
  return s + "</table>\n";
}

std::string summary(const HtmlReport& rep) {
  if (!rep.result) return "";
  const EvalResult& r = *rep.result;
  std::vector<std::string> parts;
  if (const auto v = r.get("ratio")) parts.push_back(fmt::format("<b>{:.3g}x</b> smaller than fp32", *v));
  if (const auto v = r.get("bytes_after")) parts.push_back(human_bytes(*v));
  for (const std::string& m : {rep.recall_name, "w." + rep.recall_name, std::string("analogy.3cosadd.drop")})
    if (const auto v = r.get(m)) parts.push_back(fmt::format("{} {:.4g}", esc(m), *v));
  if (!rep.gates.empty())
    parts.push_back(all_passed(rep.gates) ? "<span class=\"pass\">gates passed</span>"
                                          : "<span class=\"fail\">a gate FAILED</span>");
  std::string s = "<p class=\"summary\">";
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? " \xc2\xb7 " : "") + parts[i];
  return s + "</p>\n";
}

// A model's tables, one row each: rows, bytes before and after, ratio,
// recall and share of lookups.
std::string model_table_section(const HtmlReport& rep) {
  auto num = [](double v, const char* f) { return std::isfinite(v) ? fmt::format(fmt::runtime(f), v) : "-"; };
  std::vector<std::vector<std::string>> rows;
  for (const ReportModelTable& t : rep.model_tables)
    rows.push_back({t.name, fmt::format("{}", t.rows), human_bytes(t.bytes_before), human_bytes(t.bytes_after),
                    num(t.ratio, "{:.3g}x"), num(t.recall, "{:.4f}"), num(t.share, "{:.4f}")});
  std::string table =
      html_table({"table", "rows", "fp32", "stored", "ratio", rep.recall_name, "share of lookups"}, rows);
  return "<h2>Table by table</h2>\n<p>Each table of the model against its original; the model row weights each "
         "metric by the tables' shares of lookups (docs/EVAL.md, \"Models\").</p>\n" +
         table.replace(0, 6, "<table id=\"model-tables\"");
}

}  // namespace

std::string to_html(const HtmlReport& rep) {
  std::string s =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + esc(rep.title) +
      "</title>\n<style>\n"
      "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px "
      "auto;max-width:1000px;color:#1d2733}\n"
      "h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #dde3ea}\n"
      "table{border-collapse:collapse;font-size:12px;margin:8px 0}th,td{padding:3px 8px;border-bottom:1px solid "
      "#e6ebf0;text-align:right}\n"
      "td.name,th:first-child{text-align:left;font-family:monospace}table.words td,table.words "
      "th{text-align:left}caption{text-align:left;font-weight:600}\n"
      ".summary{font-size:14px}.pass{color:#2e7d32;font-weight:600}.fail{color:#c62828;font-weight:600}\n"
      "svg text{font-family:system-ui,sans-serif;fill:#1d2733}\n"
      "</style>\n</head>\n<body>\n<h1>" +
      esc(rep.title) + "</h1>\n" + summary(rep);
  if (!rep.gates.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& o : rep.gates)
      rows.push_back({o.gate.expression, fmt::format("{:.6g}", o.value), o.pass ? "pass" : "FAIL",
                      std::isfinite(o.margin) ? fmt::format("{:+.4g}", o.margin) : "n/a"});
    s += "<h2>Gates</h2>\n" + html_table({"gate", "value", "result", "margin"}, rows);
  }
  if (!rep.points.empty()) {
    // The caption names the dashed line only when there is one to draw.
    const size_t on_front = static_cast<size_t>(std::count_if(
        rep.points.begin(), rep.points.end(), [](const auto& p) { return p.front && std::isfinite(p.recall); }));
    s += "<h2>" + esc(rep.recall_name) + " against bytes</h2>\n<p>" +
         (rep.points.size() == 1 ? std::string("The compressed file")
                                 : std::string("Each point a compressed form") +
                                       (on_front > 1 ? "; the dashed line joins the Pareto front (no smaller form "
                                                       "does better)"
                                                     : "")) +
         "; the square is the fp32 table" +
         (std::isfinite(rep.fp32_analogy) ? "; orange diamonds are analogy accuracy, on the right axis" : "") +
         ".</p>\n" + recall_chart(rep);
  }
  if (!rep.tiers.empty()) s += "<h2>Bytes by tier and residency</h2>\n" + tier_chart(rep.tiers);
  if (rep.result && !rep.result->cos_histogram.counts.empty())
    s += "<h2>Per-row cosine</h2>\n<p>Rows by how far each decoded row turned from the original (1 &minus; cosine); "
         "left is better.</p>\n" +
         histogram_chart(rep.result->cos_histogram);
  if (rep.result && rep.result->has("head.rows"))
    s +=
        "<h2>Head, torso and tail</h2>\n<p>Rows ranked by lookups: the head serves the first 50% of lookups, the torso "
        "the next 40%, the tail the rest (docs/EVAL.md).</p>\n" +
        bucket_chart(*rep.result);
  if (!rep.neighbours.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& n : rep.neighbours) {
      std::string before, after;
      for (const auto& w : n.before) before += (before.empty() ? "" : ", ") + w;
      for (const auto& w : n.after) after += (after.empty() ? "" : ", ") + w;
      rows.push_back({n.probe, before, after});
    }
    s += "<h2>Neighbours before and after</h2>\n" + html_table({"probe", "original", "compressed"}, rows, "", true);
  }
  if (!rep.model_tables.empty()) s += model_table_section(rep);
  for (const auto& t : rep.tables) s += "<h2>" + esc(t.caption) + "</h2>\n" + html_table(t.header, t.rows);
  if (rep.result) {
    const MetricsGrid grid = metrics_grid(*rep.result);
    std::vector<std::string> header = {"metric"};
    header.insert(header.end(), grid.columns.begin(), grid.columns.end());
    std::vector<std::vector<std::string>> rows;
    for (size_t r = 0; r < grid.rows.size(); ++r) {
      rows.push_back({grid.rows[r]});
      rows.back().insert(rows.back().end(), grid.cells[r].begin(), grid.cells[r].end());
    }
    s += fmt::format("<h2>All metrics (k-NN metric {})</h2>\n", metric_name(rep.result->metric)) +
         html_table(header, rows);
  }
  return s +
         "<p style=\"color:#7b8794;font-size:11px\">Written by edo; metrics defined in "
         "docs/EVAL.md.</p>\n</body>\n</html>\n";
}

}  // namespace edo

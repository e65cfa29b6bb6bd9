// SPDX-License-Identifier: Apache-2.0
// The HTML report: one <svg> per chart it has data for, text escaped, and
// nothing that reaches for the network or runs a script.
#include "test_util.hpp"

#include <edo/report_html.hpp>

#include <string>

using namespace edo;

namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// What a self-contained page must not hold.
void check_offline(const std::string& html) {
  for (const char* bad : {"http:", "https:", "<script", " src=", "url(", "@import", "<link", "<iframe"})
    CHECK_MESSAGE(html.find(bad) == std::string::npos, "the page holds ", bad);
  CHECK(count(html, "<svg") == count(html, "</svg>"));
  CHECK(html.starts_with("<!DOCTYPE html>"));
  CHECK(html.ends_with("</html>\n"));
}

}  // namespace

TEST_CASE("report html: every chart with data is one svg, text escaped, nothing fetched") {
  EvalResult r;
  r.set("rows", 100);
  r.set("recall@10", 0.93);
  r.set("bytes_before", 20000);
  r.set("bytes_after", 5000);
  r.set("ratio", 4);
  for (const char* b : {"head", "torso", "tail"}) {
    r.set(std::string(b) + ".rows", 10);
    r.set(std::string(b) + ".lookups", 0.3);
    r.set(std::string(b) + ".rel_fro", 0.01);
    r.set(std::string(b) + ".rel_err.p99.9", 0.2);
  }
  r.groups = {"head", "torso", "tail"};
  for (int i = 0; i < 99; ++i) r.cos_histogram.add(1.0 - 1e-4);
  r.cos_histogram.add(-0.5);
  REQUIRE(r.cos_histogram.counts.size() == CosHistogram::edges().size() + 1);
  CHECK(r.cos_histogram.counts.back() == 1);

  HtmlReport page;
  page.title = "a <b>&\"title\"";
  page.result = &r;
  page.fp32_bytes = 20000;
  page.points = {{"int8 <x>", 5000, 0.93, 0.7, true, true}, {"int4", 2500, 0.8, NAN, true, false}};
  page.tiers = {{"hot", "fp16", edo::Residency::gpu, 10, 2000}, {"cold", "int4", edo::Residency::disk, 90, 3000}};
  page.neighbours = {{"king", {"queen", "<script>"}, {"queen", "prince"}}};
  const std::string html = to_html(page);
  check_offline(html);
  CHECK(count(html, "<svg") == 4);
  for (const char* id : {"recall-bytes", "tier-bytes", "cos-hist", "buckets"})
    CHECK_MESSAGE(html.find(std::string("<svg id=\"") + id + "\"") != std::string::npos, id);
  CHECK(html.find("a &lt;b&gt;&amp;&quot;title&quot;") != std::string::npos);
  CHECK(html.find("&lt;script&gt;") != std::string::npos);
  CHECK(html.find("int8 &lt;x&gt;") != std::string::npos);
  CHECK(html.find("recall@10") != std::string::npos);

  // A comparison without a result in focus: the chart and the tables only.
  HtmlReport compare;
  compare.title = "compare";
  compare.points = page.points;
  compare.tables = {{"files", {"file", "bytes"}, {{"a.edo", "10"}}}};
  const std::string c = to_html(compare);
  check_offline(c);
  CHECK(count(c, "<svg") == 1);
  CHECK(c.find("a.edo") != std::string::npos);
}

TEST_CASE("report html: the cosine histogram's bins follow their edges") {
  CosHistogram h;
  h.add(1.0);           // gap 0
  h.add(1.0 - 1.5e-6);  // (1e-6, 2e-6]
  h.add(0.0);           // gap 1: the last edge
  h.add(std::nan(""));
  const auto& e = CosHistogram::edges();
  REQUIRE(e.front() == 1e-6);
  REQUIRE(e.back() == 1.0);
  CHECK(h.counts[0] == 1);
  CHECK(h.counts[1] == 1);
  CHECK(h.counts[e.size() - 1] == 1);
  CHECK(h.counts[e.size()] == 0);
  CHECK(h.nan == 1);
}

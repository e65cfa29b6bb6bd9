// SPDX-License-Identifier: Apache-2.0
// Reports of a written .edo file: edo-pack's tiers and residency, edo-quantize's
// size, error and timing, as JSON and as the tools' text.
#include <edo/edo_file.hpp>
#include <edo/pack.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace edo {

void add_residency_metrics(EvalResult& result, const PackReport& rep) {
  const double fp32 = static_cast<double>(rep.fp32_bytes);
  result.set("bytes_gpu", static_cast<double>(rep.gpu_bytes));
  result.set("bytes_host", static_cast<double>(rep.host_bytes));
  result.set("bytes_disk", static_cast<double>(rep.disk_bytes));
  result.set("gpu_fraction", static_cast<double>(rep.gpu_bytes) / fp32);
}

nlohmann::json pack_report_json(const PackReport& rep) {
  nlohmann::json tiers = nlohmann::json::array();
  for (size_t i = 0; i < rep.tiers.size(); ++i) {
    const TierWriteReport& t = rep.tiers[i];
    tiers.push_back({{"name", t.name},
                     {"share", share_text(rep.specs[i])},
                     {"codec", t.codec},
                     {"residency", residency_name(t.residency)},
                     {"rows", t.rows},
                     {"code_size", t.code_size},
                     {"bytes", t.bytes},
                     {"mass", t.mass},
                     {"train_seconds", t.train_seconds}});
    if (!t.sections.empty()) {
      nlohmann::json sections = nlohmann::json::object();
      for (const auto& [role, bytes] : t.sections) sections[role] = bytes;
      tiers.back()["sections"] = sections;
    }
    if (!t.notes.empty()) tiers.back()["notes"] = t.notes;
  }
  return {{"rows", rep.rows},
          {"dim", rep.dim},
          {"row_order", rep.order},
          {"fp32_bytes", rep.fp32_bytes},
          {"data_bytes", rep.data_bytes},
          {"file_bytes", rep.file_bytes},
          {"vocab_bytes", rep.vocab_bytes},
          {"rowmap_bytes", rep.map_bytes},
          {"ratio", rep.ratio},
          {"bytes_gpu", rep.gpu_bytes},
          {"bytes_host", rep.host_bytes},
          {"bytes_disk", rep.disk_bytes},
          {"encode_seconds", rep.encode_seconds},
          {"tiers", tiers}};
}

std::string pack_report_text(const PackReport& rep) {
  const double fp32 = static_cast<double>(rep.fp32_bytes);
  std::string s = fmt::format("  rows ordered by {}{}\n", rep.order,
                              rep.order == "norm" ? " (no --freq: row L2 norm is the proxy for access frequency)" : "");
  s += fmt::format("  {:<10} {:<10} {:>10} {:>8}  {:<18} {:<5} {:>12}\n", "tier", "share", "rows", "mass", "codec",
                   "where", "bytes");
  for (size_t i = 0; i < rep.tiers.size(); ++i) {
    const TierWriteReport& t = rep.tiers[i];
    // Without --freq there are no lookups to share out: no mass, rather than "0.00%".
    const std::string mass = rep.order == "norm" ? "-" : fmt::format("{:.2f}%", 100.0 * t.mass);
    s += fmt::format("  {:<10} {:<10} {:>10} {:>8}  {:<18} {:<5} {:>12}\n", t.name, share_text(rep.specs[i]), t.rows,
                     mass, t.codec, residency_name(t.residency), t.bytes);
    for (const auto& [role, bytes] : t.sections) s += fmt::format("  {:<10} {:<35} {:>12}\n", "", role, bytes);
    for (const std::string& note : t.notes) s += fmt::format("  {:<10} {}\n", "", note);
  }
  s += fmt::format("  row map    {} bytes\n", rep.map_bytes);
  if (rep.vocab_bytes > 0)
    s += fmt::format("  words      {} bytes of vocabulary (not counted in the size)\n", rep.vocab_bytes);
  // A file can be larger than fp32 (tiny tables, --force): say so rather than "0.83x smaller".
  const std::string ratio = rep.ratio >= 1 ? fmt::format("{:.2f}x smaller", rep.ratio)
                                           : fmt::format("{:.2f}x larger than fp32", 1.0 / rep.ratio);
  s += fmt::format("  size       fp32 {} bytes -> file {} bytes ({}; {} bytes of data)\n", rep.fp32_bytes,
                   rep.file_bytes, ratio, rep.data_bytes);
  s += fmt::format("  residency  gpu {} ({:.1f}% of fp32), host {} ({:.1f}%), disk {} ({:.1f}%)\n", rep.gpu_bytes,
                   100.0 * static_cast<double>(rep.gpu_bytes) / fp32, rep.host_bytes,
                   100.0 * static_cast<double>(rep.host_bytes) / fp32, rep.disk_bytes,
                   100.0 * static_cast<double>(rep.disk_bytes) / fp32);
  return s;
}

nlohmann::json quantize_report_json(const QuantizeReport& rep) {
  return {{"codec", rep.spec},
          {"rows", rep.rows},
          {"dim", rep.dim},
          {"device", rep.device},
          {"fp32_bytes", rep.fp32_bytes},
          {"input_bytes", rep.input_bytes},
          {"file_bytes", rep.file_bytes},
          {"vocab_bytes", rep.vocab_bytes},
          {"code_size", rep.code_size},
          {"state_bytes", rep.state_bytes},
          {"ratio", rep.ratio},
          {"bits_per_value", rep.bits_per_value},
          {"rel_fro", rep.rel_frobenius},
          {"mse", rep.mse},
          {"cos_mean", rep.cos_mean},
          {"cos_min", rep.cos_min},
          {"train_seconds", rep.train_seconds},
          {"encode_seconds", rep.encode_seconds},
          {"encode_gb_per_s", rep.encode_gbps()}};
}

namespace {

// What a smaller codebooks= setting would save for the spec's codec (pq,
// opq, rq), or "" when its codebooks are int8 already or it has none.
std::string smaller_codebooks_hint(const std::string& spec) {
  const std::vector<SpecStage> stages = parse_spec(spec);
  if (stages.empty()) return "";
  const SpecStage& codec = stages.back();
  if (codec.name != "pq" && codec.name != "opq" && codec.name != "rq") return "";
  std::string books = "fp32";
  for (const SpecParam& p : codec.params)
    if (p.key == "codebooks") books = p.value;
  if (books == "fp32")
    return ", and codebooks=fp16 would halve the codebooks (codebooks=int8: a byte a value and one a codeword)";
  if (books == "fp16") return ", and codebooks=int8 would store a byte a value and one a codeword, not two a value";
  return "";
}

}  // namespace

std::string quantize_report_text(const QuantizeReport& rep) {
  std::string s = fmt::format("  codec          {} ({} bytes a row, device {})\n", rep.spec, rep.code_size, rep.device);
  s += fmt::format("  size           {} x {}: {} bytes as fp32 -> {} bytes ({:.2f}x, {:.3g} bits a value)\n", rep.rows,
                   rep.dim, rep.fp32_bytes, rep.file_bytes, rep.ratio, rep.bits_per_value);
  if (rep.state_bytes > 0) {
    // The codec's state is a fixed cost: say when it, not the codes, makes the file.
    const uint64_t codes = rep.rows * rep.code_size;
    s += fmt::format(
        "  state          {} bytes ({:.0f}% of the file; the codes take {})", rep.state_bytes,
        rep.file_bytes ? 100.0 * static_cast<double>(rep.state_bytes) / static_cast<double>(rep.file_bytes) : 0.0,
        codes);
    if (rep.state_bytes > codes && rep.code_size > 0) {
      s += fmt::format(
          ": more than the codes, which outweigh it from about {} rows; a scalar codec may make a "
          "smaller file here",
          rep.state_bytes / rep.code_size);
      s += smaller_codebooks_hint(rep.spec);
    }
    s += "\n";
  }
  if (rep.vocab_bytes > 0)
    s += fmt::format("  words          {} bytes of vocabulary (not counted in the size)\n", rep.vocab_bytes);
  s += fmt::format("  error          relative Frobenius {:.4g}, MSE {:.4g}, cosine mean {:.6f} min {:.6f}\n",
                   rep.rel_frobenius, rep.mse, rep.cos_mean, rep.cos_min);
  if (rep.train_seconds > 0) s += fmt::format("  training       {:.3f} s\n", rep.train_seconds);
  const double rows_per_s = rep.encode_seconds > 0 ? static_cast<double>(rep.rows) / rep.encode_seconds : 0;
  s += fmt::format("  encode         {:.3f} s ({:.3g} rows/s, {:.3g} GB/s of fp32 input)\n", rep.encode_seconds,
                   rows_per_s, rep.encode_gbps());
  return s;
}

}  // namespace edo

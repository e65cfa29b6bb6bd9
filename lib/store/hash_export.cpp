// SPDX-License-Identifier: Apache-2.0
// edo-hash --export: a hashed tier's fitted tables as npy files and a JSON
// description, so a training framework can start from the fit.
#include <edo/error.hpp>
#include <edo/hash.hpp>
#include <edo/io/container.hpp>
#include <edo/io/files.hpp>
#include <edo/io/table.hpp>
#include <edo/pack.hpp>
#include <edo/tier.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace edo {

namespace {

void write_npy(const std::string& path, const uint8_t* data, uint64_t rows, uint64_t cols, bool half) {
  auto w = io::create_table(path, rows, cols, half ? io::DType::f16 : io::DType::f32);
  std::vector<float> row(cols);
  for (uint64_t r = 0; r < rows; ++r) {
    if (half) {
      for (uint64_t j = 0; j < cols; ++j) {
        uint16_t h;
        std::memcpy(&h, data + 2 * (r * cols + j), 2);
        row[j] = half_bits_to_float(h);
      }
    } else {
      std::memcpy(row.data(), data + 4 * r * cols, 4 * cols);
    }
    w->write_f32(row.data(), 1);
  }
  w->commit();
}

}  // namespace

nlohmann::json export_hash_tables(const std::string& edo_path, const std::string& dir) {
  const io::Container c = io::Container::open(edo_path, io::Verify::all);
  const nlohmann::json& manifest = c.manifest();
  size_t t = 0;
  while (t < c.tiers().size() && tier_kind_of(c.tiers()[t].codec) != TierKind::hashed) ++t;
  if (t == c.tiers().size()) EDO_FAIL("{}: no hashed tier to export", edo_path);
  const io::TierInfo& info = c.tiers()[t];
  const HashSpec spec = parse_hash_spec(info.codec);
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    EDO_FAIL("{}: cannot create the export directory: {}", dir, std::strerror(errno));
  const uint64_t dim = c.dim();
  nlohmann::json files = nlohmann::json::object();
  const auto table = [&](const char* role, uint64_t rows, uint64_t cols, bool half) {
    const io::SectionView v = c.section(info.sections.at(role));
    const std::string name = std::string(role) + ".npy";
    write_npy(dir + "/" + name, v.data, rows, cols, half);
    files[role] = {{"file", name}, {"shape", {rows, cols}}, {"dtype", half ? "float16" : "float32"}};
  };
  nlohmann::json d = {{"format", "edo-hash export 1"},  {"source", edo_path}, {"tier", info.name},
                      {"spec", format_hash_spec(spec)}, {"rows", c.rows()},   {"dim", dim},
                      {"buckets", spec.buckets}};
  if (spec.scheme == HashScheme::qr) {
    const uint64_t q = qr_quotient_rows(c.rows(), spec.buckets);
    table("quotient", q, dim, false);
    table("remainder", spec.buckets, dim, false);
    d["scheme"] = "qr";
    d["op"] = spec.op == QrOp::sum ? "sum" : "mul";
    d["rule"] = "row i = quotient[(i / buckets) % quotient_rows] (+ or *) remainder[i % buckets]";
  } else {
    table("buckets", spec.buckets, dim, false);
    if (spec.weights) table("weights", c.rows(), spec.k, true);
    d["scheme"] = "hash";
    d["k"] = spec.k;
    d["seed"] = spec.seed;
    d["weights"] = spec.weights;
    d["rule"] =
        "row i = sum over k < K of weight[i][k] (1 without weights) * buckets[h(i, k)], "
        "h(i, k) = splitmix64(i ^ splitmix64(seed + k)) % buckets (docs/FORMAT.md 9.5)";
  }
  if (manifest["tiers"][t].contains("fit")) d["fit"] = manifest["tiers"][t]["fit"];
  d["files"] = files;
  const std::string text = d.dump(2) + "\n";
  io::AtomicFile f(dir + "/hash.json");
  f.write(text.data(), text.size());
  f.commit();
  return d;
}

}  // namespace edo

#include <edo/build_info.hpp>
#include <edo/checked.hpp>
#include <edo/edo_file.hpp>
#include <edo/error.hpp>
#include <edo/parallel.hpp>
#include <edo/random.hpp>

#include <sys/stat.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

namespace edo {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string basename_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string hex64(uint64_t v) { return fmt::format("{:016x}", v); }

uint64_t file_size_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// Per-row reconstruction statistics, summed in row order (thread-count independent).
struct ReconAccumulator {
  double err2 = 0, ref2 = 0, cos_sum = 0;
  double cos_min = std::numeric_limits<double>::infinity();
  uint64_t rows = 0;

  // Rows are also judged by `rule` (the magnitude check, from the same sums);
  // the first refused row throws, named as input row first_row + i.
  void add_block(const float* x, const float* y, uint64_t n, uint64_t dim, const MagnitudeRule& rule,
                 uint64_t first_row, std::vector<double>& scratch) {
    scratch.assign(4 * n, 0.0);
#pragma omp parallel for schedule(static) if (parallel_worth(n * dim))
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) {
      const float* a = x + static_cast<uint64_t>(i) * dim;
      const float* b = y + static_cast<uint64_t>(i) * dim;
      double e = 0, aa = 0, bb = 0, ab = 0;
      for (uint64_t j = 0; j < dim; ++j) {
        const double d = static_cast<double>(a[j]) - b[j];
        e += d * d;
        aa += static_cast<double>(a[j]) * a[j];
        bb += static_cast<double>(b[j]) * b[j];
        ab += static_cast<double>(a[j]) * b[j];
      }
      scratch[4 * i] = e;
      scratch[4 * i + 1] = aa;
      scratch[4 * i + 2] = row_cosine(aa, bb, ab);
      scratch[4 * i + 3] = bb;
    }
    for (uint64_t i = 0; i < n; ++i) {
      const double* s = scratch.data() + 4 * i;
      if (rule.refuses(s[1], s[0], s[3])) rule.fail(first_row + i, s[1], s[0], s[3]);
      err2 += s[0];
      ref2 += s[1];
      cos_sum += s[2];
      cos_min = std::min(cos_min, s[2]);
    }
    rows += n;
  }

  // Cosine of a row and its reconstruction; a zero row matches only a zero row.
  static double row_cosine(double aa, double bb, double ab) {
    if (aa == 0 || bb == 0) return aa == bb ? 1.0 : 0.0;
    return ab / std::sqrt(aa * bb);
  }
};

}  // namespace

QuantizeReport quantize_to_edo(io::TableReader& input, const std::string& out_path, const QuantizeOptions& opt) {
  const uint64_t rows = input.rows(), dim = input.dim();
  std::unique_ptr<Codec> codec = make_codec(opt.spec, dim);
  QuantizeReport rep;
  rep.spec = codec->spec();
  rep.rows = rows;
  rep.dim = dim;
  rep.fp32_bytes = rows * dim * 4;
  rep.input_bytes = input.payload_bytes();
  rep.code_size = codec->code_size();
  rep.device = device_name(opt.device);
  const auto code_bytes = checked_mul(rows, rep.code_size);
  if (!code_bytes) EDO_FAIL("{}: {} rows of {} bytes overflow", out_path, rows, rep.code_size);

  EncodeOptions enc;
  enc.device = opt.device;
  enc.allow_nonfinite = opt.allow_nonfinite;
  enc.allow_underflow = opt.allow_underflow;
  enc.input = input.path();
  DecodeOptions dec;
  dec.device = Device::cpu;

  if (codec->needs_training()) {
    const auto t0 = Clock::now();
    const std::vector<uint64_t> ids = sample_indices(rows, opt.train_rows, opt.seed);
    std::vector<float> sample(ids.size() * dim);
    for (size_t i = 0; i < ids.size(); ++i) input.read_f32(ids[i], 1, sample.data() + i * dim);
    check_trainable_norms(sample.data(), ids.size(), dim, rep.spec, enc, ids.data());
    codec->train(sample.data(), ids.size(), opt.seed);
    rep.train_seconds = seconds_since(t0);
  }

  io::ContainerWriter writer(out_path);
  writer.begin_section("tier0/codes");
  XXH64_state_t* source_hash = XXH64_createState();
  XXH64_reset(source_hash, 0);
  const uint64_t block = input.block_rows(opt.block_bytes);
  std::vector<uint8_t> codes;
  std::vector<float> decoded;
  std::vector<double> scratch;
  ReconAccumulator recon;
  const MagnitudeRule magnitudes(*codec, enc);
  try {
    for (uint64_t begin = 0; begin < rows; begin += block) {
      const uint64_t n = std::min(block, rows - begin);
      const float* x = input.rows_f32(begin, n);
      XXH64_update(source_hash, x, n * dim * sizeof(float));
      codes.resize(n * rep.code_size);
      enc.first_row = begin;
      const auto t0 = Clock::now();
      codec->encode(x, n, codes.data(), enc);
      rep.encode_seconds += seconds_since(t0);
      writer.append(codes.data(), codes.size());
      decoded.resize(n * dim);
      codec->decode(codes.data(), n, decoded.data(), dec);
      recon.add_block(x, decoded.data(), n, dim, magnitudes, begin, scratch);
      if (opt.progress) opt.progress(begin + n, rows);
    }
  } catch (...) {
    XXH64_freeState(source_hash);
    throw;
  }
  const uint64_t source_digest = XXH64_digest(source_hash);
  XXH64_freeState(source_hash);
  writer.end_section();

  nlohmann::json tier = {
      {"name", "all"}, {"codec", rep.spec}, {"rows", rows}, {"first_row", 0}, {"code_size", rep.code_size}};
  nlohmann::json sections = {{"codes", "tier0/codes"}};
  nlohmann::json shapes = nlohmann::json::object();
  for (const NamedBlob& blob : codec->state()) {
    const std::string name = "tier0/" + blob.name;
    writer.add_section(name, blob.values.data(), blob.values.size() * sizeof(float));
    sections[blob.name] = name;
    shapes[blob.name] = blob.shape;
  }
  tier["sections"] = sections;
  tier["state_shapes"] = shapes;

  nlohmann::json manifest = {
      {"rows", rows},
      {"dim", dim},
      {"tiers", nlohmann::json::array({tier})},
      {"provenance",
       {{"tool", opt.tool},
        {"version", EDO_VERSION_STRING},
        {"source", basename_of(input.path())},
        {"source_dtype", io::dtype_name(input.dtype())},
        {"source_fp32_xxh64", hex64(source_digest)},
        {"parameters", opt.parameters},
        {"seed", opt.seed}}},
  };
  for (const auto& [key, value] : opt.extra_manifest.items()) manifest[key] = value;
  writer.finish(manifest);

  rep.file_bytes = file_size_of(out_path);
  rep.ratio = static_cast<double>(rep.fp32_bytes) / static_cast<double>(rep.file_bytes);
  rep.bits_per_value = static_cast<double>(rep.file_bytes) * 8.0 / static_cast<double>(rows * dim);
  rep.rel_frobenius = recon.ref2 > 0 ? std::sqrt(recon.err2 / recon.ref2) : std::sqrt(recon.err2);
  rep.mse = recon.err2 / static_cast<double>(rows * dim);
  rep.cos_mean = recon.cos_sum / static_cast<double>(rows);
  rep.cos_min = recon.cos_min;
  return rep;
}

EdoTable::EdoTable(const std::string& path, Reader reader) : TableReader(path, "edo"), reader_(std::move(reader)) {
  rows_ = reader_.rows();
  dim_ = reader_.dim();
  dtype_ = io::DType::f32;
}

std::unique_ptr<EdoTable> EdoTable::open(const std::string& path, io::Verify verify) {
  ReaderOptions opt;
  opt.verify = verify;
  return std::unique_ptr<EdoTable>(new EdoTable(path, Reader::open(path, opt)));
}

const float* EdoTable::rows_f32(uint64_t begin, uint64_t count) {
  check_range(begin, count);
  buffer_.resize(count * dim_);
  reader_.decode_rows(begin, count, buffer_.data());
  return buffer_.data();
}

const uint8_t* EdoTable::codes_of(uint64_t begin, uint64_t count) {
  check_range(begin, count);
  const Codec* codec = reader_.single_tier_codec();
  if (!codec) EDO_FAIL("{}: a tiered file has no single code array", path());
  return reader_.single_tier_codes() + begin * codec->code_size();
}

bool is_edo_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  uint8_t magic[8] = {};
  if (!f.read(reinterpret_cast<char*>(magic), 8)) return false;
  return std::memcmp(magic, io::kContainerMagic, 8) == 0;
}

std::unique_ptr<io::TableReader> open_any_table(const std::string& spec, io::Verify verify) {
  if (spec != "-" && is_edo_file(spec)) return EdoTable::open(spec, verify);
  return io::open_table(spec);
}

}  // namespace edo

namespace edo {

uint64_t compressed_data_bytes(io::TableReader& table) {
  if (auto* edo = dynamic_cast<EdoTable*>(&table)) {
    uint64_t total = 0;
    for (const auto& s : edo->container().sections()) total += s.length;
    return total;
  }
  return table.payload_bytes();
}

void republish_with_manifest(const std::string& src, const std::string& dst, const nlohmann::json& extra) {
  const io::Container in = io::Container::open(src, io::Verify::all);
  io::ContainerWriter out(dst);
  for (const auto& s : in.sections()) {
    const io::SectionView v = in.section(s.name);
    out.add_section(s.name, v.data, v.size);
  }
  nlohmann::json manifest = in.manifest();
  manifest.erase("sections");
  for (const auto& [key, value] : extra.items()) manifest[key] = value;
  out.finish(manifest);
}

}  // namespace edo

#include <edo/eval.hpp>

namespace edo {

void add_memory_metrics(EvalResult& result, io::TableReader& original, io::TableReader& compressed) {
  const double before = static_cast<double>(original.rows() * original.dim() * 4);
  const double after = static_cast<double>(compressed_data_bytes(compressed));
  result.set("bytes_before", before);
  result.set("bytes_after", after);
  result.set("ratio", after > 0 ? before / after : 0.0);
  result.set("bits_per_value", after * 8.0 / static_cast<double>(original.rows() * original.dim()));
}

}  // namespace edo

// SPDX-License-Identifier: Apache-2.0
// The codec registry: one grammar for codec specs, one traits table listing
// every codec, and one interface (train / encode / decode / code_size) that
// every codec implements, FAISS-quantizer style.
//
// Spec grammar (flags, tier specs and manifests all use it):
//   spec   := stage (',' stage)*
//   stage  := name (':' param)*
//   param  := value | key '=' value
//   value  := token | '[' spec ']'
// A ',' followed by key=value continues the previous stage's params, so
// "pq:m=32,nbits=8" is one stage and "pca:128,int8" is two. Names, keys and
// tokens use [A-Za-z0-9_.+-]. A value in square brackets is a nested codec
// spec ("csr:density=0.25,values=[int4:group=32]"): it runs to the matching
// ']' (brackets nest), may hold ',' ':' '=' and brackets, and ends the param.
//
// A spec is at most one transform stage (pca:K, dims:K) followed by one
// codec; a transform alone stores its K values a row as fp32. Every codec has a fixed code size per
// row, with its scales stored inline in the row (see codec_math.hpp).
#pragma once

#include <edo/codec_math.hpp>
#include <edo/device.hpp>
#include <edo/io/limits.hpp>
#include <edo/pq_math.hpp>

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace edo {

// Which CPU implementation runs: the plain scalar one the others are checked
// against, or the OpenMP/SIMD one. Both give byte-identical results.
enum class Impl { reference, fast };

struct EncodeOptions {
  Device device = Device::cpu;
  Impl impl = Impl::fast;
  // NaN/Inf (and fp16/bf16 overflow) are errors unless set; then fp32, fp16
  // and bf16 store them as NaN/Inf, while other codecs still refuse.
  bool allow_nonfinite = false;
  // Rows the codec cannot store faithfully for their magnitude (values too
  // small for its steps or its arithmetic) are errors unless set; see
  // check_magnitudes(). Values too large for training arithmetic are errors always.
  bool allow_underflow = false;
  std::string input;       // names the input in error messages
  uint64_t first_row = 0;  // input row number of x[0], for error messages
  // Input row number of each x[i] when the rows were gathered (a packed
  // tier's rows); null: first_row + i. For error messages only.
  const uint64_t* row_ids = nullptr;
};

struct DecodeOptions {
  Device device = Device::cpu;
  Impl impl = Impl::fast;
};

// Whether the integer codecs' MSE search may take sixteen groups at once
// in AVX-512 registers where the CPU has AVX-512F (the default); tests turn
// it off to check the eight-lane AVX2 path on such a CPU (the same bytes).
void set_affine_search_avx512(bool allowed);

// How a state array is stored in its container section (FORMAT.md 9.8):
// little-endian float32; IEEE binary16; or, per row of the array's last
// axis, one int8 exponent e and the row's int8 codes q, each value q x 2^e
// ("int8_exp2"). The manifest's "state_dtypes" names the last two; their
// values are then exactly what the storage holds in memory too.
enum class StateStorage { f32, f16, i8 };

// Trained parameters as float arrays, for container sections.
struct NamedBlob {
  std::string name;             // e.g. "pca.mean"
  std::vector<uint64_t> shape;  // row-major
  std::vector<float> values;
  StateStorage storage = StateStorage::f32;
};

// The bytes of a blob's section, in its storage. Throws Error when an i8
// blob holds a value its storage cannot (values must come from
// round_to_int8_exp2).
std::vector<uint8_t> state_section_bytes(const NamedBlob& blob);
// Rounds each row of `row` values (the last one may be shorter) to what
// StateStorage::i8 holds: e the smallest exponent with every |value| <=
// 127 x 2^e, within [-128, 121] (0 for a row of zeros), each value q x 2^e
// with q = its value / 2^e rounded to the nearest integer, ties to even,
// and kept within [-127, 127] (values past 127 x 2^121 saturate). Values
// already so rounded stay the same bits.
void round_to_int8_exp2(std::vector<float>& values, uint64_t row);
// Their count, without building them.
uint64_t state_stored_bytes(const NamedBlob& blob);
// The bytes a section of `count` values in rows of `row` (the shape's last
// axis) takes in `storage`; nullopt when that overflows.
std::optional<uint64_t> state_section_size(StateStorage storage, uint64_t count, uint64_t row);
// The manifest's "state_dtypes" name of a storage: "float32", "float16" or "int8_exp2".
const char* state_dtype_name(StateStorage s);
// The storage a tier's manifest entry gives its state `role` in
// "state_dtypes" (float32 when it names none). Throws Error, prefixed by
// `where` ("FILE: tier 'NAME'"), when state_dtypes is not an object or
// names a dtype other than float32, float16 and int8_exp2.
StateStorage state_storage_in(const nlohmann::json& tier_entry, const std::string& role, const std::string& where);
// Fills blob.values from a section's bytes in `storage` (i8 rows: the
// length of blob.shape's last axis, the whole array when the shape is
// empty); false when the byte length is not `count` values of it, or an i8
// row holds a code of -128 or an exponent past 121 (which no writer makes
// and whose values could exceed float's range).
bool read_state_section(NamedBlob& blob, StateStorage storage, const void* data, uint64_t bytes, uint64_t count);

class AdcCodec;

// One instance is one codec configured for one input dimension.
// Where a trainable codec's train() reports its progress: lines (pass,
// error, time left) a tool shows on stderr, empty for none; and the device
// its assignment steps (k-means, rq's refit encodes) run on. A GPU gives
// the CPU's bits, so the state does not depend on it.
struct TrainingContext {
  std::function<void(const std::string&)> note;
  Device device = Device::cpu;
};

class Codec {
 public:
  virtual ~Codec() = default;
  virtual std::string spec() const = 0;  // canonical: parses back to the same codec
  virtual size_t dim() const = 0;        // input dimension
  virtual size_t code_size() const = 0;  // bytes per row
  virtual bool needs_training() const { return false; }
  // The largest relative error ||x - decoded|| / ||x|| the codec makes on a
  // row whose values lie in its normal range (docs/CLI.md, "Tiny and huge
  // values"); infinity where no bound holds a priori (trained codecs).
  virtual double row_error_bound() const;
  virtual bool is_trained() const { return true; }
  // Fits the codec on n rows (a sample); `seed` drives any random choice.
  virtual void train(const float* x, size_t n, uint64_t seed);
  // n rows of dim() floats -> n * code_size() bytes. Throws edo::Error on
  // non-finite input (see EncodeOptions) naming the input, row and column.
  virtual void encode(const float* x, size_t n, uint8_t* codes, const EncodeOptions& opt = {}) const = 0;
  virtual void decode(const uint8_t* codes, size_t n, float* x, const DecodeOptions& opt = {}) const = 0;
  // Code rows rows[k] of `codes` (row i at codes + i * code_size()) decoded
  // into x + dst[k] * dim(), for k < n, on the CPU: the reader's gather and
  // decode in one step. The default copies up to 256 code rows at a time
  // into a buffer, decodes them and scatters the rows; plain scalar codecs
  // decode each row in place. Same values as decode().
  virtual void decode_gather(const uint8_t* codes, const uint64_t* rows, const uint64_t* dst, size_t n, float* x) const;
  virtual std::vector<NamedBlob> state() const { return {}; }
  // Restores what state() returned; throws edo::Error on missing, extra or
  // mis-shaped blobs (they may come from a hostile file).
  virtual void load_state(const std::vector<NamedBlob>& blobs);
  // Non-null when codes can be scored against a query without decoding
  // (asymmetric distance computation: the pq family).
  virtual const AdcCodec* adc() const { return nullptr; }
  // How a long train() runs: see TrainingContext.
  void set_training_context(TrainingContext context) { training_ = std::move(context); }

 protected:
  TrainingContext training_;
};

// Asymmetric distance computation: a query's inner product with a decoded
// row is a sum of one table entry per sub-code, so a query is scored against
// codes through a lookup table built once per query. Squared distances and
// cosines add the decoded rows' norms (see AdcSearch in pq.hpp).
class AdcCodec {
 public:
  virtual ~AdcCodec() = default;
  virtual size_t adc_table_size() const = 0;  // floats per query
  // nq queries (dim floats each) -> nq tables.
  virtual void adc_tables(const float* queries, size_t nq, float* tables) const = 0;
  // Inner products of one query (its table) with n code rows.
  virtual void adc_inner_products(const float* table, const uint8_t* codes, size_t n, float* ip) const = 0;
};

// ---- magnitudes: one rule for every codec (docs/CLI.md, "Tiny and huge values") ----

// Row norms that float arithmetic in training and encoding (squared
// distances, inner products) handles: sqrt(2^-120) to sqrt(2^120).
inline constexpr double kMinTrainableNorm2 = 0x1p-120;
inline constexpr double kMaxTrainableNorm2 = 0x1p120;

// Checks rows for NaN/Inf and, for narrow floats, for values that would
// overflow to Inf (magnitude bits >= limit_bits). Throws naming the input,
// row (opt.row_ids[i], else opt.first_row + i) and column of the first
// offender; with passthrough_allowed the message offers --allow-nonfinite
// (and opt.allow_nonfinite skips the check).
void check_finite(const float* x, size_t n, size_t dim, uint32_t limit_bits, const std::string& spec,
                  const EncodeOptions& opt, bool passthrough_allowed);

// Refuses rows of x whose nonzero squared norm is outside the trainable
// range: above it always, below it unless opt.allow_underflow. Rows are
// named opt.input's row_ids[i] (or opt.first_row + i when row_ids is null).
void check_trainable_norms(const float* x, size_t n, size_t dim, const std::string& spec, const EncodeOptions& opt,
                           const uint64_t* row_ids = nullptr);

// The rule for one codec, judged from a row's sums in double: xx = ||x||^2,
// ee = ||x - y||^2 and yy = ||y||^2 of the row x and its decoded form y.
// Refused, unless opt.allow_underflow: a nonzero row decoded to all zeros, or
// one whose relative error exceeds the codec's row_error_bound(). Trained
// codecs also refuse norms as check_trainable_norms() does. Writers that
// already sum a decoded block (edo-quantize's error report) judge each row
// with it, with no pass of their own.
class MagnitudeRule {
 public:
  MagnitudeRule(const Codec& codec, const EncodeOptions& opt);
  bool refuses(double xx, double ee, double yy) const;
  // Throws naming opt.input and `row`, for a row refuses() refused.
  [[noreturn]] void fail(uint64_t row, double xx, double ee, double yy) const;

 private:
  const Codec& codec_;
  const EncodeOptions& opt_;
  bool trained_;
  double bound_, limit_;
};

// Applies MagnitudeRule to n rows and their decoded form y; throws naming
// the first refused row, opt.input's row_ids[i] (or opt.first_row + i).
void check_magnitudes(const Codec& codec, const float* x, const float* y, size_t n, const EncodeOptions& opt,
                      const uint64_t* row_ids = nullptr);

// ---- spec grammar ----------------------------------------------------------------

struct SpecParam {
  std::string key;  // empty for a positional value
  std::string value;
  bool operator==(const SpecParam&) const = default;
};

struct SpecStage {
  std::string name;
  std::vector<SpecParam> params;
  bool operator==(const SpecStage&) const = default;
};

// Splits a spec into stages; usage error on malformed text. A bracketed
// value is stored without its outer brackets (a spec that parse_spec and
// make_codec take as it is), and is checked as a spec itself.
std::vector<SpecStage> parse_spec(std::string_view spec);
// Prints stages in the grammar ("name:value:key=value,name2"), a value that
// holds any of , : = [ ] in brackets, so parse_spec(format_spec(s)) == s.
std::string format_spec(const std::vector<SpecStage>& stages);
// The format features (io::kFormatFeatures, FORMAT.md 8.1) a tier stored
// with this spec requires of a reader: "codec:int3", "scale=fp16", ... for
// every stage and every spec nested in a parameter (a group tier's
// residual), sorted, each once; empty for the features every 1.1 reader has.
std::vector<std::string> spec_format_features(std::string_view spec);
// Splits `text` at each `sep` outside square brackets (brackets nest): the one
// splitter for codec specs and the specs that embed them (tier specs). Usage
// error "WHAT 'TEXT': ..." on a ']' without its '[' or a '[' never closed.
std::vector<std::string_view> split_spec(std::string_view text, char sep, std::string_view what = "codec spec");

// ---- traits table ----------------------------------------------------------------

struct CodecTraits {
  const char* name;
  const char* grammar;       // e.g. "int4[:group=G]"
  const char* description;   // one line
  const char* bits_formula;  // bits per value, d = dim, G = group
  bool trainable;
  bool transform;  // a prefix stage that feeds another codec (pca, dims)
  // Builds the decoder for one stage at `dim` (make_decoder; for plain scalar
  // codecs the full codec); `inner` is the next codec for a transform (null
  // for a plain codec). Usage error on bad params or dim.
  std::unique_ptr<Codec> (*make)(const SpecStage& stage, size_t dim, std::unique_ptr<Codec> inner);
  // Output dimension of a transform stage (null for plain codecs).
  size_t (*output_dim)(const SpecStage& stage, size_t dim);
  // Bytes of the stage's trained state at input width `dim` as a file stores
  // it (a transform's inner codec is sized at the transform's output width),
  // from the spec alone; null for a codec that keeps no state.
  uint64_t (*state_bytes)(const SpecStage& stage, size_t dim) = nullptr;
  // The planner fits it on each candidate tier's own sample rows, as edo-pack
  // trains it on the tier's rows, instead of once on the whole sample: its
  // fit is the rows' own (tc's basis and variances) and cheap to redo.
  bool plan_fits_per_tier = false;
  // "codec:NAME" is a format feature a reader must know (FORMAT.md 8.1):
  // the codecs added after format 1.1.
  bool format_feature = false;
  // A spec of it that trains and encodes a 64-wide table (tests, examples).
  const char* example = nullptr;
};

// Every codec, in the order `--list` shows them.
const std::vector<CodecTraits>& codec_list();
const CodecTraits* find_codec(std::string_view name);  // null when unknown

// The codec of a spec as far as reading goes (make_codec, edo/make_codec.hpp,
// in the training library, builds the whole codec): spec, sizes, load_state, decode,
// decode_gather and ADC scoring, with no FAISS, BLAS or LAPACK behind it;
// train() and encode() of a trained codec throw. What edo::reader builds.
std::unique_ptr<Codec> make_decoder(std::string_view spec, size_t dim);
// Sizes without training, for footprint reports.
size_t code_size(std::string_view spec, size_t dim);
double bits_per_value(std::string_view spec, size_t dim);  // code_size * 8 / dim
std::string canonical_spec(std::string_view spec, size_t dim);

// The row layout of a plain scalar codec (fp32 ... bin), for kernels that
// decode codes in place; nullopt for any other codec (pca chains, PQ, ...).
std::optional<math::ScalarLayout> scalar_layout(const Codec& codec);

// A pq codec's geometry and its codebooks (m x ksub x dsub floats, owned by
// the codec), for kernels that fold centroids in place; nullopt for any
// other codec (opq's rotation, rq, pca chains, ...) or an untrained one.
struct PqLayout {
  math::PqGeometry geometry;
  const float* codebooks;
};
std::optional<PqLayout> pq_layout(const Codec& codec);

// Largest input dimension any codec accepts: the widest table.
inline constexpr size_t kMaxCodecDim = io::kMaxDim;

}  // namespace edo

// SPDX-License-Identifier: Apache-2.0
// edo-unpack: decode a .edo file back to fp32 rows.
#include "cli_common.hpp"

#include <edo/code_export.hpp>
#include <edo/device.hpp>
#include <edo/edo_file.hpp>
#include <edo/faiss_export.hpp>
#include <edo/io/files.hpp>
#include <edo/io/readers.hpp>
#include <edo/io/table.hpp>
#include <edo/io/vocab.hpp>
#include <edo/io/word2vec.hpp>
#include <edo/knn.hpp>
#include <edo/model.hpp>
#include <edo/shard_set.hpp>

#include <fmt/ranges.h>

#include <unistd.h>

namespace {

// edo-unpack's flags.
struct UnpackFlags {
  std::string input, output, device = "cpu", dtype = "float32", to = "auto", vocab, metric = "l2", fbgemm_type, table;
  bool quiet = false, codes = false, force = false, json = false;
  bool metric_given = false, row_alignment_given = false;  // --metric, --row-alignment given
  uint32_t row_alignment = 16;
  int threads = 0;

  void add_to(CLI::App& app) {
    app.add_option("INPUT", input, "A .edo file, a model file of several tables, or a shard set (edo-pack --shard-set)")
        ->required();
    app.add_option(
           "-o,--output", output,
           "x.npy, x.h5:/dataset, x.safetensors[:tensor] (default tensor name: embeddings), x.vec or x.txt\n"
           "(word2vec text), x.bin (word2vec binary), x.faiss or x.index (a FAISS index), or - (npy on stdout).\n"
           "A model file without --table: x.safetensors (a tensor a table) or x.h5 (a dataset a table, at\n"
           "/NAME; a '/' in a name makes groups), every table under its own name")
        ->required();
    app.add_option("--table", table,
                   "A model file's table to unpack alone, by name (to any output above); on a one-table file,\n"
                   "its name (the manifest's table_name, else 'table')");
    app.add_option("--to", to,
                   "The output format when its name does not say: npy, hdf5, safetensors, word2vec (text),\n"
                   "word2vec-bin, faiss, or fbgemm (FBGEMM IntNBitTableBatchedEmbeddingBagsCodegen weight rows,\n"
                   "uint8 rows x row_bytes in x.npy or x.safetensors:name; default auto: by the output's name)")
        ->check(CLI::IsMember({"auto", "npy", "hdf5", "safetensors", "word2vec", "word2vec-bin", "faiss", "fbgemm"}));
    app.add_flag("--codes", codes,
                 "safetensors: the file's codes as stored, not decoded: NAME.codes (U8, or the fp8/fp16 values),\n"
                 "NAME.scales and NAME.offsets (F32 per row or group) or NAME.state.* (codebooks), the codec in\n"
                 "__metadata__; every tool reads x.safetensors:NAME back as the decoded table (docs/PACK.md)");
    app.add_option("--fbgemm-type", fbgemm_type,
                   "fbgemm: INT8, INT4 or INT2 rows [fp16 scale][fp16 bias][codes] (default: the file's int8/int4/\n"
                   "int2 row-wise codec, else INT8); rows are quantized again where the codes do not map one to one,\n"
                   "and the added error is reported")
        ->transform(CLI::IsMember({"int8", "int4", "int2"}, CLI::ignore_case));
    app.add_option("--row-alignment", row_alignment,
                   "fbgemm: row bytes rounded up to this power of two (default 16, FBGEMM's on CUDA; 1 on its CPU)");
    app.add_option(
           "--metric", metric,
           "faiss: the index's metric, l2 (default), ip, or cos (inner product over unit rows; normalise\n"
           "queries too). fp16, pq, opq, rq and pca:K[,fp16] files keep their codes under l2 and ip (docs/PACK.md)")
        ->check(CLI::IsMember({"l2", "ip", "cos"}));
    app.add_option("--vocab", vocab,
                   "word2vec outputs: the word of each row, one a line (default: the words the file stores)");
    app.add_option("--dtype", dtype,
                   "float32 (default), float16 or bfloat16 (safetensors only): the values are rounded to it "
                   "(to nearest, ties to even)")
        ->check(CLI::IsMember({"float32", "float16", "bfloat16"}));
    app.add_option("--device", device,
                   "cpu (default), cuda (decode each block on the GPU: an error without one) or auto (the GPU when "
                   "present); the rows are the same either way");
    edo::cli::add_force_container_flag(app, force);
    app.add_flag("--json", json,
                 "Print what was written as JSON on stdout (input, output, format, rows, dim, dtype, bytes; the\n"
                 "FAISS index kind or FBGEMM rows' figures); not with -o - (stdout carries the rows)");
    edo::cli::add_threads_option(app, threads);
    app.add_flag("-q,--quiet", quiet, "No progress on stderr");
  }
};

// What is written, as the flags decide it (usage errors before any work).
struct OutputPlan {
  std::string out_file;  // the file part of -o
  std::string format;    // npy, hdf5, safetensors, word2vec, word2vec-bin, faiss or fbgemm
  edo::io::DType out_type = edo::io::DType::f32;
  bool special_npy = false;  // npy to a device or FIFO, which has no extension to say its format
  bool words = false;        // word2vec, text or binary
  edo::io::OtherContents others = edo::io::OtherContents::refuse;
};

// The format the output's name says; --to must agree, or decide for a name that says none.
std::string output_format(const UnpackFlags& f, std::string& named, bool& fbgemm_named) {
  const std::string& output = f.output;
  const std::string path = output.substr(0, output.find(':'));
  named = output.find(".safetensors") != std::string::npos       ? "safetensors"
          : path.ends_with(".h5") || path.ends_with(".hdf5")     ? "hdf5"
          : path.ends_with(".npy") || output == "-"              ? "npy"
          : path.ends_with(".vec") || path.ends_with(".txt")     ? "word2vec"
          : path.ends_with(".bin")                               ? "word2vec-bin"
          : path.ends_with(".faiss") || path.ends_with(".index") ? "faiss"
                                                                 : "";
  fbgemm_named = f.to == "fbgemm" && (named == "npy" || named == "safetensors");
  if (f.to != "auto" && !named.empty() && f.to != named && !(f.to == "word2vec-bin" && named == "word2vec") &&
      !fbgemm_named)
    EDO_USAGE_FAIL("--to {}: -o {} names {}", f.to, output, named);
  const std::string format = f.to != "auto" ? f.to : named;
  if (format.empty())
    EDO_USAGE_FAIL("-o {}: the name says no format (.npy, .h5:/dataset, .safetensors, .vec, .bin, .faiss); give --to",
                   output);
  return format;
}

OutputPlan plan_output(const UnpackFlags& f) {
  const std::string& output = f.output;
  const std::string& vocab = f.vocab;
  if (output == "-" && ::isatty(STDOUT_FILENO)) EDO_USAGE_FAIL("refusing to write binary .npy to a terminal");
  if (output == "-" && f.json) EDO_USAGE_FAIL("--json: with -o -, stdout carries the rows");
  OutputPlan p;
  const size_t st = output.find(".safetensors:");
  p.out_file = st != std::string::npos ? output.substr(0, st + 12) : output.substr(0, output.find(':'));
  edo::cli::PathGuard().input(f.input).input(vocab).output("-o", p.out_file).check();
  p.out_type = f.dtype == "float16"    ? edo::io::DType::f16
               : f.dtype == "bfloat16" ? edo::io::DType::bf16
                                       : edo::io::DType::f32;
  if (p.out_type == edo::io::DType::bf16 && output.find(".safetensors") == std::string::npos)
    EDO_USAGE_FAIL("--dtype bfloat16: npy and HDF5 have no bfloat16; write x.safetensors");
  std::string named;
  bool fbgemm_named = false;
  p.format = output_format(f, named, fbgemm_named);
  const std::string& format = p.format;
  // A device or FIFO has no extension to say its format: --to npy names it.
  p.special_npy = format == "npy" && edo::io::is_special_output(output);
  if ((format == "npy" || format == "hdf5") && named != format && !p.special_npy)
    EDO_USAGE_FAIL("--to {}: name the output x.{}", format, format == "npy" ? "npy" : "h5:/dataset");
  p.words = format == "word2vec" || format == "word2vec-bin";
  const bool f32 = p.out_type == edo::io::DType::f32;
  if (format == "faiss" && (!vocab.empty() || !f32))
    EDO_USAGE_FAIL("--vocab and --dtype do not apply to a FAISS index");
  if (format != "faiss" && f.metric_given) EDO_USAGE_FAIL("--metric is for FAISS outputs (x.faiss, --to faiss)");
  if (!p.words && format != "faiss" && !vocab.empty())
    EDO_USAGE_FAIL("--vocab goes with word2vec outputs (.vec, .txt, .bin)");
  if (p.words && !f32) EDO_USAGE_FAIL("--dtype: word2vec files hold float32");
  if (format == "fbgemm" && !fbgemm_named) EDO_USAGE_FAIL("--to fbgemm: name the output x.npy or x.safetensors:name");
  if (format == "fbgemm" && (!vocab.empty() || !f32)) EDO_USAGE_FAIL("--vocab and --dtype do not apply to FBGEMM rows");
  if (format != "fbgemm" && (!f.fbgemm_type.empty() || f.row_alignment_given))
    EDO_USAGE_FAIL("--fbgemm-type and --row-alignment are for --to fbgemm");
  if (f.codes && (format != "safetensors" || !f32))
    EDO_USAGE_FAIL("--codes writes a safetensors file of the stored codes (x.safetensors[:name]), no --dtype");
  p.others = f.force ? edo::io::OtherContents::replace : edo::io::OtherContents::refuse;
  // create_table() checks a decoded table's container itself; the writers
  // of stored codes and FBGEMM rows are checked here.
  if (f.codes || format == "fbgemm") {
    const size_t colon = output.find(".safetensors:");
    if (colon != std::string::npos)
      edo::io::check_existing_container(output.substr(0, colon + 12), output.substr(colon + 13), p.others);
    else if (output.ends_with(".safetensors"))
      edo::io::check_existing_container(output, "embeddings", p.others);
  }
  return p;
}

// FBGEMM rows of one file; the added error on stderr (even with --quiet: a user must know it).
void write_fbgemm(const UnpackFlags& f, edo::EdoTable& one_file, nlohmann::json& summary) {
  const std::optional<edo::FbgemmType> own = edo::fbgemm_type_of(one_file);
  const edo::FbgemmType type = f.fbgemm_type == "int4"   ? edo::FbgemmType::int4
                               : f.fbgemm_type == "int2" ? edo::FbgemmType::int2
                               : f.fbgemm_type == "int8" ? edo::FbgemmType::int8
                                                         : own.value_or(edo::FbgemmType::int8);
  const edo::FbgemmExport r = edo::export_fbgemm(one_file, f.output, type, f.row_alignment);
  std::fprintf(stderr,
               "edo-unpack: %s -> %s: FBGEMM %s rows of %llu bytes; %llu rows keep the file's codes, %llu "
               "quantized again; added error %.4g (relative, Frobenius), worst row %.3g\n",
               f.input.c_str(), f.output.c_str(), edo::fbgemm_type_name(type),
               static_cast<unsigned long long>(r.row_bytes), static_cast<unsigned long long>(r.rows_codes_kept),
               static_cast<unsigned long long>(r.rows_requantized), r.added_rel_error, r.added_row_rel_error_max);
  summary["fbgemm"] = {{"type", edo::fbgemm_type_name(type)},  {"row_bytes", r.row_bytes},
                       {"rows_codes_kept", r.rows_codes_kept}, {"rows_requantized", r.rows_requantized},
                       {"added_rel_error", r.added_rel_error}, {"added_row_rel_error_max", r.added_row_rel_error_max}};
}

// The decoded rows, streamed block by block into npy, HDF5, safetensors or word2vec.
void write_decoded(const UnpackFlags& f, const OutputPlan& p, edo::io::TableReader& table) {
  const std::vector<std::string>* stored = table.vocabulary();
  if (p.words && f.vocab.empty() && !stored)
    EDO_USAGE_FAIL("-o {}: a word2vec file names each row and {} stores no words: give --vocab FILE", f.output,
                   f.input);
  // x.safetensors with no tensor named: a table taken from a model goes back
  // under its recorded name (FORMAT.md 5.1), others under "embeddings".
  std::string target = f.output;
  if (const auto* edo_table = dynamic_cast<const edo::EdoTable*>(&table); edo_table && target.ends_with(".safetensors"))
    if (const auto& m = edo_table->reader().container().manifest(); m.contains(edo::kTableNameKey))
      target += ":" + m[edo::kTableNameKey].get<std::string>();
  std::unique_ptr<edo::io::TableWriter> writer =
      p.words         ? edo::io::create_word2vec(f.output, table.rows(), table.dim(),
                                         f.vocab.empty() ? *stored : edo::io::read_vocab(f.vocab, table.rows()),
                                                 p.format == "word2vec-bin")
      : p.special_npy ? edo::io::create_npy(f.output, table.rows(), table.dim(), p.out_type)
                      : edo::io::create_table(target, table.rows(), table.dim(), p.out_type, p.others);
  edo::cli::Progress progress("edo-unpack", f.quiet);
  auto report = progress.callback();
  const uint64_t block = table.block_rows();
  for (uint64_t begin = 0; begin < table.rows(); begin += block) {
    const uint64_t n = std::min(block, table.rows() - begin);
    writer->write_f32(table.rows_f32(begin, n), n);
    if (report) report(begin + n, table.rows());
  }
  writer->commit();
}

// The summary goes to stdout once the output is in place.
void print_summary(const UnpackFlags& f, const OutputPlan& p, nlohmann::json& summary) {
  struct stat info {};
  if (!edo::io::is_special_output(p.out_file) && ::stat(p.out_file.c_str(), &info) == 0)
    summary["bytes"] = static_cast<uint64_t>(info.st_size);
  if (f.json) std::puts(summary.dump(2).c_str());
}

// A model file without --table: every table into one safetensors or HDF5 file, under its name.
int run_model(const UnpackFlags& f, const OutputPlan& p, const edo::Reader& model) {
  const std::vector<std::string> names = model.tables();
  const bool member = p.out_file != f.output;  // x.safetensors:tensor, x.h5:/dataset
  if ((p.format != "safetensors" && p.format != "hdf5") || f.codes || member || p.special_npy)
    EDO_USAGE_FAIL(
        "{}: a model file of {} tables ({}{}): -o x.safetensors or x.h5 writes every one under its name; "
        "--table NAME unpacks one{}",
        f.input, names.size(), fmt::join(names.begin(), names.begin() + std::min<size_t>(names.size(), 20), ", "),
        names.size() > 20 ? ", ..." : "", f.codes ? " (--codes needs --table)" : "");
  edo::cli::Progress progress("edo-unpack", f.quiet);
  nlohmann::json summary = edo::unpack_model(model, p.out_file, p.out_type, p.others, progress.callback());
  summary["input"] = f.input;
  summary["output"] = f.output;
  summary["format"] = p.format;
  summary["dtype"] = edo::io::dtype_name(p.out_type);
  print_summary(f, p, summary);
  return 0;
}

int run(const UnpackFlags& f) {
  edo::cli::apply_threads(f.threads);
  const OutputPlan p = plan_output(f);
  const std::string& input = f.input;
  const std::string& format = p.format;
  // Usage checked: now the file (every checksum verified first).
  const bool set = edo::is_shard_set_file(input);
  if (set && (format == "faiss" || format == "fbgemm" || f.codes))
    EDO_USAGE_FAIL(
        "{}: a shard set decodes to npy, HDF5, safetensors or word2vec; FAISS, FBGEMM and --codes "
        "need one file (edo-pack --merge)",
        input);
  if (set && !f.table.empty()) EDO_USAGE_FAIL("--table {}: {} is a shard set, one table", f.table, input);
  std::shared_ptr<const edo::Reader> opened =
      set ? nullptr : edo::EdoTable::open_reader(input, edo::io::Verify::all, edo::select_device(f.device));
  if (opened && opened->is_model() && f.table.empty()) return run_model(f, p, *opened);
  std::unique_ptr<edo::io::TableReader> table =
      set ? edo::open_shard_set_table(input, edo::io::Verify::all)
          : std::unique_ptr<edo::io::TableReader>(
                edo::EdoTable::open_table(opened, f.table.empty() ? opened->tables().front() : f.table));
  edo::EdoTable* one_file = dynamic_cast<edo::EdoTable*>(table.get());
  nlohmann::json summary = {
      {"input", input}, {"output", f.output}, {"format", format}, {"rows", table->rows()}, {"dim", table->dim()}};
  if (format == "faiss") {
    const edo::FaissIndexKind kind = edo::export_faiss_index(*one_file, f.output, edo::parse_metric(f.metric));
    if (!f.quiet && !f.json)
      std::fprintf(stderr, "edo-unpack: %s -> %s: %s\n", input.c_str(), f.output.c_str(),
                   edo::faiss_index_kind_name(kind));
    summary["faiss_index"] = edo::faiss_index_kind_name(kind);
  } else if (format == "fbgemm") {
    write_fbgemm(f, *one_file, summary);
  } else if (f.codes) {
    const size_t colon = f.output.find(".safetensors:");
    const std::string file = colon == std::string::npos ? f.output : f.output.substr(0, colon + 12);
    edo::export_safetensors_codes(*one_file, file,
                                  colon == std::string::npos ? "embeddings" : f.output.substr(colon + 13));
    summary["codes"] = true;
  } else {
    write_decoded(f, p, *table);
    summary["dtype"] = p.words ? "float32" : edo::io::dtype_name(p.out_type);
  }
  if (!f.table.empty()) summary["table"] = f.table;
  print_summary(f, p, summary);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Decode a .edo file to float32, streaming: every checksum is verified first.\n\n"
      "Examples:\n"
      "  edo-unpack glove.int8.edo -o glove.int8.npy\n"
      "  edo-unpack glove.int8.edo -o decoded.h5:/emb\n"
      "  edo-unpack glove.int8.edo -o decoded.safetensors:embed_tokens.weight --dtype bfloat16\n"
      "  edo-unpack glove.int8.edo -o glove.int8.vec --vocab glove.vocab.txt        (word2vec text)\n"
      "  edo-unpack glove.int8.edo -o glove.int8.bin --vocab glove.vocab.txt        (word2vec binary)\n"
      "  edo-unpack glove.pq.edo -o glove.pq.faiss --metric l2    (IndexPQ over the file's codes)\n"
      "  edo-unpack glove.int4.edo -o glove.int4.safetensors:emb --codes    (U8 codes, F32 scales and offsets)\n"
      "  edo-unpack glove.int4.edo -o glove.fbgemm.npy --to fbgemm   (IntNBit INT4 rows for FBGEMM/TorchRec)\n"
      "  edo-unpack model.edo -o model.int8.safetensors     (a model file: every table under its name)\n"
      "  edo-unpack model.edo --table emb.words.weight -o words.npy\n"
      "  edo-unpack glove.int8.edo -o - | python -c 'import numpy,sys; print(numpy.load(sys.stdin.buffer).shape)'",
      "edo-unpack"};
  UnpackFlags flags;
  flags.add_to(app);
  edo::cli::add_version_flag(app, "edo-unpack");
  return edo::cli::run_tool("edo-unpack", app, argc, argv, [&] {
    flags.metric_given = app.count("--metric") > 0;
    flags.row_alignment_given = app.count("--row-alignment") > 0;
    return run(flags);
  });
}

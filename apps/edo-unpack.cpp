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
#include <edo/shard_set.hpp>

#include <unistd.h>

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
      "  edo-unpack glove.int8.edo -o - | python -c 'import numpy,sys; print(numpy.load(sys.stdin.buffer).shape)'",
      "edo-unpack"};
  std::string input, output, device = "cpu", dtype = "float32", to = "auto", vocab, metric = "l2", fbgemm_type;
  bool quiet = false, codes = false, force = false, json = false;
  uint32_t row_alignment = 16;
  int threads = 0;
  app.add_option("INPUT", input, "A .edo file, or a shard set (edo-pack --shard-set)")->required();
  app.add_option("-o,--output", output,
                 "x.npy, x.h5:/dataset, x.safetensors[:tensor] (default tensor name: embeddings), x.vec or x.txt\n"
                 "(word2vec text), x.bin (word2vec binary), x.faiss or x.index (a FAISS index), or - (npy on stdout)")
      ->required();
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
  edo::cli::add_version_flag(app, "edo-unpack");

  return edo::cli::run_tool("edo-unpack", app, argc, argv, [&] {
    edo::cli::apply_threads(threads);
    if (output == "-" && ::isatty(STDOUT_FILENO)) EDO_USAGE_FAIL("refusing to write binary .npy to a terminal");
    if (output == "-" && json) EDO_USAGE_FAIL("--json: with -o -, stdout carries the rows");
    const size_t st = output.find(".safetensors:");
    const std::string out_file =
        st != std::string::npos ? output.substr(0, st + 12) : output.substr(0, output.find(':'));
    edo::cli::PathGuard().input(input).input(vocab).output("-o", out_file).check();
    const edo::io::DType out_type = dtype == "float16"    ? edo::io::DType::f16
                                    : dtype == "bfloat16" ? edo::io::DType::bf16
                                                          : edo::io::DType::f32;
    if (out_type == edo::io::DType::bf16 && output.find(".safetensors") == std::string::npos)
      EDO_USAGE_FAIL("--dtype bfloat16: npy and HDF5 have no bfloat16; write x.safetensors");
    // The format the output's name says; --to must agree, or decide for a name that says none.
    const std::string path = output.substr(0, output.find(':'));
    const std::string named = output.find(".safetensors") != std::string::npos       ? "safetensors"
                              : path.ends_with(".h5") || path.ends_with(".hdf5")     ? "hdf5"
                              : path.ends_with(".npy") || output == "-"              ? "npy"
                              : path.ends_with(".vec") || path.ends_with(".txt")     ? "word2vec"
                              : path.ends_with(".bin")                               ? "word2vec-bin"
                              : path.ends_with(".faiss") || path.ends_with(".index") ? "faiss"
                                                                                     : "";
    const bool fbgemm_named = to == "fbgemm" && (named == "npy" || named == "safetensors");
    if (to != "auto" && !named.empty() && to != named && !(to == "word2vec-bin" && named == "word2vec") &&
        !fbgemm_named)
      EDO_USAGE_FAIL("--to {}: -o {} names {}", to, output, named);
    const std::string format = to != "auto" ? to : named;
    if (format.empty())
      EDO_USAGE_FAIL("-o {}: the name says no format (.npy, .h5:/dataset, .safetensors, .vec, .bin, .faiss); give --to",
                     output);
    // A device or FIFO has no extension to say its format: --to npy names it.
    const bool special_npy = format == "npy" && edo::io::is_special_output(output);
    if ((format == "npy" || format == "hdf5") && named != format && !special_npy)
      EDO_USAGE_FAIL("--to {}: name the output x.{}", format, format == "npy" ? "npy" : "h5:/dataset");
    const bool words = format == "word2vec" || format == "word2vec-bin";
    if (format == "faiss" && (!vocab.empty() || out_type != edo::io::DType::f32))
      EDO_USAGE_FAIL("--vocab and --dtype do not apply to a FAISS index");
    if (format != "faiss" && app.count("--metric") > 0)
      EDO_USAGE_FAIL("--metric is for FAISS outputs (x.faiss, --to faiss)");
    if (!words && format != "faiss" && !vocab.empty())
      EDO_USAGE_FAIL("--vocab goes with word2vec outputs (.vec, .txt, .bin)");
    if (words && out_type != edo::io::DType::f32) EDO_USAGE_FAIL("--dtype: word2vec files hold float32");
    if (format == "fbgemm" && !fbgemm_named) EDO_USAGE_FAIL("--to fbgemm: name the output x.npy or x.safetensors:name");
    if (format == "fbgemm" && (!vocab.empty() || out_type != edo::io::DType::f32))
      EDO_USAGE_FAIL("--vocab and --dtype do not apply to FBGEMM rows");
    if (format != "fbgemm" && (!fbgemm_type.empty() || app.count("--row-alignment") > 0))
      EDO_USAGE_FAIL("--fbgemm-type and --row-alignment are for --to fbgemm");
    if (codes && (format != "safetensors" || out_type != edo::io::DType::f32))
      EDO_USAGE_FAIL("--codes writes a safetensors file of the stored codes (x.safetensors[:name]), no --dtype");
    const edo::io::OtherContents others = force ? edo::io::OtherContents::replace : edo::io::OtherContents::refuse;
    // create_table() checks a decoded table's container itself; the writers
    // of stored codes and FBGEMM rows are checked here.
    if (codes || format == "fbgemm") {
      const size_t colon = output.find(".safetensors:");
      if (colon != std::string::npos)
        edo::io::check_existing_container(output.substr(0, colon + 12), output.substr(colon + 13), others);
      else if (output.ends_with(".safetensors"))
        edo::io::check_existing_container(output, "embeddings", others);
    }
    // Usage checked: now the file (every checksum verified first).
    const bool set = edo::is_shard_set_file(input);
    if (set && (format == "faiss" || format == "fbgemm" || codes))
      EDO_USAGE_FAIL(
          "{}: a shard set decodes to npy, HDF5, safetensors or word2vec; FAISS, FBGEMM and --codes "
          "need one file (edo-pack --merge)",
          input);
    std::unique_ptr<edo::io::TableReader> table = set ? edo::open_shard_set_table(input, edo::io::Verify::all)
                                                      : std::unique_ptr<edo::io::TableReader>(edo::EdoTable::open(
                                                            input, edo::io::Verify::all, edo::select_device(device)));
    edo::EdoTable* one_file = dynamic_cast<edo::EdoTable*>(table.get());
    nlohmann::json summary = {
        {"input", input}, {"output", output}, {"format", format}, {"rows", table->rows()}, {"dim", table->dim()}};
    // The summary goes to stdout once the output is in place.
    const auto written = [&] {
      struct stat info {};
      if (!edo::io::is_special_output(out_file) && ::stat(out_file.c_str(), &info) == 0)
        summary["bytes"] = static_cast<uint64_t>(info.st_size);
      if (json) std::puts(summary.dump(2).c_str());
      return 0;
    };
    if (format == "faiss") {
      const edo::FaissIndexKind kind = edo::export_faiss_index(*one_file, output, edo::parse_metric(metric));
      if (!quiet && !json)
        std::fprintf(stderr, "edo-unpack: %s -> %s: %s\n", input.c_str(), output.c_str(),
                     edo::faiss_index_kind_name(kind));
      summary["faiss_index"] = edo::faiss_index_kind_name(kind);
      return written();
    }
    if (format == "fbgemm") {
      const std::optional<edo::FbgemmType> own = edo::fbgemm_type_of(*one_file);
      const edo::FbgemmType type = fbgemm_type == "int4"   ? edo::FbgemmType::int4
                                   : fbgemm_type == "int2" ? edo::FbgemmType::int2
                                   : fbgemm_type == "int8" ? edo::FbgemmType::int8
                                                           : own.value_or(edo::FbgemmType::int8);
      const edo::FbgemmExport r = edo::export_fbgemm(*one_file, output, type, row_alignment);
      // The added error is what a user must know: printed even with --quiet.
      std::fprintf(stderr,
                   "edo-unpack: %s -> %s: FBGEMM %s rows of %llu bytes; %llu rows keep the file's codes, %llu "
                   "quantized again; added error %.4g (relative, Frobenius), worst row %.3g\n",
                   input.c_str(), output.c_str(), edo::fbgemm_type_name(type),
                   static_cast<unsigned long long>(r.row_bytes), static_cast<unsigned long long>(r.rows_codes_kept),
                   static_cast<unsigned long long>(r.rows_requantized), r.added_rel_error, r.added_row_rel_error_max);
      summary["fbgemm"] = {
          {"type", edo::fbgemm_type_name(type)},  {"row_bytes", r.row_bytes},
          {"rows_codes_kept", r.rows_codes_kept}, {"rows_requantized", r.rows_requantized},
          {"added_rel_error", r.added_rel_error}, {"added_row_rel_error_max", r.added_row_rel_error_max}};
      return written();
    }
    if (codes) {
      const size_t colon = output.find(".safetensors:");
      const std::string file = colon == std::string::npos ? output : output.substr(0, colon + 12);
      edo::export_safetensors_codes(*one_file, file,
                                    colon == std::string::npos ? "embeddings" : output.substr(colon + 13));
      summary["codes"] = true;
      return written();
    }
    const std::vector<std::string>* stored = table->vocabulary();
    if (words && vocab.empty() && !stored)
      EDO_USAGE_FAIL("-o {}: a word2vec file names each row and {} stores no words: give --vocab FILE", output, input);
    std::unique_ptr<edo::io::TableWriter> writer =
        words         ? edo::io::create_word2vec(output, table->rows(), table->dim(),
                                         vocab.empty() ? *stored : edo::io::read_vocab(vocab, table->rows()),
                                                 format == "word2vec-bin")
        : special_npy ? edo::io::create_npy(output, table->rows(), table->dim(), out_type)
                      : edo::io::create_table(output, table->rows(), table->dim(), out_type, others);
    edo::cli::Progress progress("edo-unpack", quiet);
    auto report = progress.callback();
    const uint64_t block = table->block_rows();
    for (uint64_t begin = 0; begin < table->rows(); begin += block) {
      const uint64_t n = std::min(block, table->rows() - begin);
      writer->write_f32(table->rows_f32(begin, n), n);
      if (report) report(begin + n, table->rows());
    }
    writer->commit();
    summary["dtype"] = words ? "float32" : edo::io::dtype_name(out_type);
    return written();
  });
}

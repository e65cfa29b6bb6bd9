// edo-unpack: decode a .edo file back to fp32 rows.
#include "cli_common.hpp"

#include <edo/device.hpp>
#include <edo/edo_file.hpp>
#include <edo/io/files.hpp>
#include <edo/io/table.hpp>

#include <unistd.h>

int main(int argc, char** argv) {
  CLI::App app{
      "Decode a .edo file to float32, streaming: every checksum is verified first.\n\n"
      "Examples:\n"
      "  edo-unpack glove.int8.edo -o glove.int8.npy\n"
      "  edo-unpack glove.int8.edo -o decoded.h5:/emb\n"
      "  edo-unpack glove.int8.edo -o decoded.safetensors:embed_tokens.weight --dtype bfloat16\n"
      "  edo-unpack glove.int8.edo -o - | python -c 'import numpy,sys; print(numpy.load(sys.stdin.buffer).shape)'",
      "edo-unpack"};
  std::string input, output, device = "cpu", dtype = "float32";
  bool quiet = false;
  int threads = 0;
  app.add_option("INPUT", input, "A .edo file")->required();
  app.add_option("-o,--output", output,
                 "x.npy, x.h5:/dataset, x.safetensors[:tensor] (default tensor name: embeddings), or - (npy on "
                 "stdout)")
      ->required();
  app.add_option("--dtype", dtype,
                 "float32 (default), float16 or bfloat16 (safetensors only): the values are rounded to it "
                 "(to nearest, ties to even)")
      ->check(CLI::IsMember({"float32", "float16", "bfloat16"}));
  app.add_option("--device", device,
                 "cpu (default), cuda (decode each block on the GPU: an error without one) or auto (the GPU when "
                 "present); the rows are the same either way");
  edo::cli::add_threads_option(app, threads);
  app.add_flag("-q,--quiet", quiet, "No progress on stderr");
  edo::cli::add_version_flag(app, "edo-unpack");

  return edo::cli::run_tool("edo-unpack", app, argc, argv, [&] {
    edo::cli::apply_threads(threads);
    if (output == "-" && ::isatty(STDOUT_FILENO)) EDO_USAGE_FAIL("refusing to write binary .npy to a terminal");
    const size_t st = output.find(".safetensors:");
    edo::cli::PathGuard()
        .input(input)
        .output("-o", st != std::string::npos ? output.substr(0, st + 12) : output.substr(0, output.find(':')))
        .check();
    auto table = edo::EdoTable::open(input, edo::io::Verify::all, edo::select_device(device));
    const edo::io::DType out_type = dtype == "float16"    ? edo::io::DType::f16
                                    : dtype == "bfloat16" ? edo::io::DType::bf16
                                                          : edo::io::DType::f32;
    if (out_type == edo::io::DType::bf16 && output.find(".safetensors") == std::string::npos)
      EDO_USAGE_FAIL("--dtype bfloat16: npy and HDF5 have no bfloat16; write x.safetensors");
    auto writer = edo::io::create_table(output, table->rows(), table->dim(), out_type);
    edo::cli::Progress progress("edo-unpack", quiet);
    auto report = progress.callback();
    const uint64_t block = table->block_rows();
    for (uint64_t begin = 0; begin < table->rows(); begin += block) {
      const uint64_t n = std::min(block, table->rows() - begin);
      writer->write_f32(table->rows_f32(begin, n), n);
      if (report) report(begin + n, table->rows());
    }
    writer->commit();
    return 0;
  });
}

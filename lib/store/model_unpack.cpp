// SPDX-License-Identifier: Apache-2.0
// edo-unpack of a model file: every table decoded into one safetensors or
// HDF5 file under its name, one block of rows at a time.
#include <edo/io/table.hpp>
#include <edo/model.hpp>
#include <edo/reader.hpp>

#include <algorithm>
#include <vector>

namespace edo {

nlohmann::json unpack_model(const Reader& model, const std::string& out_path, io::DType dtype, io::OtherContents others,
                            const std::function<void(uint64_t, uint64_t)>& progress) {
  std::vector<const Reader*> tables;
  std::vector<io::NamedTableShape> shapes;
  uint64_t total = 0;
  for (const std::string& name : model.tables()) {
    const Reader& t = model.table(name);
    tables.push_back(&t);
    shapes.push_back({name, t.rows(), t.dim()});
    total += t.rows();
  }
  std::unique_ptr<io::MultiTableWriter> writer = io::create_tables(out_path, shapes, dtype, others);
  nlohmann::json listed = nlohmann::json::array();
  std::vector<float> block;
  uint64_t done = 0;
  for (size_t i = 0; i < tables.size(); ++i) {
    const Reader& t = *tables[i];
    const uint64_t block_rows = std::max<uint64_t>(1, io::kDefaultBlockBytes / (t.dim() * sizeof(float)));
    for (uint64_t begin = 0; begin < t.rows(); begin += block_rows) {
      const uint64_t n = std::min(block_rows, t.rows() - begin);
      block.resize(n * t.dim());
      t.decode_rows(begin, n, block.data());
      writer->write_f32(i, block.data(), n);
      done += n;
      if (progress) progress(done, total);
    }
    listed.push_back({{"name", shapes[i].name}, {"rows", t.rows()}, {"dim", t.dim()}});
  }
  writer->commit();
  return {{"tables", listed}, {"rows", total}};
}

}  // namespace edo

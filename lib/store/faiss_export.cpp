// SPDX-License-Identifier: Apache-2.0
#include <edo/edo_file.hpp>
#include <edo/error.hpp>
#include <edo/faiss_export.hpp>
#include <edo/io/files.hpp>
#include <edo/pq_math.hpp>

#include <faiss/IndexAdditiveQuantizer.h>
#include <faiss/IndexFlat.h>
#include <faiss/IndexPQ.h>
#include <faiss/IndexPreTransform.h>
#include <faiss/IndexScalarQuantizer.h>
#include <faiss/VectorTransform.h>
#include <faiss/impl/FaissException.h>
#include <faiss/impl/io.h>
#include <faiss/index_io.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

namespace edo {

const char* faiss_index_kind_name(FaissIndexKind kind) {
  switch (kind) {
    case FaissIndexKind::scalar_fp16:
      return "IndexScalarQuantizer (QT_fp16, the file's codes)";
    case FaissIndexKind::pq:
      return "IndexPQ (the file's codebooks and codes)";
    case FaissIndexKind::opq:
      return "IndexPreTransform (the OPQ rotation) over IndexPQ (the file's codebooks and codes)";
    case FaissIndexKind::rq:
      return "IndexResidualQuantizer (the file's codebooks and codes, decompressed to search)";
    case FaissIndexKind::pca:
      return "IndexPreTransform (the PCA basis as a LinearTransform) over the file's codes (IndexFlat or fp16 "
             "IndexScalarQuantizer)";
    case FaissIndexKind::flat:
      break;
  }
  return "IndexFlat (the decoded rows)";
}

namespace {

faiss::MetricType faiss_metric(Metric m) { return m == Metric::l2 ? faiss::METRIC_L2 : faiss::METRIC_INNER_PRODUCT; }

const NamedBlob* blob(const std::vector<NamedBlob>& state, const char* name) {
  for (const NamedBlob& b : state)
    if (b.name == name) return &b;
  return nullptr;
}

// IndexPQ over the padded sub-spaces of edo's geometry (pq_math.hpp): a
// remap puts column pq_sub_begin(j) + t at j * dsub + t and zeros after a
// narrower sub-space's last column, as pq_pad_rows does.
std::unique_ptr<faiss::Index> pq_index(const Codec& codec, const uint8_t* codes, uint64_t rows, Metric metric,
                                       bool& rotated) {
  const std::vector<NamedBlob> state = codec.state();
  const NamedBlob* books = blob(state, "pq.codebooks");
  const NamedBlob* rotation = blob(state, "opq.rotation");
  rotated = rotation != nullptr;
  const uint32_t m = static_cast<uint32_t>(books->shape[0]), ksub = static_cast<uint32_t>(books->shape[1]);
  const uint32_t nbits = static_cast<uint32_t>(std::log2(ksub));
  const uint32_t in_dim = rotation ? static_cast<uint32_t>(rotation->shape[0]) : static_cast<uint32_t>(codec.dim());
  const math::PqGeometry g = math::pq_geometry(in_dim, m, nbits);
  auto pq = std::make_unique<faiss::IndexPQ>(static_cast<int>(m * g.dsub), m, nbits, faiss_metric(metric));
  pq->pq.centroids = books->values;
  pq->codes.assign(codes, codes + rows * g.code_size);
  pq->ntotal = static_cast<faiss::Index::idx_t>(rows);
  pq->is_trained = true;
  std::vector<faiss::VectorTransform*> chain;
  if (rotation) {
    auto* lt = new faiss::LinearTransform(static_cast<int>(codec.dim()), static_cast<int>(in_dim), false);
    lt->A = rotation->values;
    lt->is_trained = true;
    chain.push_back(lt);
  }
  if (m * g.dsub != in_dim) {
    std::vector<int> map(m * g.dsub, -1);
    for (uint32_t j = 0; j < m; ++j)
      for (uint32_t t = 0; t < math::pq_sub_width(g, j); ++t)
        map[j * g.dsub + t] = static_cast<int>(math::pq_sub_begin(g, j) + t);
    chain.push_back(
        new faiss::RemapDimensionsTransform(static_cast<int>(in_dim), static_cast<int>(m * g.dsub), map.data()));
  }
  if (chain.empty()) return pq;
  auto pre = std::make_unique<faiss::IndexPreTransform>(pq.release());
  pre->own_fields = true;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) pre->prepend_transform(*it);
  return pre;
}

// IndexResidualQuantizer searching by decompression (ST_decompress: no norm
// bits in the codes): its codes are edo's, M codes of nbits packed from the
// least significant bit, and a row decodes to the sum of its codewords.
std::unique_ptr<faiss::Index> rq_index(const Codec& codec, const uint8_t* codes, uint64_t rows, Metric metric) {
  const std::vector<NamedBlob> state = codec.state();
  const NamedBlob* books = blob(state, "rq.codebooks");
  const size_t m = books->shape[0], ksub = books->shape[1];
  const size_t nbits = static_cast<size_t>(std::log2(static_cast<double>(ksub)));
  auto rq = std::make_unique<faiss::IndexResidualQuantizer>(
      static_cast<int>(codec.dim()), m, nbits, faiss_metric(metric), faiss::AdditiveQuantizer::ST_decompress);
  rq->rq.codebooks = books->values;
  rq->rq.is_trained = true;
  rq->is_trained = true;
  if (rq->code_size != codec.code_size())
    EDO_FAIL("FAISS codes of {} bytes where {} has {}", rq->code_size, codec.spec(), codec.code_size());
  rq->codes.assign(codes, codes + rows * codec.code_size());
  rq->ntotal = static_cast<faiss::Index::idx_t>(rows);
  return rq;
}

// pca:K,fp32 and pca:K,fp16: a LinearTransform onto the file's basis over a
// flat or fp16 index of the file's K-value codes. A row decodes to
// mean + C^T y with C's rows orthonormal, so for a query q, |q - x|^2 =
// |C(q - mean) - y|^2 + (a term of q alone) and q.x = (Cq).y + q.mean: the
// transform C(q - mean) (l2) or Cq (ip) ranks rows as their decoded form does.
std::unique_ptr<faiss::Index> pca_index(const Codec& codec, const uint8_t* codes, uint64_t rows, Metric metric,
                                        bool fp16) {
  const std::vector<NamedBlob> state = codec.state();
  const NamedBlob* mean = blob(state, "pca.mean");
  const NamedBlob* comps = blob(state, "pca.components");
  const int dim = static_cast<int>(codec.dim()), k = static_cast<int>(comps->shape[0]);
  auto* lt = new faiss::LinearTransform(dim, k, metric == Metric::l2);
  lt->A = comps->values;
  if (metric == Metric::l2) {
    lt->b.assign(static_cast<size_t>(k), 0.0f);
    for (int i = 0; i < k; ++i) {
      double dot = 0;
      for (int j = 0; j < dim; ++j)
        dot += static_cast<double>(comps->values[static_cast<size_t>(i) * dim + j]) * mean->values[j];
      lt->b[static_cast<size_t>(i)] = static_cast<float>(-dot);
    }
  }
  lt->is_trained = true;
  std::unique_ptr<faiss::Index> inner;
  if (fp16)
    inner = std::make_unique<faiss::IndexScalarQuantizer>(k, faiss::ScalarQuantizer::QT_fp16, faiss_metric(metric));
  else if (metric == Metric::l2)
    inner = std::make_unique<faiss::IndexFlatL2>(k);
  else
    inner = std::make_unique<faiss::IndexFlatIP>(k);
  auto* coded = dynamic_cast<faiss::IndexFlatCodes*>(inner.get());
  coded->codes.assign(codes, codes + rows * codec.code_size());
  coded->ntotal = static_cast<faiss::Index::idx_t>(rows);
  auto pre = std::make_unique<faiss::IndexPreTransform>(lt, inner.release());
  pre->own_fields = true;
  return pre;
}

std::unique_ptr<faiss::Index> flat_index(EdoTable& table, Metric metric) {
  const uint64_t dim = table.dim();
  std::unique_ptr<faiss::IndexFlat> index;
  if (metric == Metric::l2)
    index = std::make_unique<faiss::IndexFlatL2>(static_cast<faiss::Index::idx_t>(dim));
  else
    index = std::make_unique<faiss::IndexFlatIP>(static_cast<faiss::Index::idx_t>(dim));
  std::vector<float> block;
  for (uint64_t begin = 0; begin < table.rows(); begin += table.block_rows()) {
    const uint64_t n = std::min(table.block_rows(), table.rows() - begin);
    const float* rows = table.rows_f32(begin, n);
    block.assign(rows, rows + n * dim);
    if (metric == Metric::cos) {
      for (uint64_t r = 0; r < n; ++r) {
        double norm2 = 0;
        for (uint64_t j = 0; j < dim; ++j) norm2 += static_cast<double>(block[r * dim + j]) * block[r * dim + j];
        if (norm2 == 0) continue;  // a zero row stays zero: similarity 0 to everything
        const float inv = static_cast<float>(1.0 / std::sqrt(norm2));
        for (uint64_t j = 0; j < dim; ++j) block[r * dim + j] *= inv;
      }
    }
    index->add(static_cast<faiss::Index::idx_t>(n), block.data());
  }
  return index;
}

}  // namespace

FaissIndexKind export_faiss_index(EdoTable& table, const std::string& path, Metric metric) {
  const Codec* codec = table.codes_codec();  // a one-tier file in row order, else null
  const std::string spec = codec ? codec->spec() : "";
  const bool keeps_codes = codec && metric != Metric::cos;
  std::unique_ptr<faiss::Index> index;
  FaissIndexKind kind = FaissIndexKind::flat;
  try {
    if (keeps_codes && spec == "fp16") {
      auto sq = std::make_unique<faiss::IndexScalarQuantizer>(static_cast<faiss::Index::idx_t>(table.dim()),
                                                              faiss::ScalarQuantizer::QT_fp16, faiss_metric(metric));
      const uint8_t* codes = table.codes_of(0, table.rows());
      sq->codes.assign(codes, codes + table.rows() * codec->code_size());
      sq->ntotal = static_cast<faiss::Index::idx_t>(table.rows());
      index = std::move(sq);
      kind = FaissIndexKind::scalar_fp16;
    } else if (keeps_codes && (spec.starts_with("pq:") || spec.starts_with("opq:"))) {
      bool rotated = false;
      index = pq_index(*codec, table.codes_of(0, table.rows()), table.rows(), metric, rotated);
      kind = rotated ? FaissIndexKind::opq : FaissIndexKind::pq;
    } else if (keeps_codes && spec.starts_with("pca:") && (spec.ends_with(",fp32") || spec.ends_with(",fp16")) &&
               std::count(spec.begin(), spec.end(), ',') == 1) {
      index = pca_index(*codec, table.codes_of(0, table.rows()), table.rows(), metric, spec.ends_with(",fp16"));
      kind = FaissIndexKind::pca;
    } else if (keeps_codes && spec.starts_with("rq:")) {
      index = rq_index(*codec, table.codes_of(0, table.rows()), table.rows(), metric);
      kind = FaissIndexKind::rq;
    } else {
      index = flat_index(table, metric);
    }
    faiss::VectorIOWriter bytes;
    faiss::write_index(index.get(), &bytes);
    io::AtomicFile out(path);
    out.write(bytes.data.data(), bytes.data.size());
    out.commit();
  } catch (const faiss::FaissException& e) {
    EDO_FAIL("{}: FAISS could not build the index: {}", path, e.what());
  }
  return kind;
}

}  // namespace edo

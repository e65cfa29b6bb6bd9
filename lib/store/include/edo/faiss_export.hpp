// SPDX-License-Identifier: Apache-2.0
// A .edo as a FAISS index file that faiss::read_index opens and searches
// (edo-unpack -o x.faiss). docs/PACK.md, "FAISS indexes", says which index
// each file becomes and why.
#pragma once

#include <edo/knn.hpp>

#include <string>

namespace edo {

class EdoTable;

// Which FAISS index a file became (for reports and tests).
enum class FaissIndexKind : uint8_t { flat, scalar_fp16, pq, opq, rq, pca };
const char* faiss_index_kind_name(FaissIndexKind kind);

// Writes `table` as a FAISS index searched with `metric` (l2: L2 distance;
// ip: inner product; cos: inner product over rows normalised to unit
// length, so a query normalised the same way ranks by cosine), through a
// temporary name renamed on success. One-tier files whose codec FAISS can
// decode the same way keep their codes (fp16 -> IndexScalarQuantizer QT_fp16,
// pq -> IndexPQ, opq -> IndexPreTransform of the rotation over IndexPQ,
// rq -> IndexResidualQuantizer, pca:K,fp32|fp16 -> IndexPreTransform of the
// basis over a flat or fp16 index; with l2 or ip); every other file becomes an
// IndexFlat of its decoded rows.
FaissIndexKind export_faiss_index(EdoTable& table, const std::string& path, Metric metric);

}  // namespace edo

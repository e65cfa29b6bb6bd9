// SPDX-License-Identifier: Apache-2.0
// Per-format reader and writer factories behind open_table()/create_table().
// `display` is the name used in messages (the spec as the user wrote it).
#pragma once

#include <edo/io/files.hpp>
#include <edo/io/table.hpp>

#include <memory>
#include <string>

namespace edo::io {

// Converts n little-endian values of type t to fp32.
void widen_to_f32(DType t, const uint8_t* src, uint64_t n, float* out);
// Converts n fp32 values to type t, little-endian (not the fp8 types).
void narrow_from_f32(DType t, const float* src, uint64_t n, uint8_t* out);

std::unique_ptr<TableReader> open_npy(const std::string& path, const std::string& display);

// Rows x dim values of `dtype`, row-major, little-endian, from byte `offset`
// of a mapped file (the caller has checked they lie inside it).
struct RowsLayout {
  uint64_t rows = 0, dim = 0;
  DType dtype = DType::f32;
  uint64_t offset = 0;
};
std::unique_ptr<TableReader> open_mapped_rows(MappedFile&& file, const std::string& display, const std::string& format,
                                              const RowsLayout& at);

// A safetensors tensor (`tensor` empty: the file's only 2-D tensor; an
// error listing them when there are several). safetensors.hpp has the rules.
// One tensor `tensor` of rows x dim `dtype` values (f32, f16 or bf16).
std::unique_ptr<TableWriter> create_safetensors(const std::string& path, const std::string& tensor, uint64_t rows,
                                                uint64_t dim, DType dtype);
std::unique_ptr<TableReader> open_safetensors(const std::string& path, const std::string& tensor,
                                              const std::string& display);
std::unique_ptr<TableWriter> create_npy(const std::string& path, uint64_t rows, uint64_t dim, DType dtype);

// HDF5 dataset `dataset` ("/group/name"; empty: the file's only 2-D dataset),
// converted to fp32 by HDF5 one hyperslab of rows at a time.
std::unique_ptr<TableReader> open_hdf5(const std::string& path, const std::string& dataset, const std::string& display);
// Writes a new HDF5 file holding one dataset (intermediate groups created;
// float16 stored as an IEEE half type). The file is always created anew: an
// existing file at `path` is replaced on commit(), not added to.
std::unique_ptr<TableWriter> create_hdf5(const std::string& path, const std::string& dataset, uint64_t rows,
                                         uint64_t dim, DType dtype);
// create_tables() of each format: the tables' names as given (HDF5: at
// "/NAME" unless the name starts with '/').
std::unique_ptr<MultiTableWriter> create_safetensors_tables(const std::string& path,
                                                            const std::vector<NamedTableShape>& tables, DType dtype);
std::unique_ptr<MultiTableWriter> create_hdf5_tables(const std::string& path,
                                                     const std::vector<NamedTableShape>& tables, DType dtype);
// Every object (group, dataset, named type) of an existing HDF5 file, as
// absolute names without "/" itself; empty when `path` is not an HDF5 file.
// At most 10,000 names are listed.
std::vector<std::string> hdf5_object_names(const std::string& path);
// Every dataset of an HDF5 file, absolute names, in the library's order; at
// most 10,000.
std::vector<std::string> hdf5_dataset_names(const std::string& path);
// Every member of a NumPy .npz, without ".npy", in archive order; at most 100,000.
std::vector<std::string> npz_member_names(const std::string& path);

// Member `member` of a NumPy .npz (with or without ".npy"; empty: the only
// member), stored or deflated, streamed in row blocks: reading forward never
// holds more than one block; going backwards in a deflated member reopens it.
std::unique_ptr<TableReader> open_npz(const std::string& path, const std::string& member, const std::string& display);

// TEXMEX .fvecs / .bvecs / .ivecs: `element` is f32, u8 or i32 respectively.
std::unique_ptr<TableReader> open_vecs(const std::string& path, DType element, const std::string& display);

}  // namespace edo::io

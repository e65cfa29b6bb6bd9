// SPDX-License-Identifier: Apache-2.0
// Models as input: many tables in one file or folder (docs/PACK.md,
// "Models"). A safetensors file or a sharded model's .index.json, an .npz,
// an HDF5 file or a directory of .npy files holds tensors; a model's tables
// are the 2-D floating ones chosen by name. "FILE:tensor" stays one table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace edo::io {

// A tensor taken as a table: its name in the model, the spec open_table()
// reads it by, and its shape.
struct ModelTable {
  std::string name;
  std::string spec;
  uint64_t rows = 0, dim = 0;
};

struct ModelSelection {
  std::string path;                                          // the model as given
  std::string format;                                        // "safetensors", "npz", "hdf5" or "npy directory"
  std::vector<ModelTable> tables;                            // chosen, in the model's order
  std::vector<std::pair<std::string, std::string>> skipped;  // (tensor, why)
  // A 2-D floating tensor was passed over (by --tables or the name rule):
  // the chosen tables are not the file's only ones.
  bool passed_over_tables = false;
};

// Whether `spec` names a model: a directory, or a .safetensors,
// .safetensors.index.json, .npz or .h5/.hdf5 file with no ":member".
bool is_model_spec(const std::string& spec);

// The tables of model `spec` (is_model_spec), chosen by `globs`
// (table_glob_match): a glob matching nothing is a usage error naming the
// file and listing its tensors; a tensor a glob names exactly (no '*' or '?')
// that is not a 2-D floating table is one too, while one a wildcard reaches
// is skipped with its reason. Without globs: the 2-D floating tensors whose
// name contains "emb" or starts with "lm_head", and when none does, every
// 2-D floating tensor (default_table_reason says which rule took a table).
// Every other tensor is listed in `skipped` with the reason. Duplicate names
// (two shards naming one tensor) are an error.
ModelSelection select_model_tables(const std::string& spec, const std::vector<std::string>& globs);

// Why the default selection takes 2-D floating tensor `name` of a model
// whose 2-D floating tensors are `tables`: a line, or empty when it does not.
std::string default_table_reason(const std::string& name, const std::vector<std::string>& tables);

// "*" and "?" glob match of a whole name.
bool glob_match(const std::string& glob, const std::string& name);

// --tables' rule (docs/PACK.md, "Models"): the glob matches the whole name or
// any run of its whole parts, parts being what '.' and '/' separate. So
// 'word*' takes "embeddings.word_embeddings.weight" (the run
// "word_embeddings" or "word_embeddings.weight"), 'position_embeddings'
// takes "bert.embeddings.position_embeddings.weight", and 'C1' takes "C1" or
// "sparse.C1" but never "C10".
bool table_glob_match(const std::string& glob, const std::string& name);

// Whether `glob` has no '*' or '?': it names tensors, rather than reaching them.
bool is_literal_glob(const std::string& glob);

// Parses "NAME=VALUE" arguments whose NAME is one of `names` (a table of the
// model): the value, or nullopt when the argument does not start with a
// known name and '=' (a plain path that happens to hold '=').
std::optional<std::pair<std::string, std::string>> split_named_argument(const std::string& arg,
                                                                        const std::vector<std::string>& names);

}  // namespace edo::io

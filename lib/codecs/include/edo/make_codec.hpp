// SPDX-License-Identifier: Apache-2.0
// Building a codec that trains and encodes: the training library's entry
// (edo_codecs). A program that only reads .edo files builds decoders with
// make_decoder (edo/codec.hpp) and never needs this.
#pragma once

#include <edo/codec.hpp>

#include <cstddef>
#include <memory>
#include <string_view>

namespace edo {

// Builds a codec (untrained if it needs training). Usage error on a bad spec
// or a dimension the spec cannot take. Trained codecs train with FAISS and
// encode with BLAS.
std::unique_ptr<Codec> make_codec(std::string_view spec, size_t dim);

}  // namespace edo

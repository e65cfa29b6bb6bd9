// SPDX-License-Identifier: Apache-2.0
// make_codec: the traits' decoders, with the trained codecs (pq, opq, rq,
// pca, rot, tc) swapped for their full versions, which train and encode.
#include "codec_impl.hpp"

#include <edo/error.hpp>
#include <edo/make_codec.hpp>

#include <string_view>

namespace edo {

namespace {

using Maker = std::unique_ptr<Codec> (*)(const SpecStage&, size_t, std::unique_ptr<Codec>);

struct Encoder {
  std::string_view name;
  Maker make;
};

// Every codec whose decoder cannot train or encode.
constexpr Encoder kEncoders[] = {
    {.name = "pq", .make = detail::make_pq},   {.name = "opq", .make = detail::make_pq},
    {.name = "rq", .make = detail::make_rq},   {.name = "pca", .make = detail::make_pca},
    {.name = "rot", .make = detail::make_rot}, {.name = "tc", .make = detail::make_tc},
};

}  // namespace

std::unique_ptr<Codec> make_codec(std::string_view spec, size_t dim) {
  return detail::assemble_codec(
      spec, dim, [](const CodecTraits& t, const SpecStage& stage, size_t d, std::unique_ptr<Codec> inner) {
        for (const Encoder& e : kEncoders)
          if (e.name == t.name) return e.make(stage, d, std::move(inner));
        return t.make(stage, d, std::move(inner));
      });
}

}  // namespace edo

// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the .edo container reader: open (all structural and
// schema checks), verify every section checksum, then touch every section
// byte, so a check that lets a bad offset through shows up as an ASan report;
// then parse the vocabulary section (FORMAT.md 9.7) when the manifest names one.
// A model file (FORMAT.md section 10): its table directory is validated on
// open; each table is then opened as a container of its own (Verify::all)
// and read the same way.
//
// Each input is tried twice: as given, and with its manifest and header
// checksums recomputed. A mutation almost never keeps the checksums valid,
// so without the second pass the fuzzer would never get past them into the
// JSON parsing and the sections-table checks.
#include <edo/error.hpp>
#include <edo/io/container.hpp>
#include <edo/io/vocab.hpp>

#include "reseal.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

uint64_t read_container(const edo::io::Container& c) {
  uint64_t sum = 0;
  for (const auto& s : c.sections()) {
    const auto view = c.section(s.name);
    for (uint64_t i = 0; i < view.size; ++i) sum += view.data[i];
  }
  for (const auto& tier : c.tiers())
    for (const auto& [role, name] : tier.sections) sum += c.section(name).size;
  return sum;
}

void open_and_read(const uint8_t* data, size_t size) {
  try {
    const auto c = edo::io::Container::view(data, size, "fuzz-input", edo::io::Verify::all);
    uint64_t sum = 0;
    for (size_t i = 0; i < c.model_tables().size(); ++i) {  // each table as a file of its own
      try {
        sum += c.model_tables()[i].name.size() + read_container(c.model_table(i, edo::io::Verify::all));
      } catch (const edo::Error&) {
      }
    }
    for (const auto& s : c.sections()) {
      const auto view = c.section(s.name);
      for (uint64_t i = 0; i < view.size; ++i) sum += view.data[i];
    }
    for (const auto& tier : c.tiers())
      for (const auto& [role, name] : tier.sections) sum += c.section(name).size;
    try {  // the vocabulary section's parser, on whatever the manifest names
      if (const auto words = edo::io::read_vocab_section(c)) sum += words->size();
    } catch (const edo::Error&) {
    }
    volatile uint64_t sink = sum;
    (void)sink;
  } catch (const edo::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  open_and_read(data, size);
  std::vector<uint8_t> sealed(data, data + size);
  if (edo::fuzz::reseal(sealed)) open_and_read(sealed.data(), sealed.size());
  return 0;
}

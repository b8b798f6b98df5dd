#pragma once
// What the plugin loader reads from a library file before the dynamic loader maps it: the ELF
// header (a 64-bit shared library for this processor), its loadable segments (each lying
// inside the file, so that mapping it cannot fault on a truncated file) and its dynamic symbol
// table. Every offset and size is checked against the file's size, so a truncated or damaged
// file is named as such instead of crashing the loader or raising a stream error.
#include <cstdint>
#include <string>
#include <vector>

namespace yoloflow::core {

struct ElfSymbol {
  std::string name;
  unsigned type = 0;     // STT_FUNC, STT_OBJECT, ... (<elf.h>)
  bool defined = false;  // false: the library imports it from another one
};

struct ElfLibrary {
  std::uint64_t file_size = 0;
  std::vector<ElfSymbol> dynamic_symbols;

  // The defined symbol of that name in the dynamic symbol table; null when there is none.
  const ElfSymbol* find_defined(const std::string& name) const;
};

struct ElfReadResult {
  bool ok = false;
  std::string problem;  // one line when !ok: what is wrong with the file
  ElfLibrary library;
};

// Reads `path`; never throws.
ElfReadResult read_elf_library(const std::string& path);

// "a function", "a data object", ... for a symbol type in messages.
std::string elf_symbol_type_text(unsigned type);

}  // namespace yoloflow::core

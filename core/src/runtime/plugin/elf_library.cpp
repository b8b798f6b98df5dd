#include "runtime/plugin/elf_library.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace yoloflow::core {
namespace {

#if defined(__x86_64__)
constexpr unsigned kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr unsigned kHostMachine = EM_AARCH64;
#elif defined(__powerpc64__)
constexpr unsigned kHostMachine = EM_PPC64;
#elif defined(__riscv)
constexpr unsigned kHostMachine = EM_RISCV;
#else
constexpr unsigned kHostMachine = EM_NONE;  // not checked: the dynamic loader still refuses
#endif

std::string machine_text(unsigned machine) {
  switch (machine) {
    case EM_386: return "x86 (32-bit)";
    case EM_X86_64: return "x86-64";
    case EM_ARM: return "ARM (32-bit)";
    case EM_AARCH64: return "AArch64";
    case EM_PPC64: return "PowerPC 64";
    case EM_RISCV: return "RISC-V";
    default: return "ELF machine " + std::to_string(machine);
  }
}

// Closes the file however reading ends.
class File {
 public:
  explicit File(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  int fd() const { return fd_; }

  // Exactly `size` bytes at `offset`; false on a short read or an error.
  bool read(std::uint64_t offset, void* out, std::size_t size) const {
    auto* p = static_cast<char*>(out);
    while (size > 0) {
      const ssize_t n = ::pread(fd_, p, size, static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      p += n;
      offset += static_cast<std::uint64_t>(n);
      size -= static_cast<std::size_t>(n);
    }
    return true;
  }

 private:
  int fd_;
};

// [offset, offset + count * entry) lies inside a file of `file_size` bytes (no overflow).
bool inside(std::uint64_t offset, std::uint64_t count, std::uint64_t entry, std::uint64_t file_size) {
  if (offset > file_size) return false;
  if (entry != 0 && count > (file_size - offset) / entry) return false;
  return true;
}

std::string damaged(const std::string& what) { return "truncated or damaged ELF file: " + what; }

// "its section headers lie" past the end of a file of `file_size` bytes.
std::string past_end(const std::string& part_lie, std::uint64_t file_size) {
  return damaged(part_lie + " past the end of the file (" + std::to_string(file_size) + " bytes)");
}

}  // namespace

const ElfSymbol* ElfLibrary::find_defined(const std::string& name) const {
  for (const auto& s : dynamic_symbols) {
    if (s.defined && s.name == name) return &s;
  }
  return nullptr;
}

std::string elf_symbol_type_text(unsigned type) {
  switch (type) {
    case STT_FUNC: return "a function";
    case STT_GNU_IFUNC: return "an indirect function";
    case STT_OBJECT: return "a data object";
    case STT_TLS: return "a thread-local data object";
    case STT_COMMON: return "a common data object";
    case STT_NOTYPE: return "a symbol without type";
    case STT_SECTION: return "a section symbol";
    case STT_FILE: return "a file symbol";
    default: return "a symbol of type " + std::to_string(type);
  }
}

ElfReadResult read_elf_library(const std::string& path) {
  ElfReadResult result;
  auto fail = [&](std::string problem) {
    result.ok = false;
    result.problem = std::move(problem);
    return result;
  };
  File file(path);
  if (file.fd() < 0) return fail(std::string("cannot be read: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(file.fd(), &st) != 0) return fail(std::string("cannot be read: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail("not a shared library: not a regular file");
  const auto size = static_cast<std::uint64_t>(st.st_size);
  result.library.file_size = size;

  unsigned char ident[EI_NIDENT] = {};
  const bool has_magic = size >= SELFMAG && file.read(0, ident, SELFMAG) && std::memcmp(ident, ELFMAG, SELFMAG) == 0;
  if (!has_magic) {
    return fail("not a shared library: the file (" + std::to_string(size) +
                " bytes) does not start with the ELF header of a compiled library");
  }
  Elf64_Ehdr eh{};
  if (size < sizeof(eh) || !file.read(0, &eh, sizeof(eh))) {
    return fail(damaged("it ends inside its ELF header (" + std::to_string(size) + " bytes)"));
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) {
    return fail(std::string("not a library for this host: a ") +
                (eh.e_ident[EI_CLASS] == ELFCLASS32 ? "32-bit" : "damaged") + " ELF file; this host loads 64-bit libraries");
  }
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  constexpr unsigned char kHostData = ELFDATA2LSB;
#else
  constexpr unsigned char kHostData = ELFDATA2MSB;
#endif
  if (eh.e_ident[EI_DATA] != kHostData) {
    return fail("not a library for this host: its byte order differs from this host's");
  }
  if (eh.e_type != ET_DYN) {
    const std::string what = eh.e_type == ET_EXEC ? "an executable"
                             : eh.e_type == ET_REL ? "an object file (.o)"
                             : eh.e_type == ET_CORE ? "a core dump"
                                                    : "an ELF file of type " + std::to_string(eh.e_type);
    return fail("not a shared library: " + what + "; build the plugin with yoloflow_add_plugin");
  }
  if (kHostMachine != EM_NONE && eh.e_machine != kHostMachine) {
    return fail("not a library for this host: built for " + machine_text(eh.e_machine) + ", this host is " +
                machine_text(kHostMachine));
  }

  // Section headers, for the dynamic symbol table. With more than SHN_LORESERVE sections the
  // count is in the first header's sh_size (ELF's extended numbering).
  if (eh.e_shoff == 0) {
    return fail("not a shared library this host can inspect: it has no section headers, so its symbols cannot be read");
  }
  if (eh.e_shentsize != sizeof(Elf64_Shdr)) {
    return fail(damaged("its section header entries are " + std::to_string(eh.e_shentsize) + " bytes, not " +
                        std::to_string(sizeof(Elf64_Shdr))));
  }
  std::uint64_t section_count = eh.e_shnum;
  if (section_count == 0) {
    Elf64_Shdr first{};
    if (!inside(eh.e_shoff, 1, sizeof(first), size) || !file.read(eh.e_shoff, &first, sizeof(first))) {
      return fail(past_end("its section headers lie", size));
    }
    section_count = first.sh_size;
  }
  if (!inside(eh.e_shoff, section_count, sizeof(Elf64_Shdr), size)) return fail(past_end("its section headers lie", size));
  std::vector<Elf64_Shdr> sections(static_cast<std::size_t>(section_count));
  if (!sections.empty() && !file.read(eh.e_shoff, sections.data(), sections.size() * sizeof(Elf64_Shdr))) {
    return fail(past_end("its section headers lie", size));
  }

  // Loadable segments inside the file: the dynamic loader maps them, and a page mapped past the
  // end of the file faults when it is touched. (A truncated file usually lost its section
  // headers first: they are at its end, which is why they are checked before.)
  if (eh.e_phnum > 0 && eh.e_phentsize != sizeof(Elf64_Phdr)) {
    return fail(damaged("its program header entries are " + std::to_string(eh.e_phentsize) + " bytes, not " +
                        std::to_string(sizeof(Elf64_Phdr))));
  }
  if (!inside(eh.e_phoff, eh.e_phnum, sizeof(Elf64_Phdr), size)) return fail(past_end("its program headers lie", size));
  std::vector<Elf64_Phdr> phdrs(eh.e_phnum);
  if (!phdrs.empty() && !file.read(eh.e_phoff, phdrs.data(), phdrs.size() * sizeof(Elf64_Phdr))) {
    return fail(past_end("its program headers lie", size));
  }
  int loadable = 0;
  for (std::size_t i = 0; i < phdrs.size(); ++i) {
    if (phdrs[i].p_type != PT_LOAD) continue;
    ++loadable;
    if (!inside(phdrs[i].p_offset, phdrs[i].p_filesz, 1, size)) {
      return fail(damaged("its loadable segment " + std::to_string(loadable) + " (file bytes " +
                          std::to_string(phdrs[i].p_offset) + " to " +
                          std::to_string(phdrs[i].p_offset + phdrs[i].p_filesz) + ") lies past the end of the file (" +
                          std::to_string(size) + " bytes)"));
    }
  }
  if (loadable == 0) return fail(damaged("it has no loadable segments"));

  for (const auto& sh : sections) {
    if (sh.sh_type != SHT_DYNSYM) continue;
    if (sh.sh_entsize != sizeof(Elf64_Sym)) {
      return fail(damaged("its dynamic symbol entries are " + std::to_string(sh.sh_entsize) + " bytes, not " +
                          std::to_string(sizeof(Elf64_Sym))));
    }
    if (!inside(sh.sh_offset, sh.sh_size, 1, size)) return fail(past_end("its dynamic symbol table lies", size));
    if (sh.sh_link == 0 || sh.sh_link >= sections.size() || sections[sh.sh_link].sh_type != SHT_STRTAB) {
      return fail(damaged("its dynamic symbol table names no string table"));
    }
    const Elf64_Shdr& strtab = sections[sh.sh_link];
    if (!inside(strtab.sh_offset, strtab.sh_size, 1, size)) return fail(past_end("its dynamic string table lies", size));
    std::vector<Elf64_Sym> symbols(static_cast<std::size_t>(sh.sh_size / sizeof(Elf64_Sym)));
    std::string names(static_cast<std::size_t>(strtab.sh_size), '\0');
    if ((!symbols.empty() && !file.read(sh.sh_offset, symbols.data(), symbols.size() * sizeof(Elf64_Sym))) ||
        (!names.empty() && !file.read(strtab.sh_offset, names.data(), names.size()))) {
      return fail(past_end("its dynamic symbol table lies", size));
    }
    for (std::size_t i = 0; i < symbols.size(); ++i) {
      const Elf64_Sym& s = symbols[i];
      if (s.st_name == 0) continue;  // the null symbol, or an unnamed one
      if (s.st_name >= names.size() || names.find('\0', s.st_name) == std::string::npos) {
        return fail(damaged("the name of dynamic symbol " + std::to_string(i) + " lies outside its string table"));
      }
      ElfSymbol out;
      out.name = names.c_str() + s.st_name;
      out.type = ELF64_ST_TYPE(s.st_info);
      out.defined = s.st_shndx != SHN_UNDEF;
      result.library.dynamic_symbols.push_back(std::move(out));
    }
  }
  result.ok = true;
  return result;
}

}  // namespace yoloflow::core

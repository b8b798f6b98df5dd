#pragma once
// Reads JSON documents written by people: the one reader of every JSON text yoloflow is given
// (pipelines, sweep files, a run folder's pipeline.json, the JSON inside checkpoints and in
// command-line words). A syntax error becomes a Diagnostic with the line and column, which
// nlohmann reports only as a byte offset; what nlohmann would take silently is refused too.
#include <cstddef>
#include <string>

#include "yoloflow/params.h"

namespace yoloflow::core {

// The largest pipeline (or sweep) file read, and the deepest nesting of objects and lists in
// one: a pipeline is a few kilobytes and five levels deep, and the limits keep the memory and
// time of reading any file bounded (a megabyte of unclosed '[' is refused at its 65th).
constexpr std::size_t kMaxPipelineBytes = 16u << 20;
constexpr std::size_t kMaxJsonDepth = 64;

// Parses `text` as strict JSON; on a problem returns false and appends diagnostics:
// - a syntax error, comments included (`//` and `/* */` are no JSON): "malformed JSON at line L,
//   column C: ...", as for nesting deeper than kMaxJsonDepth;
// - a key given twice in one object (nlohmann would keep the last silently), at its JSON path
//   with the lines of both;
// - a number no double holds (1e400 would become infinity, and null when written back), at
//   its JSON path.
// `out` holds the document only when it returns true.
bool parse_json_text(const std::string& text, json& out, Diagnostics& diagnostics);

// The same for a document that is not a pipeline: throws InvalidInput "`what`: PATH: problem"
// (the first problem) instead of returning diagnostics.
json read_json_text(const std::string& text, const std::string& what);

// 1-based line and column of the byte at 1-based offset `byte` in `text`.
void line_and_column(const std::string& text, std::size_t byte, std::size_t& line,
                     std::size_t& column);

// False when a number in `value` is not finite (what 1e400 or -1e400 parse to), with `where` set
// to its JSON path below `path`. Values parsed from command-line words are checked with it too.
bool all_numbers_finite(const json& value, const std::string& path, std::string& where);

// What is said of such a number, after its JSON path or word.
extern const char* const kNonFiniteNumber;

}  // namespace yoloflow::core

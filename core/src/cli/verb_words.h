#pragma once
// Ultralytics' key=value words on `yoloflow val`, `predict`, `export` and `info`
// (`yoloflow val model=best.pt data=coco128.yaml imgsz=320`): each stands for the options it
// means there (model= is --weights, imgsz= --imgsz, save_json=True --save-json, project= and
// name= the output folder), so the commands keep one set of options and the words are read
// once, before the command line is parsed. `train` (and validate, run, sweep) take words as
// pipeline overrides instead (runtime/words/overrides.h). A leading task word, as in
// `yolo detect val ...`, is taken too.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace yoloflow::cli {

// `args`: the command line after the program's name. Returns it with every word of those
// commands replaced by its options. Throws InvalidInput in one line for the first word the
// command does not take: an Ultralytics argument it does not support (and why), a value that
// does not fit, or a word that is no argument (with the closest one it takes); and for an
// option that would turn off what is written only when asked for (predict's --no-labels),
// naming the option that asks for it.
std::vector<std::string> words_as_options(const std::vector<std::string>& args);

// Adds to the help of val, predict, export and info the words each takes.
void describe_words(CLI::App& app);

}  // namespace yoloflow::cli

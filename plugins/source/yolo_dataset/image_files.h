#pragma once
// Finds the image files of a split and checks that each one is a readable image.
#include <string>
#include <vector>

#include "yoloflow/source.h"

namespace yoloflow::plugins::yolo {

struct SplitListing {
  std::vector<std::string> images;      // existing files with an image extension, sorted, unique
  // How often each of `images` is listed: an image listed N times is N samples per epoch
  // (as in Ultralytics, where listing a dataset 20 times makes a 20x epoch).
  std::vector<std::size_t> repeats;
  std::vector<std::string> label_dirs;  // folders (not recursive) whose *.txt files should pair with images
  std::vector<DataIssue> issues;        // listed files that are missing or not images
};

// `entries` are folders (searched recursively through yoloflow/directory_walk.h: a folder is
// listed once, however many links lead to it), .txt lists of image paths read a line at a time
// (relative paths are relative to the list's folder), or image files. A missing folder or list
// is a configuration error (InvalidInput naming `yaml_file` and the split); a missing image
// named in a list, or a folder that could not be listed, is a data issue.
SplitListing list_split(const std::vector<std::string>& entries, const std::string& split,
                        const std::string& yaml_file);

bool has_image_extension(const std::string& path);

// A .jpg / .jpeg path (any case).
bool has_jpeg_extension(const std::string& path);

// Ultralytics' pairing: the last "/images/" becomes "/labels/", the extension ".txt".
std::string label_path_for(const std::string& image_path);

struct ImageCheck {
  // Empty when the file is a decodable image; otherwise the problem, starting with one of
  // "empty file", "not an image", "truncated image", "corrupt image", "unreadable file",
  // "image too large", "image file too large" (yoloflow/image_header.h).
  std::string problem;
  int width = 0, height = 0;  // stored pixel size (before any EXIF rotation; the area is the same)
};

// The header is checked before anything else is read (an image over the pixel limit or a file
// over the byte budget is refused unread), then the file is read and decoded cheaply.
ImageCheck check_image_file(const std::string& path);

}  // namespace yoloflow::plugins::yolo

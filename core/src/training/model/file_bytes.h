#pragma once
// A weights file read whole: the one bounded reader of user files, runtime/util/file_checks.h
// (read_regular_file(path, name), non_regular_kind(path)).
#include "runtime/util/file_checks.h"

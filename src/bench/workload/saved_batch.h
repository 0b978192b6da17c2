// Reader of batches saved from Python with torch.save(obj, path) (the default zip format):
// nested dicts, lists and tuples of tensors, strings, numbers, booleans and None.
#pragma once

#include <ATen/core/ivalue.h>

#include <string>

namespace mtc::bench {

// Tensors come back on the CPU as saved (strides and views preserved). Throws ConfigError
// naming `path` when the file is missing, is not a torch.save archive, uses the legacy
// (pre-1.6, non-zip) format, or holds objects libtorch cannot rebuild.
c10::IValue load_saved_batch(const std::string& path);

}  // namespace mtc::bench

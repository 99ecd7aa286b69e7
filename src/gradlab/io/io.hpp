#pragma once
// gradlab::io: safetensors and .npy files, module state, checkpoints, crash-safe writes, HTML text.

#include "gradlab/io/atomic_file.hpp"
#include "gradlab/io/checkpoint.hpp"
#include "gradlab/io/html_escape.hpp"
#include "gradlab/io/module_state.hpp"
#include "gradlab/io/npy.hpp"
#include "gradlab/io/safetensors.hpp"
#include "gradlab/io/serialize.hpp"

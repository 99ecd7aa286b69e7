#pragma once
// A planted layering fault for the `layering_catches_an_upward_include` test: core/ must not
// include ops/, so tools/check_layers.py has to reject this file.
#include "gradlab/ops/ops.hpp"

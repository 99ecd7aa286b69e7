#pragma once
// A planted layering fault for `layering_catches_an_unranked_folder`: widgets/ has no rank.
#include "gradlab/core/tensor.hpp"

#pragma once
// A planted layering fault for `layering_catches_a_sideways_include`: testing/ and nn/ share a
// rank, so neither may include the other.
#include "gradlab/nn/linear.hpp"

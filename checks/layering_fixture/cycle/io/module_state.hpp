#pragma once
// Part of the planted nn <-> io cycle: io/ may include nn/ (a lower rank); nn/ including io/
// closes the loop.
#include "gradlab/nn/module.hpp"

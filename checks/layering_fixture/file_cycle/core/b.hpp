#pragma once
// The other half of the planted cycle (see a.hpp).
#include "gradlab/core/a.hpp"

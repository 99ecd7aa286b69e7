#pragma once
// A planted include cycle inside one folder, for `layering_catches_a_file_cycle`.
#include "gradlab/core/b.hpp"

#pragma once
// Mixed precision: autocast (per-op dtypes) and GradScaler (loss scaling for float16).
#include "gradlab/amp/autocast.hpp"
#include "gradlab/amp/grad_scaler.hpp"

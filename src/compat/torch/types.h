// LibTorch's <torch/types.h>: gradlab offers it through the one compat header.
#pragma once
#include "torch/torch.h"

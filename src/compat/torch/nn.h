// LibTorch's <torch/nn.h>: gradlab offers it through the one compat header.
#pragma once
#include "torch/torch.h"

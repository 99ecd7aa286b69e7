// LibTorch's <torch/data/datasets/base.h>: gradlab offers it through the one compat header.
#pragma once
#include "torch/torch.h"

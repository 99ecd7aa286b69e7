#pragma once
// gradlab::data: datasets, transforms, samplers and the DataLoader (torch::data).

#include "gradlab/data/csv.hpp"
#include "gradlab/data/dataloader.hpp"
#include "gradlab/data/dataset.hpp"
#include "gradlab/data/digits.hpp"
#include "gradlab/data/sampler.hpp"
#include "gradlab/data/transforms.hpp"

#pragma once
// Data-parallel training: process groups and collectives (gradlab::distributed) and
// nn::parallel::DistributedDataParallel.

#include "gradlab/distributed/ddp.hpp"
#include "gradlab/distributed/process_group.hpp"

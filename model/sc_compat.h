// SystemC 2.3 needs SC_HAS_PROCESS in modules whose constructor is not SC_CTOR; IEEE
// 1666-2023 (SystemC 3) deprecates it. One macro keeps both building.
#pragma once

#include <systemc>

#if SC_VERSION_MAJOR >= 3
#define IRDMA_SC_HAS_PROCESS(name)
#else
#define IRDMA_SC_HAS_PROCESS(name) SC_HAS_PROCESS(name)
#endif

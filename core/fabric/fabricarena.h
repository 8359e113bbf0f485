#pragma once

// Private to the fabric's .cpp files: the thread arena of a Fabric.
#include "core/fabric/fabric.h"

#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

namespace waferscope::core::fabric {

struct Fabric::Arena {
    explicit Arena(int threads)
        : arena(threads)
        , concurrency(threads)
    {
    }
    tbb::task_arena arena;
    int concurrency;
    tbb::affinity_partitioner affinity; // keeps a band on the thread that ran it last cycle
};

} // namespace waferscope::core::fabric

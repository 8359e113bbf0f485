#pragma once

// Where a region kernel sits and what it carries: the coordinates both levels describe a kernel
// in (core/kernels/gemv.h and the closed forms; core/cyclelevel/kernels, which build it).

#include "core/fabric/wavelet.h"
#include "core/kernels/kernelcost.h"

#include <cstdint>
#include <vector>

namespace waferscope::core {

struct Pe {
    int x = 0;
    int y = 0;
};

// One block of a vector on one physical row: the unit a stream of wavelets carries along a
// strip, one element per wavelet. A vector travels as several lanes side by side.
struct Lane {
    int y = 0; // physical row
    std::uint32_t begin = 0; // elements [begin, end) of the vector
    std::uint32_t end = 0;
    std::uint32_t size() const { return end - begin; }
    bool operator==(const Lane&) const = default;
};
using Lanes = std::vector<Lane>;

// `count` lanes on rows y0, y0 + 1, ... splitting `length` elements as evenly as they go.
Lanes evenLanes(int y0, int count, std::uint32_t length);
// The lanes of `lanes` (rows counted from a region's top, consecutive elements) on rows y0 + row.
Lanes lanesAt(int y0, const std::vector<DecodeLane>& lanes);
std::uint32_t blockBegin(std::int64_t total, std::int64_t parts, std::int64_t part);

// A region's own coordinates: column u counts along the flow of its strip from the column the
// region's inputs enter (u = 0) to the one its outputs leave (u = w - 1); row v from the top.
struct Frame {
    int x0 = 0;
    int y0 = 0;
    int w = 0;
    int h = 0;
    bool westward = false; // the strip flows east to west

    int x(int u) const { return westward ? x0 + w - 1 - u : x0 + u; }
    int y(int v) const { return y0 + v; }
    int forward() const { return westward ? fabric::West : fabric::East; }
    int backward() const { return westward ? fabric::East : fabric::West; }
};

} // namespace waferscope::core

#include "core/kernels/gemv.h"

#include "core/kernels/closedform.h"

namespace waferscope::core {

using namespace closedform;

namespace {

std::vector<DecodeLane> decodeLanes(const Lanes& lanes, int top)
{
    std::vector<DecodeLane> out;
    for (const Lane& lane : lanes)
        out.push_back({ lane.y - top, std::int64_t(lane.size()) });
    return out;
}

} // namespace

KernelCost costDecodeGemv(const GemvSpec& spec, int simdWidth)
{
    DecodeGemvShape shape;
    shape.width = spec.frame.w;
    shape.height = spec.frame.h;
    shape.firstColumn = spec.firstColumn;
    shape.inputs = decodeLanes(spec.input, spec.frame.y0);
    shape.outputs = decodeLanes(spec.output, spec.frame.y0);
    shape.epilogue = spec.epilogue;
    shape.simdWidth = simdWidth;
    shape.treeReduced = spec.treeReduced;
    return gemvCost(shape);
}

} // namespace waferscope::core

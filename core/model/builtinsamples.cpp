#include "core/model/builtinsamples.h"

namespace waferscope::core {

namespace {

struct EmbeddedSample {
    const char* name;
    std::string_view text;
};

constexpr EmbeddedSample kSamples[] = {
#include "waferscope/sampledata.inc"
};

} // namespace

std::optional<std::string_view> builtinSample(const std::string& fileName)
{
    for (const EmbeddedSample& sample : kSamples)
        if (fileName == sample.name)
            return sample.text;
    return std::nullopt;
}

std::vector<std::string> builtinSampleNames()
{
    std::vector<std::string> names;
    for (const EmbeddedSample& sample : kSamples)
        names.emplace_back(sample.name);
    return names;
}

} // namespace waferscope::core

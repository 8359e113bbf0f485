#include "ui/wafer/fabricsnapshot.h"

#include <algorithm>

namespace waferscope::ui {

std::shared_ptr<const FrameSnapshot> makeFabricSnapshot(const core::fabric::RecordedFrames& frames, std::size_t index)
{
    std::shared_ptr<const core::fabric::CompactFrame> frame = frames.at(index);
    if (!frame)
        return nullptr;
    auto snapshot = std::make_shared<FrameSnapshot>();
    snapshot->index = index;
    snapshot->fabricFrame = frame;
    const double clockHz = frames.clockHz() > 0.0 ? frames.clockHz() : 1.0;
    snapshot->step.start = double(frame->cycle - frame->intervalCycles) / clockHz;
    snapshot->step.end = double(frame->cycle) / clockHz;
    snapshot->step.iteration = int(frame->position);
    const auto wafer = std::size_t(frames.fabricWidth()) * std::size_t(frames.fabricHeight());
    std::vector<float> activity(wafer, 0.0f);
    std::vector<float> links(wafer * 4, 0.0f);
    std::uint8_t peak = 0;
    for (std::uint8_t load : frame->linkLoad)
        peak = std::max(peak, load);
    snapshot->trafficMax = niceScaleMax(double(peak) / 255.0);
    const float linkScale = float(1.0 / (255.0 * snapshot->trafficMax));
    for (int y = 0; y < frames.height() && y + frames.originY() < frames.fabricHeight(); ++y)
        for (int x = 0; x < frames.width() && x + frames.originX() < frames.fabricWidth(); ++x) {
            const std::size_t from = std::size_t(y) * std::size_t(frames.width()) + std::size_t(x);
            const std::size_t to = std::size_t(y + frames.originY()) * std::size_t(frames.fabricWidth())
                + std::size_t(x + frames.originX());
            activity[to] = float(frame->activity[from]) / 255.0f;
            for (std::size_t d = 0; d < 4; ++d)
                links[to * 4 + d] = std::min(1.0f, float(frame->linkLoad[from * 4 + d]) * linkScale);
        }
    std::vector<float> busiest(wafer, 0.0f);
    for (std::size_t pe = 0; pe < wafer; ++pe)
        busiest[pe] = std::max({ links[pe * 4], links[pe * 4 + 1], links[pe * 4 + 2], links[pe * 4 + 3] });
    auto activityField = std::make_shared<MeshField>();
    activityField->pe.push_back(std::move(activity));
    auto trafficField = std::make_shared<MeshField>();
    trafficField->pe.push_back(std::move(busiest));
    trafficField->links.push_back(std::move(links));
    snapshot->trafficModelled = peak > 0;
    snapshot->activity = std::move(activityField);
    snapshot->traffic = std::move(trafficField);
    return snapshot;
}

} // namespace waferscope::ui

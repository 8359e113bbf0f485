#pragma once

#include "core/fabric/framerecorder.h"
#include "ui/wafer/playbackcontroller.h"

#include <memory>

namespace waferscope::ui {

// The snapshot of frame `index` of a token run on the fabric (on any thread): its measured
// activity and link loads placed at the frames' origin on the whole wafer, the traffic scaled
// like an engine frame's (niceScaleMax of its busiest link). Null past the end.
std::shared_ptr<const FrameSnapshot> makeFabricSnapshot(const core::fabric::RecordedFrames& frames, std::size_t index);

} // namespace waferscope::ui

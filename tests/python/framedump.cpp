// The reference the Python module's frames are checked against: core's FrameSource for one step
// of a run, written as raw float32 (activity, then link loads in the engine's own order: north,
// south, east, west per PE), after a line "height width frames".
//
//   waferscope-framedump PARAMS SYSTEM MODE NUM_CSX MAX_STEPS STEP WAFER OUT
#include "core/common/names.h"
#include "core/compiler/compiler.h"
#include "core/engine/engine.h"
#include "core/engine/framesource.h"
#include "core/hardware/builtinpresets.h"
#include "core/model/modelloader.h"

#include <cstdio>
#include <fstream>
#include <string>

using namespace waferscope::core;

int main(int argc, char** argv)
{
    if (argc != 9) {
        std::fprintf(stderr, "usage: %s PARAMS SYSTEM MODE NUM_CSX MAX_STEPS STEP WAFER OUT\n", argv[0]);
        return 2;
    }
    const Expected<LoadedModelFile> model = loadModelFile(argv[1]);
    const Expected<SystemSpec> system = loadBuiltinPreset(argv[2]);
    const std::optional<RunMode> kind = fromName<RunMode>(argv[3]);
    if (!model || !system || !kind) {
        std::fprintf(stderr, "bad input\n");
        return 2;
    }
    CompileOptions options;
    options.mode = *kind == RunMode::Inference ? RunMode::Inference : RunMode::Train;
    options.numSystems = std::stoi(argv[4]);
    const engine::Calibration& calibration = engine::builtinCalibration();
    const Expected<ExecutionPlan> plan = engine::compileFor(model->graph, *system, options, calibration);
    if (!plan) {
        std::fprintf(stderr, "%s\n", plan.error().format().c_str());
        return 3;
    }
    engine::RunOptions run;
    run.mode = *kind;
    run.maxSteps = std::stoi(argv[5]);
    const Expected<engine::RunResult> result = engine::run(*plan, model->graph, *system, run, calibration);
    if (!result) {
        std::fprintf(stderr, "%s\n", result.error().format().c_str());
        return 3;
    }
    const engine::FrameSource frames(*plan, model->graph, *system, *result, calibration);
    const engine::EngineFrame frame = frames.frameAtStep(std::stoul(argv[6]), std::stoi(argv[7]));
    std::ofstream out(argv[8], std::ios::binary);
    out << frame.height << " " << frame.width << " " << frames.frameCount() << "\n";
    out.write(reinterpret_cast<const char*>(frame.peActivity.data()), std::streamsize(frame.peActivity.size() * 4));
    out.write(reinterpret_cast<const char*>(frame.linkLoad.data()), std::streamsize(frame.linkLoad.size() * 4));
    return out ? 0 : 1;
}

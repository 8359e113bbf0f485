#pragma once

#include "core/common/expected.h"
#include "core/model/modelconfig.h"
#include "core/model/modelgraph.h"

#include <string>
#include <string_view>

namespace waferscope::core {

// Reads a Model Zoo params YAML (either schema generation) into a validated ModelConfig.
// Every error is located (FILE:LINE:COL) and nothing is guessed: a missing required size, a
// wrong type, an absurd value or an inconsistent shape is an error.
Expected<ModelConfig> readParamsText(std::string_view text, const std::string& fileName);
Expected<ModelConfig> readParamsFile(const std::string& path);
// The bytes of a params file, as readParamsFile reads them (size-limited, located errors), for
// callers that keep what they loaded: readParamsText(bytes, path) then gives the same config.
Expected<std::string> readParamsBytes(const std::string& path);

// What buildModelGraph(config) will hold, counted without building it (the builders run on an
// assembler that keeps one op at a time, GraphAssembler::Mode::Census): its ops and weight
// tensors, and the heap bytes of the ops, their names and tensors as glibc allocates them. The
// reader refuses a config whose graph would not fit the memory budget (core/common/memorybudget.h).
// For configs the reader accepted, as buildModelGraph.
struct GraphFootprint {
    std::int64_t ops = 0;
    std::int64_t tensors = 0;
    double bytes = 0.0;
};
GraphFootprint estimateGraphFootprint(const ModelConfig& config);

// Builds the exact op graph of a config (every family supported by readParams).
ModelGraph buildModelGraph(const ModelConfig& config);

// readParamsFile + buildModelGraph.
Expected<ModelGraph> loadModel(const std::string& path);

// A params file as loaded: the exact bytes read (what a report's manifest hashes, whatever the
// file holds later) and the graph built from them.
struct LoadedModelFile {
    std::string path;
    std::string bytes;
    ModelGraph graph;
};
Expected<LoadedModelFile> loadModelFile(const std::string& path);

} // namespace waferscope::core

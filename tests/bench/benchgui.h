#pragma once

#include <nlohmann/json.hpp>

// The GUI's figures (built with the GUI only): heatmap_render_ms_full_wafer and
// gui_max_stall_ms_during_run. False when a step fails; without the GUI, adds nothing.
bool guiFigures(nlohmann::ordered_json& figures, bool quick, int rounds, int argc, char** argv);

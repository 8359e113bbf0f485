#pragma once

// The published figures WaferScope is checked against (resources/validation/figures.json,
// compiled in with the samples they run) and their evaluation: each figure is recomputed from its
// sample with a software profile of the calibration, and set beside the published value.
#include "core/common/expected.h"
#include "core/engine/calibration.h"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace waferscope::core::validation {

struct PublishedFigure {
    std::string id;
    std::string what;
    double published = 0.0; // the stated value; a claimed range's midpoint
    std::optional<double> publishedLow; // a claim of a range ("a speedup in [13, 16]")
    std::optional<double> publishedHigh;
    std::string unit;
    std::string source;
    std::string date;
    std::string conditions;
    // decode_tokens_per_s, time_to_first_token_s (a 1,024-token prompt, or the context), inference_wafers,
    // training_speedup (1 against num_csx systems), sparsity_speedup (params against sparse_params, one system)
    std::string kind;
    std::string params; // a sample's file name
    std::string sparseParams;
    std::string system; // preset name
    int numCsx = 1;
    std::string profile; // the software profile it belongs to
    bool reportedOnly = false;
    std::string notes; // why a miss is expected, what is not modelled
};

struct FigureResult {
    PublishedFigure figure;
    std::string command; // the waferscope-cli command that computes it
    std::string profile; // the profile it was predicted with
    bool fitted = false; // the profile's overhead was fitted to this figure
    double predicted = 0.0;
    double low = 0.0; // the predicted range: the figure's extremes as each ranged value varies alone
    double high = 0.0;
    double errorPct = 0.0; // (predicted - published) / published x 100; against a claimed range, the distance to it
    bool withinRange = false; // the published value (or claimed range) meets [low, high]
    std::vector<std::string> notes;
};

// Parses a validation file; errors located in `fileName`.
Expected<std::vector<PublishedFigure>> parseFigures(std::string_view text, const std::string& fileName);
// The compiled-in figures, and the compiled-in samples they run (file name -> YAML text).
const std::vector<PublishedFigure>& builtinFigures();
std::optional<std::string_view> builtinSample(const std::string& fileName);

// Evaluates one figure. `override`: predict with this calibration instead of the figure's profile
// (or the built-in default when the figure's profile is not built in).
Expected<FigureResult> evaluate(const PublishedFigure& figure, const engine::Calibration* override = nullptr);

// Every figure in order; `progress(done, total)` after each, returning false to cancel (the
// error "cancelled").
Expected<std::vector<FigureResult>> evaluateAll(const std::vector<PublishedFigure>& figures,
    const engine::Calibration* override = nullptr, const std::function<bool(int, int)>& progress = {});

// `waferscope-cli validate --json`: {"figures": [{id, published, unit, source, date, conditions,
// command, profile, fitted, reported_only, predicted, low, high, error_pct, within_range, ...}]}.
std::string resultsToJson(const std::vector<FigureResult>& results);
// The table `validate` prints, and the README carries (Markdown).
std::string resultsToMarkdown(const std::vector<FigureResult>& results);

} // namespace waferscope::core::validation

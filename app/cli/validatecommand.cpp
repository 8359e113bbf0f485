// No header of its own: defines runValidateCommand, declared with every subcommand in app/cli/commands.h.
// `validate`: every published figure of resources/validation recomputed and set beside the
// published value (core/validation/validation.h).
#include "app/cli/argparser.h"
#include "app/cli/commands.h"
#include "app/cli/exitcode.h"
#include "app/cli/jobinput.h"
#include "app/cli/progressline.h"

#include "core/validation/validation.h"

#include <cstdio>
#include <iostream>
#include <ostream>

namespace waferscope::cli {

int runValidateCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err)
{
    ArgParser parser("waferscope-cli validate",
        "Recomputes every published figure WaferScope is checked against (Llama 3.1 8B and 70B decode rates\n"
        "on CS-3, their wafer counts, GPT-3 XL scaling on 16 CS-2 and at 90% sparsity, Llama 3.1 405B on\n"
        "CS-3, WaferLLM on a WSE-2) from the built-in samples, and prints each beside the published value:\n"
        "its source, date and conditions, the command that computes it, the profile, the error. Each\n"
        "figure is predicted with the software profile of its release unless --calibration names one.");
    addCalibrationOption(parser);
    parser.addFlag("markdown", "print the table as Markdown (as the README carries it)");
    parser.addFlag("json", "print one JSON object on stdout");
    parser.addFlag("quiet", "no progress bar");
    if (!parser.parse(args)) {
        out << parser.helpText();
        return kExitOk;
    }
    std::optional<core::engine::Calibration> override;
    if (parser.value("calibration")) {
        core::Expected<core::engine::Calibration> calibration = parseCalibration(parser);
        if (!calibration)
            return printDiagnostic(err, calibration.error());
        override = std::move(calibration).value();
    }
    ProgressLine progress(err, !parser.has("quiet") && &err == &std::cerr && ProgressLine::stderrIsTerminal());
    const std::vector<core::validation::PublishedFigure>& figures = core::validation::builtinFigures();
    const core::Expected<std::vector<core::validation::FigureResult>> results
        = core::validation::evaluateAll(figures, override ? &*override : nullptr, [&](int done, int total) {
              progress.set("figure " + std::to_string(done) + "/" + std::to_string(total), done, total);
              return true;
          });
    if (!results)
        return printDiagnostic(err, results.error());
    if (parser.has("json")) {
        out << core::validation::resultsToJson(*results) << "\n";
        return kExitOk;
    }
    if (parser.has("markdown")) {
        out << core::validation::resultsToMarkdown(*results);
        return kExitOk;
    }
    const auto number = [](double value) {
        char text[32];
        std::snprintf(text, sizeof text, "%.4g", value);
        return std::string(text);
    };
    for (const core::validation::FigureResult& result : *results) {
        const core::validation::PublishedFigure& figure = result.figure;
        const std::string published = figure.publishedLow
            ? number(*figure.publishedLow) + " to " + number(*figure.publishedHigh)
            : number(figure.published);
        char error[64];
        std::snprintf(error, sizeof error, "%+.1f%%", result.errorPct);
        const std::string verdict = result.fitted ? std::string("fitted to it")
            : figure.reportedOnly                 ? std::string(error) + " (reported only)"
            : result.withinRange                  ? std::string(error) + ", within range"
                                                  : std::string(error);
        out << figure.what << "\n  published " << published << " " << figure.unit << " (" << figure.source << ", "
            << figure.date << "; " << figure.conditions << ")\n  predicted " << number(result.predicted) << " "
            << figure.unit << " with " << result.profile << ": " << verdict << "\n  $ " << result.command << "\n";
        for (const std::string& note : result.notes)
            out << "  note: " << note << "\n";
        out << "\n";
    }
    return kExitOk;
}

} // namespace waferscope::cli

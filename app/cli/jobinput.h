#pragma once

// What compile, run and scale share: reading --system, --params, --num_csx and --execution,
// and loading the preset and the model with located errors.
#include "app/cli/argparser.h"

#include "core/compiler/compiler.h"
#include "core/engine/calibration.h"
#include "core/engine/engine.h"
#include "core/hardware/systemspec.h"
#include "core/model/modelgraph.h"
#include "core/report/rundirectorywriter.h"

#include <optional>
#include <ostream>
#include <string>

namespace waferscope::cli {

struct JobInput {
    std::string path;
    std::string bytes; // the params file as read: a report's manifest hashes these

    core::SystemSpec system;
    core::ModelGraph graph;
};

// Adds --params, --system, --num_csx and --execution to a parser.
void addJobOptions(ArgParser& parser);

// Loads the preset and the model named by the parsed options. On an error prints it, located, on
// `err` and returns nothing (exitCode is then the one its kind selects).
std::optional<JobInput> loadJobInput(const ArgParser& parser, std::ostream& err, int& exitCode);

// --calibration NAME|FILE[#PROFILE] (default: the built-in calibration's default profile). A
// file that does not parse is a Diagnostic located in it.
void addCalibrationOption(ArgParser& parser);
core::Expected<core::engine::Calibration> parseCalibration(const ArgParser& parser);

// The directory --model_dir names must be creatable: its nearest existing ancestor is a
// writable directory. Checked before the run so that a long run is not lost to a typo.
std::optional<std::string> modelDirProblem(const std::string& directory);

// Opens --model_dir for a command's files (core::report::RunDirectoryWriter): the directory is the
// command's from now until its files are committed, and a second writer is refused. Leaves
// `writer` empty when `modelDir` is not given; the refusal otherwise.
std::optional<core::Diagnostic> openModelDir(
    const std::optional<std::string>& modelDir, std::optional<core::report::RunDirectoryWriter>& writer);

// --num_csx N (1..4096), or 0 when absent.
int parseNumCsx(const ArgParser& parser);
core::ExecutionChoice parseExecution(const ArgParser& parser);

// Compiles the way the software profile does (core::engine::compileFor, with `run`'s prompt for an
// inference plan) and checks the plan; prints the reason and returns nothing when it cannot be
// mapped (exitCode is then the one the diagnostic's kind selects: kExitCannotMap, kExitBadInput for
// options that mean nothing here such as --num_csx for inference, or kExitInternalError for a plan
// that breaks its invariants).
std::optional<core::ExecutionPlan> compileJob(const JobInput& input, const core::CompileOptions& options,
    const core::engine::Calibration& calibration, const core::engine::RunOptions& run, const char* command,
    std::ostream& err, int& exitCode);

} // namespace waferscope::cli

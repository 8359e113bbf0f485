#pragma once

// The generator of the hostile-input suite (test_hostile): from a seed, bad inputs for every
// reader (params YAML, hardware presets, calibration, jobs files, reports), special files in
// their place (a FIFO, a device, a directory, /proc/self/mem) and hostile values for the CLI's
// options. Each case is a complete waferscope-cli command line over files it writes into a
// scratch folder. The same seed gives the same cases, so a failure is reproduced by its seed and
// index alone.
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace waferscope::test {

struct HostileCase {
    std::string kind; // "params", "preset", "calibration", "jobs", "report", "options", "special"
    std::string description; // how the input was made, for a failure message
    std::vector<std::string> args; // the command line after "waferscope-cli"
};

class HostileCases {
public:
    // `scratch` must exist; `baseReport` is a report.json of a real run, to mutate and compare to.
    HostileCases(std::uint64_t seed, std::filesystem::path scratch, std::filesystem::path baseReport);

    HostileCase make(int index);

private:
    HostileCase params(int index);
    HostileCase preset(int index);
    HostileCase calibration(int index);
    HostileCase jobs(int index);
    HostileCase report(int index);
    HostileCase options(int index);
    HostileCase special(int index);

    // Text mutations: one of the YAML or the JSON ones, chosen by the generator.
    std::string mutateYaml(std::string text, std::string& description);
    std::string mutateJson(std::string text, std::string& description);
    std::string hostileScalar();
    std::string hostileJsonValue();
    std::string hostileOptionValue();
    std::string write(const std::string& name, const std::string& bytes);
    std::size_t pick(std::size_t count);

    std::mt19937_64 m_random;
    std::filesystem::path m_scratch;
    std::filesystem::path m_baseReport;
    std::vector<std::string> m_params; // texts of the params files mutated
    std::vector<std::string> m_paramsNames;
    std::string m_preset;
    std::string m_calibration;
    std::string m_jobs;
    std::string m_report;
};

} // namespace waferscope::test

#include "core/cluster/jobsfile.h"

#include "core/common/textfile.h"
#include "core/hardware/builtinpresets.h"
#include "core/model/yamldocument.h"
#include "core/model/yamlfields.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <set>
#include <sstream>

namespace waferscope::core::cluster {

namespace {

namespace fs = std::filesystem;

constexpr std::initializer_list<const char*> kClusterKeys = { "system", "systems", "memoryx_bytes" };
constexpr std::initializer_list<const char*> kJobKeys = { "name", "params", "mode", "num_csx", "max_steps", "tokens",
    "replicas", "users", "duration_s", "tokens_per_s_per_user", "submit_s", "priority" };
constexpr std::initializer_list<const char*> kTopKeys = { "cluster", "jobs" };

Location locationOf(const YAML::Mark& mark)
{
    return mark.is_null() ? Location { 1, 1 } : Location { mark.line + 1, mark.column + 1 };
}

std::string listed(std::initializer_list<const char*> keys)
{
    std::string text;
    for (const char* key : keys)
        text += std::string(text.empty() ? "" : ", ") + key;
    return text;
}

// An unknown key is an error: a misspelt `num_csx` would otherwise schedule the default.
void refuseUnknownKeys(const YamlFields& fields, const YamlSection& section, std::initializer_list<const char*> known)
{
    if (!section.present())
        return;
    for (auto it = section.node.begin(); it != section.node.end(); ++it) {
        const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string();
        bool found = false;
        for (const char* name : known)
            found = found || key == name;
        if (!found)
            fields.fail(it->first.Mark(),
                "unknown key '" + (section.path.empty() ? key : section.path + "." + key) + "'; "
                    + (section.path.empty() ? "a jobs file" : "'" + section.path + "'") + " takes " + listed(known));
    }
}

bool validName(const std::string& name)
{
    if (name.empty() || name.size() > 128)
        return false;
    for (const char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.'
                || c == '-'))
            return false;
    return true;
}

ClusterConfig readCluster(const YamlFields& fields, const YamlSection& root)
{
    const YamlSection section = fields.section(root, "cluster", true);
    refuseUnknownKeys(fields, section, kClusterKeys);
    ClusterConfig cluster;
    cluster.at = locationOf(section.keyMark);
    const std::optional<std::string> system = fields.text(section, "system");
    if (!system)
        fields.fail(section.keyMark, "missing 'cluster.system' (a hardware preset: " + builtinPresetChoices() + ")");
    std::string names;
    bool known = false;
    for (const EmbeddedPreset& preset : embeddedPresets()) {
        known = known || preset.name == *system;
        names += (names.empty() ? "" : ", ") + std::string(preset.name);
    }
    if (!known)
        fields.fail(fields.valueMark(section, "system"),
            "unknown system '" + *system + "' in 'cluster.system'; expected " + names);
    cluster.system = *system;
    cluster.systems = int(fields.requiredInteger(section, "systems", 1, 100000));
    cluster.systemsAt = locationOf(fields.valueMark(section, "systems"));
    cluster.memoryxBytes = fields.number(section, "memoryx_bytes", 1.0, 1e21);
    return cluster;
}

JobSpec readJob(const YamlFields& fields, const YamlSection& entry, const fs::path& base)
{
    refuseUnknownKeys(fields, entry, kJobKeys);
    JobSpec job;
    job.at = locationOf(entry.keyMark);
    const std::optional<std::string> name = fields.text(entry, "name");
    if (!name)
        fields.fail(entry.keyMark, "missing '" + entry.path + ".name'");
    if (!validName(*name))
        fields.fail(fields.valueMark(entry, "name"),
            "job name '" + *name + "' may only hold letters, digits, '_', '.' and '-' (1 to 128 of them)");
    job.name = *name;
    const std::optional<std::string> params = fields.text(entry, "params");
    if (!params || params->empty())
        fields.fail(entry.keyMark, "missing '" + entry.path + ".params' (the job's Model Zoo params file)");
    job.params = *params;
    job.paramsAt = locationOf(fields.valueMark(entry, "params"));
    const fs::path given(*params);
    job.paramsPath = (given.is_absolute() ? given : base / given).lexically_normal().string();
    const std::string mode = fields.choice(entry, "mode", { "train", "eval", "inference" }).value_or("train");
    job.mode = mode == "inference" ? RunMode::Inference : mode == "eval" ? RunMode::Eval : RunMode::Train;
    job.numCsx = int(fields.integer(entry, "num_csx", 1, 100000).value_or(1));
    job.numCsxAt = locationOf(fields.valueMark(entry, "num_csx"));
    job.submitS = fields.number(entry, "submit_s", 0.0, 1e12).value_or(0.0);
    job.priority = int(fields.integer(entry, "priority", -1000000, 1000000).value_or(0));
    const auto refuse = [&](const char* key, const std::string& why) {
        if (fields.value(entry, key))
            fields.fail(fields.valueMark(entry, key), "'" + entry.path + "." + key + "' " + why);
    };
    if (job.mode == RunMode::Inference) {
        refuse("max_steps", "is for training; an inference job runs for duration_s");
        refuse("tokens", "is for training; an inference job runs for duration_s");
        job.replicas = int(fields.integer(entry, "replicas", 1, 100000).value_or(1));
        job.users = int(fields.integer(entry, "users", 1, 10000000).value_or(1));
        const std::optional<double> duration = fields.number(entry, "duration_s", 1e-6, 1e12);
        if (!duration)
            fields.fail(entry.keyMark, "missing '" + entry.path + ".duration_s' (how long the inference job serves)");
        job.durationS = *duration;
        job.tokensPerSPerUser = fields.number(entry, "tokens_per_s_per_user", 1e-6, 1e9);
    } else {
        for (const char* key : { "replicas", "users", "duration_s", "tokens_per_s_per_user" })
            refuse(key, "is for inference jobs; a training job gives max_steps or tokens");
        job.maxSteps = fields.integer(entry, "max_steps", 1, 1'000'000'000);
        job.tokens = fields.number(entry, "tokens", 1.0, 1e18);
        if (job.maxSteps && job.tokens)
            fields.fail(
                fields.valueMark(entry, "tokens"), "'" + entry.path + "' gives both max_steps and tokens; give one");
        if (!job.maxSteps && !job.tokens)
            fields.fail(entry.keyMark, "'" + entry.path + "' needs max_steps or a token budget 'tokens'");
    }
    return job;
}

JobsFile readDocument(const YAML::Node& document, const std::string& fileName, std::vector<Diagnostic> warnings)
{
    const YamlFields fields(fileName);
    const YamlSection root = fields.root(document);
    if (!document.IsMap())
        fields.fail(document.Mark(), "a jobs file is a mapping with 'cluster:' and 'jobs:' keys");
    if (!document["jobs"].IsDefined() && (document["model"].IsDefined() || document["trainer"].IsDefined()))
        fields.fail(document.Mark(),
            "this is a Model Zoo params file, not a WaferScope jobs file (it has no top-level 'jobs:' key); "
            "a jobs file lists jobs whose 'params' name such files");
    refuseUnknownKeys(fields, root, kTopKeys);
    JobsFile file;
    file.path = fileName;
    file.warnings = std::move(warnings);
    file.cluster = readCluster(fields, root);
    const YAML::Node jobs = document["jobs"];
    if (!jobs.IsDefined() || jobs.IsNull())
        fields.fail(root.keyMark, "missing 'jobs' (a list of jobs)");
    if (!jobs.IsSequence())
        fields.fail(jobs.Mark(), "'jobs' must be a list of jobs");
    if (jobs.size() == 0)
        fields.fail(jobs.Mark(), "'jobs' is empty; a jobs file lists at least one job");
    if (jobs.size() > std::size_t(kMaxJobs))
        fields.fail(jobs.Mark(),
            "'jobs' lists " + std::to_string(jobs.size()) + " jobs; at most " + std::to_string(kMaxJobs) + " are read");
    const fs::path base = fs::path(fileName).parent_path();
    std::set<std::string> names;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
        const YAML::Node node = jobs[i];
        const std::string path = "jobs[" + std::to_string(i) + "]";
        if (!node.IsMap())
            fields.fail(node.Mark(), "'" + path + "' must be a mapping of a job's keys");
        JobSpec job = readJob(fields, YamlSection { node, node.Mark(), path }, base);
        if (!names.insert(job.name).second)
            fields.fail(fields.valueMark(YamlSection { node, node.Mark(), path }, "name"),
                "a second job named '" + job.name + "'; job names are unique");
        file.jobs.push_back(std::move(job));
    }
    return file;
}

// Writes a number so that it reads back as the same double.
std::string exact(double value)
{
    std::ostringstream out;
    out.precision(17);
    out << value;
    return out.str();
}

// A YAML double-quoted string; control characters as escapes.
std::string quoted(const std::string& text)
{
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (std::uint8_t(c) < 0x20 || c == 0x7f) {
            char escape[8];
            std::snprintf(escape, sizeof escape, "\\x%02x", unsigned(std::uint8_t(c)));
            out += escape;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

} // namespace

bool isJobsFileText(std::string_view text)
{
    for (std::size_t line = 0; line < text.size();) {
        if (text.compare(line, 4, "jobs") == 0) {
            const std::size_t colon = text.find_first_not_of(" \t", line + 4);
            if (colon != std::string_view::npos && text[colon] == ':')
                return true;
        }
        const std::size_t next = text.find_first_of("\n\r", line);
        if (next == std::string_view::npos)
            break;
        line = next + 1;
    }
    return false;
}

Expected<JobsFile> parseJobsFile(std::string_view text, const std::string& fileName)
{
    try {
        std::vector<ModelConfig::Warning> repeated;
        // A node per byte at most: the tree is bounded by the file's size and the memory budget,
        // and kMaxJobs is counted by the reader.
        const YAML::Node document = parseParamsDocument(
            text, fileName, repeated, YamlLimits { kMaxJobsFileBytes, kMaxJobsFileBytes, "jobs file" });
        std::vector<Diagnostic> warnings;
        for (const ModelConfig::Warning& warning : repeated)
            warnings.push_back({ fileName, warning.line, warning.column, warning.message });
        return readDocument(document, fileName, std::move(warnings));
    } catch (const InputError& error) {
        return error.diagnostic;
    } catch (const YAML::Exception& error) {
        return yamlDiagnostic(error, fileName);
    }
}

Expected<JobsFile> readJobsFile(const std::string& path)
{
    Expected<std::string> text = readTextFile(path, kMaxJobsFileBytes, "WaferScope jobs file (YAML)");
    if (!text)
        return text.error();
    return parseJobsFile(*text, path);
}

std::string jobsFileText(const JobsFile& file, const std::string& targetPath)
{
    const fs::path targetDir = fs::absolute(fs::path(targetPath)).lexically_normal().parent_path();
    std::string out = "# WaferScope jobs file: waferscope-cli cluster --jobs FILE\ncluster:\n";
    out += "  system: " + file.cluster.system + "\n";
    out += "  systems: " + std::to_string(file.cluster.systems) + "\n";
    if (file.cluster.memoryxBytes)
        out += "  memoryx_bytes: " + exact(*file.cluster.memoryxBytes) + "\n";
    out += "jobs:\n";
    for (const JobSpec& job : file.jobs) {
        // An absolute path stays as given; a relative one is rewritten against the new place.
        const fs::path params = fs::absolute(fs::path(job.paramsPath)).lexically_normal();
        const bool absolute = fs::path(job.params).is_absolute();
        out += "  - name: " + quoted(job.name) + "\n";
        out += "    params: " + quoted(absolute ? job.params : params.lexically_relative(targetDir).string()) + "\n";
        out += std::string("    mode: ") + toString(job.mode) + "\n";
        out += "    num_csx: " + std::to_string(job.numCsx) + "\n";
        if (job.mode == RunMode::Inference) {
            out += "    replicas: " + std::to_string(job.replicas) + "\n";
            out += "    users: " + std::to_string(job.users) + "\n";
            out += "    duration_s: " + exact(job.durationS) + "\n";
            if (job.tokensPerSPerUser)
                out += "    tokens_per_s_per_user: " + exact(*job.tokensPerSPerUser) + "\n";
        } else if (job.maxSteps) {
            out += "    max_steps: " + std::to_string(*job.maxSteps) + "\n";
        } else if (job.tokens) {
            out += "    tokens: " + exact(*job.tokens) + "\n";
        }
        out += "    submit_s: " + exact(job.submitS) + "\n";
        out += "    priority: " + std::to_string(job.priority) + "\n";
    }
    return out;
}

} // namespace waferscope::core::cluster

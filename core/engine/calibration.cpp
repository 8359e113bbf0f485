#include "core/engine/calibration.h"

#include "core/common/jsondocument.h"
#include "core/common/jsonlocator.h"
#include "core/common/textfile.h"
#include "core/model/builtinsamples.h"
#include "core/model/modelloader.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <stdexcept>

namespace waferscope::core::engine {

namespace {

// The built-in file is 6 KB; a user's copy with its own profiles stays far below this.
constexpr std::size_t kMaxCalibrationFileBytes = 4u << 20;

constexpr std::string_view kBuiltinText =
#include "waferscope/calibrationdata.inc"
    ;

constexpr const char* kSchemaV1 = "waferscope-calibration/1";
constexpr const char* kSchemaV2 = "waferscope-calibration/2";

class Reader {
public:
    Reader(std::string_view text, const std::string& fileName)
        : m_locator(text)
        , m_fileName(fileName)
    {
    }
    Diagnostic error(const std::string& pointer, const std::string& message) const
    {
        const auto at = m_locator.locate(pointer);
        return Diagnostic { m_fileName, at.line, at.column, message };
    }
    // Every constant `names` from the object at `pointer`, each {"value": >= 0, "fitted_to": text}.
    std::optional<Diagnostic> constants(const nlohmann::json& object, const std::string& pointer,
        const std::map<std::string, double*>& names, Calibration& calibration) const
    {
        const std::string where = pointer.empty() ? "constants" : pointer.substr(1) + "/constants";
        const auto constants = object.find("constants");
        if (constants == object.end() || !constants->is_object())
            return error(pointer + "/constants",
                "missing \"constants\" object in " + (pointer.empty() ? "the file" : pointer.substr(1)));
        for (const auto& [name, target] : names) {
            const std::string at = pointer + "/constants/" + name;
            const auto entry = constants->find(name);
            if (entry == constants->end() || !entry->is_object() || !entry->contains("value")
                || !entry->at("value").is_number() || !entry->contains("fitted_to")
                || !entry->at("fitted_to").is_string())
                return error(
                    at, where + "." + name + " needs a numeric \"value\" and the \"fitted_to\" figure it comes from");
            const double value = entry->at("value").get<double>();
            if (!(value >= 0.0) || !(value < 1e12))
                return error(at + "/value", where + "." + name + " must be a number from 0 to 1e12");
            *target = value;
            calibration.fittedTo[name] = entry->at("fitted_to").get<std::string>();
            if (entry->contains("range") || entry->contains("range_reason")) {
                const nlohmann::json range = entry->value("range", nlohmann::json());
                if (!range.is_array() || range.size() != 2 || !range[0].is_number() || !range[1].is_number()
                    || !(range[0].get<double>() <= value) || !(value <= range[1].get<double>())
                    || !entry->contains("range_reason") || !entry->at("range_reason").is_string())
                    return error(at,
                        where + "." + name
                            + " range must be [low, high] around its value, with a \"range_reason\" text");
                calibration.ranges[name] = Calibration::Range { range[0].get<double>(), range[1].get<double>(),
                    entry->at("range_reason").get<std::string>() };
            }
        }
        return std::nullopt;
    }

private:
    JsonLocator m_locator;
    std::string m_fileName;
};

// A mechanism's value, one of those the engine builds (the names of its table).
template <typename Mechanism>
std::optional<Diagnostic> mechanism(const Reader& reader, const nlohmann::json& mechanisms, const std::string& pointer,
    const std::string& name, Mechanism& target)
{
    const auto entry = mechanisms.find(name);
    if (entry == mechanisms.end())
        return std::nullopt; // the default
    const std::optional<Mechanism> built
        = entry->is_string() ? fromName<Mechanism>(entry->get<std::string>()) : std::nullopt;
    if (!built) {
        std::string list;
        for (const std::string& value : allNames<Mechanism>())
            list += (list.empty() ? "\"" : ", \"") + value + "\"";
        return reader.error(pointer + "/" + name, "mechanisms." + name + " must be one the engine builds: " + list);
    }
    target = *built;
    return std::nullopt;
}

// A profile's "speculative" object: {"draft_params": a built-in sample, "draft_why": text,
// "acceptance_rate": {"value": [0, 1), "source": text, "range": [low, high], "range_reason": text},
// "max_draft_tokens": 1 to 16}.
std::optional<Diagnostic> speculation(
    const Reader& reader, const nlohmann::json& profile, const std::string& pointer, Calibration& calibration)
{
    const std::string at = pointer + "/speculative";
    const auto object = profile.find("speculative");
    if (object == profile.end() || !object->is_object())
        return reader.error(pointer,
            "speculative_decoding \"draft_model\" needs a \"speculative\" object: the draft model, its acceptance "
            "rate and the most tokens it drafts a pass");
    Speculation& s = calibration.speculation;
    const auto text = [&](const char* key, std::string& target) -> std::optional<Diagnostic> {
        if (!object->contains(key) || !(*object)[key].is_string() || (*object)[key].get<std::string>().empty())
            return reader.error(at, std::string("speculative needs a \"") + key + "\" text");
        target = (*object)[key].get<std::string>();
        return std::nullopt;
    };
    if (auto error = text("draft_params", s.draftParams))
        return error;
    if (!builtinSample(s.draftParams)) {
        std::string list;
        for (const std::string& name : builtinSampleNames())
            list += (list.empty() ? "" : ", ") + name;
        return reader.error(at + "/draft_params",
            "speculative.draft_params must name a built-in sample (" + list + "), not \"" + s.draftParams + "\"");
    }
    // A draft proposes the next tokens for its target to check: it must be a language model that
    // generates them (whether its vocabulary is the target's is checked when a target runs).
    const Expected<ModelConfig> draft = readParamsText(*builtinSample(s.draftParams), "samples/" + s.draftParams);
    if (!draft || !isDecoderLanguageModel(draft->family))
        return reader.error(at + "/draft_params",
            "speculative.draft_params must name a decoder-only language model (the draft proposes the tokens its "
            "target checks), not \""
                + s.draftParams + "\""
                + (draft ? std::string(" (family ") + toString(draft->family) + ")" : std::string()));
    const Diagnostic where = reader.error(at + "/draft_params", {});
    s.draftFile = where.file;
    s.draftLine = where.line;
    s.draftColumn = where.column;
    if (auto error = text("draft_why", s.draftWhy))
        return error;
    const nlohmann::json most = object->value("max_draft_tokens", nlohmann::json());
    if (!most.is_number_integer() || most.get<std::int64_t>() < 1 || most.get<std::int64_t>() > 16)
        return reader.error(
            at + "/max_draft_tokens", "speculative.max_draft_tokens must be a whole number from 1 to 16");
    s.maxDraftTokens = int(most.get<std::int64_t>());
    const std::string rateAt = at + "/acceptance_rate";
    const nlohmann::json rate = object->value("acceptance_rate", nlohmann::json());
    if (!rate.is_object() || !rate.contains("value") || !rate["value"].is_number() || !rate.contains("source")
        || !rate["source"].is_string())
        return reader.error(rateAt,
            "speculative.acceptance_rate needs a numeric \"value\" and the \"source\" it was "
            "measured in");
    s.acceptanceRate = rate["value"].get<double>();
    if (!(s.acceptanceRate >= 0.0) || !(s.acceptanceRate < 1.0))
        return reader.error(rateAt + "/value", "speculative.acceptance_rate must be at least 0 and below 1");
    s.acceptanceSource = rate["source"].get<std::string>();
    calibration.fittedTo["acceptance_rate"] = s.acceptanceSource;
    if (rate.contains("range") || rate.contains("range_reason")) {
        const nlohmann::json range = rate.value("range", nlohmann::json());
        if (!range.is_array() || range.size() != 2 || !range[0].is_number() || !range[1].is_number()
            || !(range[0].get<double>() >= 0.0) || !(range[0].get<double>() <= s.acceptanceRate)
            || !(s.acceptanceRate <= range[1].get<double>()) || !(range[1].get<double>() < 1.0)
            || !rate.contains("range_reason") || !rate["range_reason"].is_string())
            return reader.error(rateAt,
                "speculative.acceptance_rate range must be [low, high] around its value, within [0, 1), with a "
                "\"range_reason\" text");
        calibration.ranges["acceptance_rate"] = Calibration::Range { range[0].get<double>(), range[1].get<double>(),
            rate["range_reason"].get<std::string>() };
    }
    return std::nullopt;
}

} // namespace

std::string_view builtinCalibrationText()
{
    return kBuiltinText;
}

Expected<Calibration> parseCalibration(std::string_view text, const std::string& fileName, const std::string& profile)
{
    // A calibration nests 5 deep (profiles, a profile, its constants, a constant, its value).
    Expected<JsonTree> parsed = parseJsonDocument(text, fileName, 8, "not valid JSON: ", "a calibration file nests 5");
    if (!parsed)
        return parsed.error();
    const JsonTree json = std::move(parsed).value();
    const Reader reader(text, fileName);
    const std::string schema = json.is_object() && json.contains("schema") && json["schema"].is_string()
        ? json["schema"].get<std::string>()
        : std::string();
    if (schema != kSchemaV1 && schema != kSchemaV2)
        return Diagnostic { fileName, 1, 1,
            "expected a calibration object with \"schema\": \"" + std::string(kSchemaV2) + "\" (or \"" + kSchemaV1
                + "\")" };
    Calibration calibration;
    if (json.contains("version") && json["version"].is_string())
        calibration.version = json["version"].get<std::string>();
    const std::map<std::string, double*> shared {
        { "reduce_add_cycles", &calibration.reduceAddCycles },
        { "stream_marker_cycles", &calibration.streamMarkerCycles },
    };
    const std::map<std::string, double*> overhead { { "region_launch_cycles", &calibration.regionLaunchCycles } };
    if (schema == kSchemaV1) {
        std::map<std::string, double*> all = shared;
        all.insert(overhead.begin(), overhead.end());
        if (auto error = reader.constants(json, "", all, calibration))
            return *error;
        calibration.profile = calibration.defaultProfile = "custom";
        calibration.profiles = { "custom" };
        if (!profile.empty() && profile != "custom")
            return Diagnostic { fileName, 1, 1, "no profile \"" + profile + "\": this file has one set of constants" };
        return calibration;
    }
    if (auto error = reader.constants(json, "", shared, calibration))
        return *error;
    const auto profiles = json.find("profiles");
    if (profiles == json.end() || !profiles->is_object() || profiles->empty())
        return reader.error("/profiles", "missing \"profiles\" object with at least one software profile");
    for (const auto& [name, body] : profiles->items())
        calibration.profiles.push_back(name);
    if (!json.contains("default_profile") || !json["default_profile"].is_string()
        || !profiles->contains(json["default_profile"].get<std::string>()))
        return reader.error("/default_profile", "\"default_profile\" must name one of the file's profiles");
    calibration.defaultProfile = json["default_profile"].get<std::string>();
    calibration.profile = profile.empty() ? calibration.defaultProfile : profile;
    if (!profiles->contains(calibration.profile)) {
        std::string list;
        for (const std::string& name : calibration.profiles)
            list += (list.empty() ? "" : ", ") + name;
        return reader.error("/profiles", "no profile \"" + calibration.profile + "\" (the file has " + list + ")");
    }
    const nlohmann::json& chosen = (*profiles)[calibration.profile];
    const std::string at = "/profiles/" + calibration.profile;
    if (!chosen.is_object())
        return reader.error(at, "profile \"" + calibration.profile + "\" must be an object");
    for (const auto& [key, target] :
        { std::pair { "release", &calibration.release }, std::pair { "fitted_figure", &calibration.fittedFigure } }) {
        if (!chosen.contains(key) || !chosen[key].is_string())
            return reader.error(at, "profile \"" + calibration.profile + "\" needs a \"" + key + "\" text");
        *target = chosen[key].get<std::string>();
    }
    if (const auto mechanisms = chosen.find("mechanisms"); mechanisms != chosen.end()) {
        if (!mechanisms->is_object())
            return reader.error(at + "/mechanisms", "\"mechanisms\" must be an object");
        Mechanisms& m = calibration.mechanisms;
        if (auto error = mechanism(reader, *mechanisms, at + "/mechanisms", "gemv", m.gemv))
            return *error;
        if (auto error = mechanism(reader, *mechanisms, at + "/mechanisms", "region_sizing", m.regionSizing))
            return *error;
        if (auto error
            = mechanism(reader, *mechanisms, at + "/mechanisms", "speculative_decoding", m.speculativeDecoding))
            return *error;
        if (m.speculativeDecoding == SpeculativeDecoding::DraftModel)
            if (auto error = speculation(reader, chosen, at, calibration))
                return *error;
    }
    if (auto error = reader.constants(chosen, at, overhead, calibration))
        return *error;
    return calibration;
}

const Calibration& builtinCalibration()
{
    static const Calibration calibration = [] {
        auto parsed = parseCalibration(kBuiltinText, "resources/calibration/engine.json");
        if (!parsed)
            throw std::logic_error("built-in calibration is broken: " + parsed.error().format());
        return std::move(parsed).value();
    }();
    return calibration;
}

Expected<Calibration> resolveCalibration(const std::string& nameOrFile)
{
    const Calibration& builtin = builtinCalibration();
    if (std::find(builtin.profiles.begin(), builtin.profiles.end(), nameOrFile) != builtin.profiles.end()) {
        Expected<Calibration> named = parseCalibration(kBuiltinText, "resources/calibration/engine.json", nameOrFile);
        if (!named)
            return named;
        Calibration calibration = std::move(named).value();
        calibration.speculation.draftFile = "--calibration"; // what the user gave, not the compiled-in file
        calibration.speculation.draftLine = calibration.speculation.draftColumn = 0;
        return calibration;
    }
    const std::size_t hash = nameOrFile.rfind('#');
    const std::string path = hash == std::string::npos ? nameOrFile : nameOrFile.substr(0, hash);
    const std::string profile = hash == std::string::npos ? std::string() : nameOrFile.substr(hash + 1);
    std::error_code ignored;
    if (!std::filesystem::exists(std::filesystem::symlink_status(path, ignored))) {
        std::string list;
        for (const std::string& name : builtin.profiles)
            list += (list.empty() ? "" : ", ") + name;
        return Diagnostic { "--calibration", 0, 0,
            "'" + nameOrFile + "' is neither a built-in software profile (" + list + ") nor an existing file" };
    }
    Expected<std::string> text = readTextFile(path, kMaxCalibrationFileBytes, "WaferScope calibration JSON file");
    if (!text)
        return text.error();
    return parseCalibration(text.value(), path, profile);
}

} // namespace waferscope::core::engine

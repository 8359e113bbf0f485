#include "core/engine/calibration.h"

#include "core/common/jsonlocator.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace waferscope::core::engine {

namespace {

constexpr std::string_view kBuiltinText =
#include "waferscope/calibrationdata.inc"
    ;

} // namespace

std::string_view builtinCalibrationText()
{
    return kBuiltinText;
}

Expected<Calibration> parseCalibration(std::string_view text, const std::string& fileName)
{
    nlohmann::json json;
    try {
        json = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& error) {
        const auto at = JsonLocator::positionOfOffset(text, error.byte > 0 ? error.byte - 1 : 0);
        return Diagnostic { fileName, at.line, at.column, std::string("not valid JSON: ") + error.what() };
    }
    const JsonLocator locator(text);
    const auto located = [&](const std::string& pointer, const std::string& message) {
        const auto at = locator.locate(pointer);
        return Diagnostic { fileName, at.line, at.column, message };
    };
    if (!json.is_object() || json.value("schema", "") != "waferscope-calibration/1")
        return Diagnostic { fileName, 1, 1,
            "expected a calibration object with \"schema\": \"waferscope-calibration/1\"" };
    Calibration calibration;
    calibration.version = json.value("version", "");
    const auto constants = json.find("constants");
    if (constants == json.end() || !constants->is_object())
        return located("/constants", "missing \"constants\" object");
    const std::map<std::string, double*> known {
        { "reduce_add_cycles", &calibration.reduceAddCycles },
        { "stream_marker_cycles", &calibration.streamMarkerCycles },
        { "region_launch_cycles", &calibration.regionLaunchCycles },
    };
    for (const auto& [name, target] : known) {
        const auto entry = constants->find(name);
        if (entry == constants->end() || !entry->is_object() || !entry->contains("value")
            || !entry->at("value").is_number() || !entry->contains("fitted_to") || !entry->at("fitted_to").is_string())
            return located("/constants/" + name,
                "constants." + name + " needs a numeric \"value\" and the \"fitted_to\" figure it comes from");
        const double value = entry->at("value").get<double>();
        if (!(value >= 0.0))
            return located("/constants/" + name + "/value", "constants." + name + " must not be negative");
        *target = value;
        calibration.fittedTo[name] = entry->at("fitted_to").get<std::string>();
    }
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

} // namespace waferscope::core::engine

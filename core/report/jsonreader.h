#pragma once

// Reading report.json (internal to core/report): typed access to the parsed document that names
// the key at fault by its JSON pointer, so that the caller can locate it in the text.
#include "core/common/names.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace waferscope::core::report {

struct CycleLevelReport;

namespace jsonread {

// A std::map per object. ordered_json looks keys up linearly, so parsing an object of n keys
// takes n^2 steps (a minute for a 1 MB object of short keys).
using ReadJson = nlohmann::json;

// A key missing or of the wrong type, by JSON pointer; located by the caller.
struct ReadError {
    std::string pointer;
    std::string message;
};

// Typed access to one object of the document, naming the key at fault.
class Reader {
public:
    Reader(const ReadJson& object, std::string pointer)
        : m_object(object)
        , m_pointer(std::move(pointer))
    {
        if (!object.is_object())
            throw ReadError { m_pointer, "expected an object" };
    }

    const ReadJson& at(const std::string& key) const
    {
        const auto found = m_object.find(key);
        if (found == m_object.end())
            throw ReadError { m_pointer, "missing key '" + key + "'" };
        return *found;
    }
    std::string where(const std::string& key) const { return m_pointer + "/" + key; }
    bool has(const std::string& key) const { return m_object.contains(key); }
    Reader object(const std::string& key) const { return Reader(at(key), where(key)); }

    double real(const std::string& key) const
    {
        const ReadJson& value = at(key);
        if (value.is_null())
            return std::numeric_limits<double>::quiet_NaN(); // written for a value that was not finite
        if (!value.is_number())
            throw ReadError { where(key), "'" + key + "' must be a number" };
        return value.get<double>();
    }
    // Numbers that cannot be otherwise: a time, a rate, FLOPs or bytes is at least 0 (null, written
    // for a value that was not finite, reads as NaN); a step takes a finite time above 0; a share
    // of a whole is from 0 to 1. Anything else is refused at the value.
    double nonNegative(const std::string& key) const
    {
        const double value = real(key);
        if (value < 0.0)
            throw ReadError { where(key), "'" + key + "' is " + at(key).dump() + ", expected a number of at least 0" };
        return value;
    }
    double positive(const std::string& key) const
    {
        const double value = real(key);
        if (!(value > 0.0) || !std::isfinite(value))
            throw ReadError { where(key), "'" + key + "' is " + at(key).dump() + ", expected a finite time above 0" };
        return value;
    }
    double fraction(const std::string& key) const
    {
        const double value = real(key);
        if (value < 0.0 || value > 1.0)
            throw ReadError { where(key), "'" + key + "' is " + at(key).dump() + ", expected a share from 0 to 1" };
        return value;
    }
    // An integer that fits `Int` (the field it is read into) as it is, never wrapped.
    template <typename Int = std::int64_t>
    Int integer(const std::string& key) const
    {
        const ReadJson& value = at(key);
        if (!value.is_number_integer())
            throw ReadError { where(key), "'" + key + "' must be an integer" };
        const bool fits = value.is_number_unsigned() ? std::in_range<Int>(value.get<std::uint64_t>())
                                                     : std::in_range<Int>(value.get<std::int64_t>());
        if (!fits)
            throw ReadError { where(key),
                "'" + key + "' is " + value.dump() + ", expected an integer in ["
                    + std::to_string(std::numeric_limits<Int>::min()) + ", "
                    + std::to_string(std::numeric_limits<Int>::max()) + "]" };
        return value.is_number_unsigned() ? Int(value.get<std::uint64_t>()) : Int(value.get<std::int64_t>());
    }
    // An integer of at least `low` (a count of systems, users, bytes).
    template <typename Int = std::int64_t>
    Int atLeast(const std::string& key, Int low) const
    {
        const Int value = integer<Int>(key);
        if (value < low)
            throw ReadError { where(key),
                "'" + key + "' is " + std::to_string(value) + ", expected at least " + std::to_string(low) };
        return value;
    }
    // Numbers in an array; null stands for a value that was not finite, as in real(). With
    // `stepTimes`, each must be a finite number above 0.
    std::vector<double> reals(const std::string& key, bool stepTimes = false) const
    {
        std::vector<double> list;
        for (std::size_t i = 0; const ReadJson& value : array(key)) {
            if (!value.is_number() && !value.is_null())
                throw ReadError { where(key) + "/" + std::to_string(i), "expected a number" };
            list.push_back(value.is_null() ? std::numeric_limits<double>::quiet_NaN() : value.get<double>());
            if (stepTimes && !(list.back() > 0.0 && std::isfinite(list.back())))
                throw ReadError { where(key) + "/" + std::to_string(i),
                    "'" + key + "' holds " + value.dump() + ", expected finite times above 0" };
            ++i;
        }
        return list;
    }
    std::string text(const std::string& key) const
    {
        const ReadJson& value = at(key);
        if (!value.is_string())
            throw ReadError { where(key), "'" + key + "' must be a string" };
        return value.get<std::string>();
    }
    // A name of one of the closed sets of core/common/names.h.
    template <typename Enum>
    Enum named(const std::string& key) const
    {
        const std::string name = text(key);
        if (const std::optional<Enum> value = fromName<Enum>(name))
            return *value;
        throw ReadError { where(key), unknownName<Enum>(key, name) };
    }
    template <typename Enum>
    static std::string unknownName(const std::string& key, const std::string& name)
    {
        std::vector<std::string> names = allNames<Enum>();
        std::erase(names, std::string()); // Bound::None, written for a region no layer ran on
        return "'" + key + "' is '" + name + "', expected " + choiceList(names);
    }
    std::vector<std::string> texts(const std::string& key) const
    {
        std::vector<std::string> list;
        for (std::size_t i = 0; const ReadJson& value : array(key)) {
            if (!value.is_string())
                throw ReadError { where(key) + "/" + std::to_string(i), "expected a string" };
            list.push_back(value.get<std::string>());
            ++i;
        }
        return list;
    }
    const ReadJson& array(const std::string& key) const
    {
        const ReadJson& value = at(key);
        if (!value.is_array())
            throw ReadError { where(key), "'" + key + "' must be an array" };
        return value;
    }
    // Each element of an array of objects, with its pointer.
    template <typename Visit>
    void each(const std::string& key, Visit visit) const
    {
        const ReadJson& list = array(key);
        for (std::size_t i = 0; i < list.size(); ++i)
            visit(Reader(list[i], where(key) + "/" + std::to_string(i)));
    }

private:
    const ReadJson& m_object;
    std::string m_pointer;
};

} // namespace jsonread

// report.json's "cycle_level" object (cyclelevelreportjson.cpp).
CycleLevelReport readCycleLevel(const jsonread::Reader& object);

} // namespace waferscope::core::report

#include "core/common/jsonfootprint.h"

#include "core/common/memorybudget.h"

#include <nlohmann/json.hpp>

namespace waferscope::core {

namespace {

using Json = nlohmann::json;

// libstdc++ keeps strings of up to 15 characters inside the std::string itself.
constexpr std::size_t kSmallString = 15;

class Counter final : public nlohmann::json_sax<Json> {
public:
    bool null() override { return value(); }
    bool boolean(bool) override { return value(); }
    bool number_integer(number_integer_t) override { return value(); }
    bool number_unsigned(number_unsigned_t) override { return value(); }
    bool number_float(number_float_t, const string_t&) override { return value(); }
    bool string(string_t& text) override
    {
        ++footprint.strings;
        footprint.bytes += heapBlockBytes(sizeof(std::string));
        text_(text.size());
        return value();
    }
    bool binary(binary_t&) override { return value(); }
    bool start_object(std::size_t) override
    {
        ++footprint.objects;
        footprint.bytes += heapBlockBytes(sizeof(Json::object_t));
        return value();
    }
    bool key(string_t& text) override
    {
        ++footprint.members;
        // A std::map node: the tree links (32 bytes), the key and the value.
        footprint.bytes += heapBlockBytes(32.0 + sizeof(std::string) + sizeof(Json));
        text_(text.size());
        return true;
    }
    bool end_object() override { return true; }
    bool start_array(std::size_t) override
    {
        ++footprint.arrays;
        footprint.bytes += heapBlockBytes(sizeof(Json::array_t));
        return value();
    }
    bool end_array() override { return true; }
    bool parse_error(std::size_t, const std::string&, const Json::exception&) override { return false; }

    JsonFootprint footprint;

private:
    bool value()
    {
        ++footprint.values;
        return true;
    }
    void text_(std::size_t length)
    {
        if (length > kSmallString) {
            footprint.longTextBytes += length;
            footprint.bytes += heapBlockBytes(double(length) + 1.0);
        }
    }
};

} // namespace

JsonFootprint estimateJsonFootprint(std::string_view text)
{
    Counter counter;
    Json::sax_parse(text.begin(), text.end(), &counter);
    JsonFootprint footprint = counter.footprint;
    // Array elements live in each array's vector, which grows by doubling: on average 1.5 slots
    // of 16 bytes per element, in one block per array.
    const double elements = double(footprint.values - footprint.members - (footprint.values > 0 ? 1 : 0));
    footprint.bytes += elements * 1.5 * double(sizeof(Json)) + double(footprint.arrays) * 16.0;
    return footprint;
}

} // namespace waferscope::core

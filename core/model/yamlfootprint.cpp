#include "core/model/yamlfootprint.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <sstream>
#include <string>

namespace waferscope::core {

namespace {

// Counts the nodes of a text without building a tree (yaml-cpp's event parser), and stops at the
// first node past `limit`: so a file is refused before its tree is built, and after reading no
// more of it than a file within the limit.
class DocumentCensus final : public YAML::EventHandler {
public:
    struct PastLimit {
        YAML::Mark mark; // where the first node past the limit starts
    };

    explicit DocumentCensus(std::size_t limit)
        : m_limit(limit)
    {
    }

    void OnDocumentStart(const YAML::Mark&) override { }
    void OnDocumentEnd() override { }
    void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { node(mark); }
    void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { node(mark); }
    void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string& value) override
    {
        scalarBytes += value.size() > 15 ? value.size() + 1 : 0;
        node(mark);
    }
    void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override
    {
        node(mark);
    }
    void OnSequenceEnd() override { }
    void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override
    {
        node(mark);
    }
    void OnMapEnd() override { }

    std::size_t nodes = 0;
    std::size_t scalarBytes = 0; // characters of scalars too long for the small-string buffer

private:
    void node(const YAML::Mark& mark)
    {
        if (++nodes > m_limit)
            throw PastLimit { mark };
    }
    std::size_t m_limit;
};

} // namespace

YamlFootprint estimateYamlFootprint(std::string_view text, std::size_t nodeLimit)
{
    DocumentCensus census(nodeLimit);
    YamlFootprint footprint;
    std::istringstream stream { std::string(text) };
    try {
        YAML::Parser parser(stream);
        parser.HandleNextDocument(census);
    } catch (const DocumentCensus::PastLimit& past) {
        footprint.pastLimit = true;
        footprint.line = past.mark.line + 1;
        footprint.column = past.mark.column + 1;
    } catch (const YAML::Exception&) {
        // Counted up to the error, which the tree's own parse reports, located.
    }
    footprint.nodes = census.nodes;
    footprint.scalarBytes = census.scalarBytes;
    footprint.bytes = double(census.nodes) * kYamlBytesPerNode + double(census.scalarBytes) + 2.0 * double(text.size());
    return footprint;
}

} // namespace waferscope::core

#include "core/common/textfile.h"

#include <filesystem>
#include <fstream>
#include <iterator>

namespace waferscope::core {

Expected<std::string> readTextFile(const std::string& path, std::size_t maxBytes, const std::string& expectedKind)
{
    auto error = [&](const std::string& message) { return Diagnostic { path, 1, 1, message }; };
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::exists(status))
        return error("no such file");
    if (std::filesystem::is_directory(status))
        return error("is a directory, expected a " + expectedKind);
    if (!std::filesystem::is_regular_file(status))
        return error("is not a regular file, expected a " + expectedKind);
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && size > maxBytes)
        return error("file is " + std::to_string(size) + " bytes; a " + expectedKind + " is at most "
            + std::to_string(maxBytes) + " bytes");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return error("cannot be read (permission denied?)");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad())
        return error("read error");
    return text;
}

} // namespace waferscope::core

#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace waferscope::core {

// Vocabulary sizes of the standard vocabulary files that TensorFlow-era Model Zoo configs name
// (`vocab_file`, `src_vocab_file`, ...) instead of giving a size: Cerebras's TF loaders counted
// the file's lines. Matched on the file name (and its folder for a bare `vocab.txt`).
struct KnownVocabulary {
    std::int64_t size = 0;
    const char* description = ""; // "BERT uncased WordPiece", for the warning that names the assumption
};
std::optional<KnownVocabulary> knownVocabularyFile(const std::string& path);

} // namespace waferscope::core

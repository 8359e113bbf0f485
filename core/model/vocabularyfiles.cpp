#include "core/model/vocabularyfiles.h"

#include <string_view>

namespace waferscope::core {

namespace {

struct Entry {
    std::string_view suffix; // the path ends with this
    KnownVocabulary vocabulary;
};

// Sizes as published with each vocabulary, and as Cerebras's PyTorch configs of the same models
// give them (vocab_size / src_vocab_size next to the same file).
constexpr Entry kEntries[] = {
    // Google's BERT release: uncased_L-12_H-768_A-12/vocab.txt has 30,522 WordPiece tokens.
    { "google_research_uncased_L-12_H-768_A-12.txt", { 30522, "BERT uncased WordPiece (30,522 tokens)" } },
    { "uncased_L-12_H-768_A-12/vocab.txt", { 30522, "BERT uncased WordPiece (30,522 tokens)" } },
    { "uncased_L-24_H-1024_A-16/vocab.txt", { 30522, "BERT uncased WordPiece (30,522 tokens)" } },
    // cased_L-12_H-768_A-12/vocab.txt: 28,996 tokens.
    { "google_research_cased_L-12_H-768_A-12.txt", { 28996, "BERT cased WordPiece (28,996 tokens)" } },
    { "cased_L-12_H-768_A-12/vocab.txt", { 28996, "BERT cased WordPiece (28,996 tokens)" } },
    // PubMedBERT (BiomedNLP-PubMedBERT-base-uncased-abstract-fulltext): vocab_size 30,522.
    { "Pubmed_fulltext_vocab.txt", { 30522, "PubMedBERT uncased WordPiece (30,522 tokens)" } },
    // T5's C4 SentencePiece model as the Model Zoo ships it: 32,001 entries before extra_ids.
    { "t5/c4/vocab.txt", { 32001, "T5 C4 SentencePiece (32,001 entries, before extra_ids)" } },
    // WMT16 English-German shared BPE (32,000 merges): 36,550 tokens with the special ones.
    { "vocab.bpe.32000.en", { 36550, "WMT16 en-de shared BPE (36,550 tokens)" } },
    { "vocab.bpe.32000.de", { 36550, "WMT16 en-de shared BPE (36,550 tokens)" } },
    { "vocab.bpe.32000", { 36550, "WMT16 en-de shared BPE (36,550 tokens)" } },
};

} // namespace

std::optional<KnownVocabulary> knownVocabularyFile(const std::string& path)
{
    const std::string_view given(path);
    for (const Entry& entry : kEntries) {
        if (given.size() < entry.suffix.size())
            continue;
        const std::string_view tail = given.substr(given.size() - entry.suffix.size());
        const bool atBoundary
            = given.size() == entry.suffix.size() || given[given.size() - entry.suffix.size() - 1] == '/';
        if (tail == entry.suffix && atBoundary)
            return entry.vocabulary;
    }
    return std::nullopt;
}

} // namespace waferscope::core

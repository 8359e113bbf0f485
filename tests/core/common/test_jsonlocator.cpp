#include "testing.h"

#include "core/common/jsonlocator.h"

using waferscope::core::JsonLocator;

WS_TEST(locatesNestedValuesArraysAndEscapedKeys)
{
    const std::string text = "{\n"
                             "  \"a\": {\"b\": 1,\n"
                             "         \"c\": [10, {\"d\": \"x}\"}]},\n"
                             "  \"e/f\": \"q\\\"uote\"\n"
                             "}\n";
    JsonLocator locator(text);
    WS_CHECK_EQ(locator.locate("/a").line, 2);
    WS_CHECK_EQ(locator.locate("/a").column, 8);
    WS_CHECK_EQ(locator.locate("/a/b").column, 14);
    WS_CHECK_EQ(locator.locate("/a/c").line, 3);
    WS_CHECK_EQ(locator.locate("/a/c/0").column, 16);
    WS_CHECK_EQ(locator.locate("/a/c/1/d").column, 26);
    WS_CHECK_EQ(locator.locate("/e~1f").line, 4);
    // A pointer that does not exist falls back to its nearest existing ancestor.
    WS_CHECK_EQ(locator.locate("/a/zzz").line, 2);
    WS_CHECK_EQ(locator.locate("/a/zzz").column, 8);
}

WS_TEST(offsetToPosition)
{
    const std::string text = "ab\ncd\n";
    WS_CHECK_EQ(JsonLocator::positionOfOffset(text, 0).line, 1);
    WS_CHECK_EQ(JsonLocator::positionOfOffset(text, 4).line, 2);
    WS_CHECK_EQ(JsonLocator::positionOfOffset(text, 4).column, 2);
}

WS_TEST(emptyObjectsInArraysAndAByteOrderMarkKeepLaterValuesLocated)
{
    // After an empty object inside an array the scan used to wait for a key and stop, so every
    // later error pointed at an ancestor; a BOM (which nlohmann skips) was taken for a value.
    const std::string text = "\xEF\xBB\xBF{\"list\": [{}, {\"x\": 1}],\n \"y\": 2}";
    JsonLocator locator(text);
    WS_CHECK_EQ(locator.locate("/list/1/x").line, 1);
    WS_CHECK_EQ(locator.locate("/list/1/x").column, 24); // bytes: the BOM counts 3
    WS_CHECK_EQ(locator.locate("/y").line, 2);
    WS_CHECK_EQ(locator.locate("/y").column, 7);
}

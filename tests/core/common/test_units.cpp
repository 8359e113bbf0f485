#include "testing.h"

#include "core/common/units.h"

using namespace waferscope::core;

WS_TEST(siPrefixesWithThreeSignificantDigits)
{
    WS_CHECK_EQ(formatSi(1.1e9, "Hz"), std::string("1.10 GHz"));
    WS_CHECK_EQ(formatSi(1.5e11, "B/s"), std::string("150 GB/s"));
    WS_CHECK_EQ(formatSi(6.5604e15, "FLOP/s"), std::string("6.56 PFLOP/s"));
    WS_CHECK_EQ(formatSi(5e-6, "s"), std::string("5.00 us"));
    WS_CHECK_EQ(formatSi(0, "s"), std::string("0.00 s"));
    WS_CHECK_EQ(formatSi(12.5, "W"), std::string("12.5 W"));
}

WS_TEST(bytesAndCounts)
{
    WS_CHECK_EQ(formatBytes(49152), std::string("48 KiB"));
    WS_CHECK_EQ(formatBytes(2.4e15), std::string("2.40 PB"));
    WS_CHECK_EQ(formatCount(1.3157e9), std::string("1.32 B"));
    WS_CHECK_EQ(formatCount(125.2e6), std::string("125 M"));
    WS_CHECK_EQ(formatCount(24e12), std::string("24.0 T"));
    WS_CHECK_EQ(formatCount(12), std::string("12"));
}

WS_TEST(thousandsSeparators)
{
    WS_CHECK_EQ(formatThousands(850000), std::string("850,000"));
    WS_CHECK_EQ(formatThousands(999), std::string("999"));
    WS_CHECK_EQ(formatThousands(-1234567), std::string("-1,234,567"));
}

WS_TEST(secondsPickTheirUnit)
{
    WS_CHECK_EQ(waferscope::core::formatSeconds(1.0052482), std::string("1.005 s"));
    WS_CHECK_EQ(waferscope::core::formatSeconds(0.0123), std::string("12.300 ms"));
    WS_CHECK_EQ(waferscope::core::formatSeconds(2e-6), std::string("2.00 us"));
    WS_CHECK_EQ(waferscope::core::formatSeconds(std::nan("")), std::string("-"));
}

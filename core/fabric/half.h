#pragma once

#include <bit>
#include <cstdint>

namespace waferscope::core::fabric {

// IEEE 754 binary16 storage, the PE's FP16 operand format. Conversions round to nearest even
// and handle subnormals, infinities and NaN, so a kernel's FP16 data is exactly what the
// hardware would hold.
inline std::uint16_t floatToHalf(float value)
{
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    const std::uint32_t sign = (bits >> 16) & 0x8000u;
    const std::uint32_t absBits = bits & 0x7fffffffu;
    if (absBits >= 0x7f800000u) // Inf or NaN
        return std::uint16_t(sign | 0x7c00u | (absBits > 0x7f800000u ? 0x200u : 0u));
    if (absBits >= 0x477ff000u) // rounds to a value beyond the largest finite half
        return std::uint16_t(sign | 0x7c00u);
    if (absBits < 0x38800000u) { // result is subnormal (or zero) in half
        if (absBits < 0x33000000u) // below half of the smallest subnormal
            return std::uint16_t(sign);
        const std::uint32_t mantissa = (absBits & 0x7fffffu) | 0x800000u;
        const int shift = 126 - int(absBits >> 23); // 14..24
        std::uint32_t half = mantissa >> shift;
        const std::uint32_t rest = mantissa & ((1u << shift) - 1u);
        const std::uint32_t halfway = 1u << (shift - 1);
        if (rest > halfway || (rest == halfway && (half & 1u)))
            ++half;
        return std::uint16_t(sign | half);
    }
    std::uint32_t half = ((absBits - 0x38000000u) >> 13); // rebias exponent 127 -> 15
    const std::uint32_t rest = absBits & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
        ++half; // a carry into the exponent is the correct rounding
    return std::uint16_t(sign | half);
}

inline float halfToFloat(std::uint16_t half)
{
    const std::uint32_t sign = std::uint32_t(half & 0x8000u) << 16;
    const std::uint32_t exponent = (half >> 10) & 0x1fu;
    std::uint32_t mantissa = half & 0x3ffu;
    if (exponent == 0x1fu)
        return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
    if (exponent == 0) {
        if (mantissa == 0)
            return std::bit_cast<float>(sign);
        int shift = 0; // normalise the subnormal
        while (!(mantissa & 0x400u)) {
            mantissa <<= 1;
            ++shift;
        }
        mantissa &= 0x3ffu;
        return std::bit_cast<float>(sign | (std::uint32_t(113 - shift) << 23) | (mantissa << 13));
    }
    return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

inline float roundToHalf(float value)
{
    return halfToFloat(floatToHalf(value));
}

// bfloat16 storage: the upper half of a binary32, rounded to nearest even. A NaN stays a NaN
// (quietened, so that truncation cannot turn it into an infinity); overflow rounds to infinity.
inline std::uint16_t floatToBfloat16(float value)
{
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u)
        return std::uint16_t((bits >> 16) | 0x40u);
    const std::uint32_t roundingBias = 0x7fffu + ((bits >> 16) & 1u);
    return std::uint16_t((bits + roundingBias) >> 16);
}

inline float bfloat16ToFloat(std::uint16_t bfloat)
{
    return std::bit_cast<float>(std::uint32_t(bfloat) << 16);
}

inline float roundToBfloat16(float value)
{
    return bfloat16ToFloat(floatToBfloat16(value));
}

} // namespace waferscope::core::fabric

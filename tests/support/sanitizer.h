#pragma once

// Whether this build runs under AddressSanitizer (the asan preset). Its shadow memory and
// quarantine change resident-memory figures, and its checks slow everything down, so the few
// tests that bound memory or GUI stalls adapt their limits (and say so) instead of failing.
#if defined(__SANITIZE_ADDRESS__)
#define WAFERSCOPE_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WAFERSCOPE_UNDER_ASAN 1
#endif
#endif

namespace waferscope::test {

#ifdef WAFERSCOPE_UNDER_ASAN
inline constexpr bool kUnderAsan = true;
#else
inline constexpr bool kUnderAsan = false;
#endif

} // namespace waferscope::test

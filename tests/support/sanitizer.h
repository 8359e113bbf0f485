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

// Any sanitizer: AddressSanitizer, ThreadSanitizer (GCC and clang say so), and memory and
// undefined-behaviour sanitizers where the compiler says so (clang; GCC's -fsanitize=undefined
// defines nothing, and the asan preset pairs it with AddressSanitizer).
#if defined(WAFERSCOPE_UNDER_ASAN) || defined(__SANITIZE_THREAD__)
#define WAFERSCOPE_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define WAFERSCOPE_UNDER_SANITIZER 1
#endif
#endif

namespace waferscope::test {

#ifdef WAFERSCOPE_UNDER_ASAN
inline constexpr bool kUnderAsan = true;
#else
inline constexpr bool kUnderAsan = false;
#endif

#ifdef WAFERSCOPE_UNDER_SANITIZER
inline constexpr bool kUnderSanitizer = true;
#else
inline constexpr bool kUnderSanitizer = false;
#endif

} // namespace waferscope::test

#pragma once

// Private to the fabric's .cpp files: which instruction-set paths they compile. Each path has a
// portable fallback that computes the same values; defining WAFERSCOPE_FABRIC_SCALAR compiles the
// fallbacks instead (the build runs the fabric tests on such a build as well: test_fabric_scalar).
#if defined(__SSE2__) && !defined(WAFERSCOPE_FABRIC_SCALAR)
#define WAFERSCOPE_FABRIC_SSE2 1
#else
#define WAFERSCOPE_FABRIC_SSE2 0
#endif
#if defined(__SSSE3__) && !defined(WAFERSCOPE_FABRIC_SCALAR)
#define WAFERSCOPE_FABRIC_SSSE3 1
#else
#define WAFERSCOPE_FABRIC_SSSE3 0
#endif
#if defined(__SSE4_2__) && !defined(WAFERSCOPE_FABRIC_SCALAR)
#define WAFERSCOPE_FABRIC_SSE42 1
#else
#define WAFERSCOPE_FABRIC_SSE42 0
#endif
// The spin-wait hint of the band runners.
#if (defined(__x86_64__) || defined(__i386__)) && !defined(WAFERSCOPE_FABRIC_SCALAR)
#define WAFERSCOPE_FABRIC_PAUSE 1
#else
#define WAFERSCOPE_FABRIC_PAUSE 0
#endif

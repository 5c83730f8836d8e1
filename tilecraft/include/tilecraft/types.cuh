// types.cuh: tilecraft's fixed-width types, shared by the device headers and the CPU emulator of the
// tests (plain C++: no CUDA, no standard headers).
#pragma once

namespace tc {

// Named apart from <cstdint>'s so a kernel that does include the standard headers gets no conflicting
// typedefs.
typedef signed char i8;
typedef short i16;
typedef int i32;
typedef long long i64;
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef float f32;
typedef double f64;

static_assert(sizeof(i64) == 8 && sizeof(u64) == 8, "64-bit types must be 8 bytes");

}  // namespace tc

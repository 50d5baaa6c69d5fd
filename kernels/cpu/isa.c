/*
 * isa.c - which instruction sets this CPU runs (cpuid, and whether the OS
 * saves the register state). Its own file because meson's
 * -Dcpu_kernels=host asks the same questions of the build machine at
 * configure time (isa_probe.c): the set a build keeps is then exactly the
 * set kern.c picks at run time on that machine.
 */
#include "cpu.h"

#if defined(__x86_64__)
#include <cpuid.h>

static uint64_t xgetbv0(void)
{
	uint32_t lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}

static bool os_saves(uint64_t mask)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) /* OSXSAVE */
		return false;
	return (xgetbv0() & mask) == mask;
}

bool cpu_has_avx2(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
	bool fma = c & (1u << 12), f16c = c & (1u << 29);
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
	bool avx2 = b & (1u << 5);
	return fma && f16c && avx2 && os_saves(0x6); /* XMM + YMM state */
}

bool cpu_has_avx2_vnni(void)
{
	unsigned a, b, c, d;
	return cpu_has_avx2() && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 4));
}

bool cpu_has_avx512(void)
{
	unsigned a, b, c, d;
	if (!cpu_has_avx2() || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
	bool f = b & (1u << 16), bw = b & (1u << 30), vl = b & (1u << 31), vnni = c & (1u << 11);
	return f && bw && vl && vnni && os_saves(0xE6); /* + opmask, ZMM_Hi256, Hi16_ZMM */
}
#else
bool cpu_has_avx2(void)
{
	return false;
}

bool cpu_has_avx2_vnni(void)
{
	return false;
}

bool cpu_has_avx512(void)
{
	return false;
}
#endif

/*
 * isa_probe.c - run by meson at configure time for -Dcpu_kernels=host:
 * prints the SIMD kernel set kern.c's cpu_kernels_best() would pick on the
 * build machine (the same checks: isa.c is compiled into this one file,
 * since meson runs a single source), or "ref" where it has none. Not part
 * of any target.
 */
#include <stdio.h>

#include "isa.c"

int main(void)
{
	/* cpu_kernels_best()'s order: the widest set first */
	puts(cpu_has_avx512()      ? "avx512"
	     : cpu_has_avx2_vnni() ? "avx2_vnni"
	     : cpu_has_avx2()      ? "avx2"
	                           : "ref");
	return 0;
}

/* 2-D vectors: written for the eval harness's tests. */
#include "vec.h"

struct vec vec_add(struct vec a, struct vec b)
{
	struct vec r = { a.x + b.x, a.y + b.y };
	return r;
}

double vec_dot(struct vec a, struct vec b)
{
	return a.x * b.x + a.y * b.y;
}

struct vec vec_scale(struct vec a, double k)
{
	return (struct vec){ .x = a.x * k, .y = a.y * k };
}

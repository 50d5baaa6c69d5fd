/* 2-D vectors: a header written for the eval harness's tests. */
#ifndef VEC_H
#define VEC_H

struct vec {
	double x;
	double y;
};

struct vec vec_add(struct vec a, struct vec b);
double vec_dot(struct vec a, struct vec b);
struct vec vec_scale(struct vec a, double k);

#endif

/*
 * stats.c - the `infill/stats` answer to and from JSON (stats.h), both
 * generated from the one list STATS_FIELDS, so the server's answer and
 * what `infill replay` reads back cannot drift apart.
 */
#include "stats.h"

#include <stdlib.h>
#include <string.h>

const struct stats_keys stats_keys = {
#define KEY(field, key, kind) .field = key,
	STATS_FIELDS(KEY)
#undef KEY
};

/* ---- one value of each kind ------------------------------------------------ */

static json_t *count_to_json(const uint64_t *v)
{
	return json_integer((json_int_t)*v);
}

static json_t *name_to_json(const char *const *v)
{
	return json_string(*v ? *v : "none");
}

static json_t *latency_to_json(const struct stats_latency *v)
{
	return json_pack("{s:f, s:f, s:f, s:I}", "p50", v->p50, "p90", v->p90, "p99", v->p99,
	                 "samples", (json_int_t)v->samples);
}

static json_t *ratio_to_json(const double *v)
{
	return json_real(*v);
}

static json_t *object_to_json(json_t *const *v)
{
	return *v ? json_incref(*v) : json_object();
}

static void object_from_json(const json_t *j, json_t **v)
{
	*v = json_is_object(j) ? (json_t *)j : NULL; /* borrowed */
}

static void ratio_from_json(const json_t *j, double *v)
{
	*v = json_number_value(j);
}

static void count_from_json(const json_t *j, uint64_t *v)
{
	if (json_is_integer(j) && json_integer_value(j) >= 0) *v = (uint64_t)json_integer_value(j);
}

static void name_from_json(const json_t *j, const char **v)
{
	*v = json_string_value(j); /* NULL when not a string */
}

static void latency_from_json(const json_t *j, struct stats_latency *v)
{
	/* json_number_value: 0 for anything not a number */
	v->p50 = json_number_value(json_object_get(j, "p50"));
	v->p90 = json_number_value(json_object_get(j, "p90"));
	v->p99 = json_number_value(json_object_get(j, "p99"));
	count_from_json(json_object_get(j, "samples"), &v->samples);
}

/* ---- the answer ---------------------------------------------------------------- */

json_t *stats_to_json(const struct stats *s)
{
	json_t *o = json_object();
	int rc = o ? 0 : -1;
#define SET(field, key, kind) \
	if (!rc) rc = json_object_set_new(o, key, kind##_to_json(&s->field));
	STATS_FIELDS(SET)
#undef SET
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

void stats_from_json(const json_t *o, struct stats *out)
{
	memset(out, 0, sizeof *out);
#define GET(field, key, kind) kind##_from_json(json_object_get(o, key), &out->field);
	STATS_FIELDS(GET)
#undef GET
}

/* ---- percentiles ---------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void stats_sort(double *v, size_t n)
{
	if (n) qsort(v, n, sizeof *v, cmp_double);
}

double stats_percentile(const double *sorted, size_t n, double q)
{
	if (!n) return 0;
	size_t rank = (size_t)(q * (double)n + 0.999999);
	if (rank < 1) rank = 1;
	return sorted[(rank > n ? n : rank) - 1];
}

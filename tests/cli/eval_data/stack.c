/* A growable stack of ints: a small file written for the eval harness's tests. */
#include <stdlib.h>

struct stack {
	int *items;
	size_t len, cap;
};

int stack_push(struct stack *s, int v)
{
	if (s->len == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		int *items = realloc(s->items, cap * sizeof *items);
		if (!items) return -1;
		s->items = items;
		s->cap = cap;
	}
	s->items[s->len++] = v;
	return 0;
}

int stack_pop(struct stack *s, int *out)
{
	if (!s->len) return -1;
	*out = s->items[--s->len];
	return 0;
}

void stack_free(struct stack *s)
{
	free(s->items);
	s->items = NULL;
	s->len = s->cap = 0;
}

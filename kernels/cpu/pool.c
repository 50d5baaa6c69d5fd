/*
 * pool.c - the CPU backend's worker pool.
 *
 * A forward pass dispatches a few hundred short tasks (one per matrix product
 * or op), so the pool keeps its threads spinning briefly on a generation
 * counter after each task before they sleep on a condition variable: a task
 * that follows soon after starts without a futex wake-up, and an idle pool
 * costs nothing.
 *
 * A task's n parts are claimed, not assigned: whoever is running takes the
 * next unclaimed part, and the caller, once its own part is done and a
 * spin has passed, takes the parts no worker has started. On a machine
 * busy with other work (a build beside the editor) a worker can wait many
 * milliseconds for a core; with parts assigned, every one of a forward's
 * few hundred tasks waited for it (a 6-layer model took seconds per
 * forward at load average 14). Part i still has one runner at a time, so a
 * kernel's per-part scratch (indexed by ith) stays its own.
 */
#include "cpu.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

/* Spin iterations (pause ~ 40-140 cycles each) before a worker sleeps, and
 * before the caller waiting for workers starts yielding its time slice: on a
 * machine shared with other work, a long spin steals the core from the very
 * thread it waits for. */
#define POOL_SPIN 2000

struct cpu_pool {
	int n;
	pthread_t *threads;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	atomic_uint gen;     /* bumped for every task */
	atomic_int next;     /* the current task's next unclaimed part */
	atomic_int finished; /* its parts finished, the caller's own not counted */
	atomic_int sleepers;
	bool stop;
	cpu_task_fn fn;
	void *arg;
};

struct worker_arg {
	struct cpu_pool *p;
	int ith;
};

static void *worker_main(void *v)
{
	struct worker_arg *wa = v;
	struct cpu_pool *p = wa->p;
	free(wa);
	unsigned seen = 0;
	for (;;) {
		unsigned g;
		int spins = 0;
		while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen) {
			if (++spins < POOL_SPIN) {
				cpu_relax();
				continue;
			}
			pthread_mutex_lock(&p->mu);
			atomic_fetch_add(&p->sleepers, 1);
			while (atomic_load(&p->gen) == seen && !p->stop)
				pthread_cond_wait(&p->cv, &p->mu);
			atomic_fetch_sub(&p->sleepers, 1);
			pthread_mutex_unlock(&p->mu);
			spins = 0;
			if (p->stop) return NULL;
		}
		seen = g;
		if (p->stop) return NULL;
		/* fn and arg are read after a claim: the claim (acquire) follows
		 * the caller's release of the task's first part */
		for (int i;
		     (i = atomic_fetch_add_explicit(&p->next, 1, memory_order_acq_rel)) < p->n;) {
			p->fn(p->arg, i, p->n);
			atomic_fetch_add_explicit(&p->finished, 1, memory_order_release);
		}
	}
}

struct cpu_pool *cpu_pool_create(int n_threads)
{
	if (n_threads < 1) n_threads = 1;
	struct cpu_pool *p = calloc(1, sizeof *p);
	if (!p) return NULL;
	p->n = n_threads;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	atomic_init(&p->gen, 0);
	atomic_init(&p->next, n_threads); /* nothing to claim */
	atomic_init(&p->finished, 0);
	atomic_init(&p->sleepers, 0);
	p->threads = calloc((size_t)n_threads, sizeof *p->threads);
	if (!p->threads) {
		free(p);
		return NULL;
	}
	for (int i = 1; i < n_threads; i++) {
		struct worker_arg *wa = malloc(sizeof *wa);
		if (wa) {
			wa->p = p;
			wa->ith = i;
		}
		/* Explicit stack size: kernels keep ~330 KB panels on the stack, and
		 * the default depends on RLIMIT_STACK (2 MB when unlimited). */
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, (size_t)8 << 20);
		int prc = wa ? pthread_create(&p->threads[i], &attr, worker_main, wa) : -1;
		pthread_attr_destroy(&attr);
		if (prc != 0) {
			free(wa);
			p->n = i; /* destroy joins the ones started */
			cpu_pool_destroy(p);
			return NULL;
		}
	}
	return p;
}

void cpu_pool_destroy(struct cpu_pool *p)
{
	if (!p) return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	atomic_fetch_add(&p->gen, 1);
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (int i = 1; i < p->n; i++) pthread_join(p->threads[i], NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p->threads);
	free(p);
}

int cpu_pool_threads(const struct cpu_pool *p)
{
	return p->n;
}

void cpu_pool_run(struct cpu_pool *p, cpu_task_fn fn, void *arg)
{
	if (p->n == 1) {
		fn(arg, 0, 1);
		return;
	}
	/* Every part of the previous task has finished, so no one reads fn,
	 * arg or finished now; part 0 is the caller's. */
	p->fn = fn;
	p->arg = arg;
	atomic_store_explicit(&p->finished, 0, memory_order_relaxed);
	atomic_store_explicit(&p->next, 1, memory_order_release);
	atomic_fetch_add(&p->gen, 1); /* seq_cst: pairs with the sleepers count */
	if (atomic_load(&p->sleepers) > 0) {
		pthread_mutex_lock(&p->mu);
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
	fn(arg, 0, p->n);
	int others = p->n - 1;
	for (int spins = 0; atomic_load_explicit(&p->finished, memory_order_acquire) < others;
	     spins++) {
		if (spins < POOL_SPIN) {
			cpu_relax();
			continue;
		}
		/* the workers are late: take what none of them has started */
		int i = atomic_fetch_add_explicit(&p->next, 1, memory_order_acq_rel);
		if (i < p->n) {
			fn(arg, i, p->n);
			atomic_fetch_add_explicit(&p->finished, 1, memory_order_release);
		} else {
			sched_yield();
		}
	}
}

void cpu_split(int64_t n, int64_t align, int ith, int nth, int64_t *lo, int64_t *hi)
{
	if (align < 1) align = 1;
	int64_t units = (n + align - 1) / align;
	int64_t per = units / nth, rem = units % nth;
	int64_t u0 = ith * per + (ith < rem ? ith : rem);
	int64_t u1 = u0 + per + (ith < rem ? 1 : 0);
	*lo = u0 * align < n ? u0 * align : n;
	*hi = u1 * align < n ? u1 * align : n;
}

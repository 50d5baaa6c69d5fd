/*
 * packings.c - the weight types the CPU backend packs into 8-row panels at
 * load (the table `packings`, the one list of them), and the packing of a
 * model's matmul weights (cpu_repack_weights). The panel layouts and their
 * pack functions are repack.c's; the kernels that read them, kern_*.c's.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpu_backend.h"
#include "quant.h"

static const struct cpu_packing packings[] = {
	{ TENSOR_TYPE_Q4_0, CPU_TYPE_Q4_0_P8, cpu_q4_0_p8_bytes, cpu_q4_0_p8_pack,
	  cpu_q4_0_p8_row },
	{ TENSOR_TYPE_Q8_0, CPU_TYPE_Q8_0_P8, cpu_q8_0_p8_bytes, cpu_q8_0_p8_pack,
	  cpu_q8_0_p8_row },
	{ TENSOR_TYPE_Q4_K, CPU_TYPE_Q4_K_P8, cpu_q4_k_p8_bytes, cpu_q4_k_p8_pack,
	  cpu_q4_k_p8_row },
	{ TENSOR_TYPE_Q5_K, CPU_TYPE_Q5_K_P8, cpu_q5_k_p8_bytes, cpu_q5_k_p8_pack,
	  cpu_q5_k_p8_row },
	{ TENSOR_TYPE_Q6_K, CPU_TYPE_Q6_K_P8, cpu_q6_k_p8_bytes, cpu_q6_k_p8_pack,
	  cpu_q6_k_p8_row },
	{ TENSOR_TYPE_IQ4_XS, CPU_TYPE_IQ4_XS_P8, cpu_iq4_xs_p8_bytes, cpu_iq4_xs_p8_pack,
	  cpu_iq4_xs_p8_row },
	{ TENSOR_TYPE_Q5_0, CPU_TYPE_Q5_0_P8, cpu_q5_0_p8_bytes, cpu_q5_0_p8_pack,
	  cpu_q5_0_p8_row },
	{ TENSOR_TYPE_Q5_1, CPU_TYPE_Q5_1_P8, cpu_q5_1_p8_bytes, cpu_q5_1_p8_pack,
	  cpu_q5_1_p8_row },
};

/* The packing of a file type or of a panel type, or NULL. */
const struct cpu_packing *cpu_packing_of(uint32_t type)
{
	for (size_t i = 0; i < sizeof packings / sizeof packings[0]; i++)
		if (packings[i].type == type || packings[i].packed == type) return &packings[i];
	return NULL;
}

/* A row's bytes in the file's type: panels keep the rows' bytes. */
size_t cpu_row_bytes(const struct backend_tensor *t)
{
	const struct cpu_packing *pk = cpu_packing_of(t->type);
	return (size_t)tensor_type_row_size(pk ? pk->type : t->type, t->ne[0]);
}

/* ---- the packings' weights (Q4_0, Q8_0, Q4_K, Q5_K, Q6_K, Q5_0, Q5_1) repacked at load ---- */

struct pack_task {
	const struct cpu_packing *pk;
	const struct backend_tensor *src; /* rows of pk->type */
	void *dst;                        /* packed_bytes of it */
};

/* How weights of `type` are packed, or NULL (read as rows): the set must
 * have the panel kernel, and Q8_0 stays rows where the AMX tiles are asked
 * for (they read it). */
static const struct cpu_packing *packing_for(const struct cpu_backend *c, uint32_t type, bool amx)
{
	const struct cpu_packing *pk = cpu_packing_of(type);
	if (!pk || pk->type != type || !cpu_kernels_gemm(c->k, pk->packed)) return NULL;
	return type == TENSOR_TYPE_Q8_0 && amx ? NULL : pk;
}

static size_t packed_bytes(const struct cpu_packing *pk, const struct backend_tensor *t)
{
	return (pk->bytes(t->ne[1], t->ne[0]) + 63) / 64 * 64;
}

/* The whole pages inside [p, p + n) get `advice`; errors ignored (advice only). */
static void advise_pages(const void *p, size_t n, int advice)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = ((uintptr_t)p + pg - 1) / pg * pg, hi = ((uintptr_t)p + n) / pg * pg;
	if (hi > lo) madvise((void *)lo, hi - lo, advice);
}

static void pack_run(void *arg, int ith, int nth)
{
	const struct pack_task *t = arg;
	int64_t lo, hi;
	cpu_split((t->src->ne[1] + 7) / 8, 1, ith, nth, &lo, &hi);
	if (hi <= lo) return;
	/* Each thread maps in its own part in bulk, both sides (one call each
	 * instead of a page fault per 4 KB page: most of the load's time). */
	size_t panel = 8 * cpu_row_bytes(t->src);
	advise_pages((const char *)t->src->data + lo * panel, (size_t)(hi - lo) * panel,
	             MADV_POPULATE_READ);
	advise_pages((char *)t->dst + lo * panel, (size_t)(hi - lo) * panel, MADV_POPULATE_WRITE);
	t->pk->pack(t->src->data, cpu_row_bytes(t->src), t->src->ne[1], t->src->ne[0], lo, hi,
	            t->dst);
}

/*
 * Every matmul weight of a type the kernel set reads as panels (packings,
 * packing_for) is packed into c->packed and the tensor copies in c point
 * there, so decode and prefill both run the panel kernel. With a file mapping
 * behind the weights, the original pages of each packed tensor are dropped
 * as soon as it is packed: the resident size stays that of one copy. A
 * token embedding tied to a packed output reads its rows from the panels
 * (packing.row). Returns 0 or -ENOMEM (nothing packed then).
 */
int cpu_repack_weights(struct cpu_backend *c, bool data_mapped, bool amx,
                       const struct backend_config *cfg)
{
	enum { PER_LAYER = 7 };
	int64_t n_t = (int64_t)c->hp.n_layer * PER_LAYER + 1;
	struct backend_tensor **ts = malloc((size_t)n_t * sizeof *ts);
	if (!ts) return -ENOMEM;
	for (int l = 0; l < c->hp.n_layer; l++) {
		struct backend_layer *L = &c->layers[l];
		struct backend_tensor *m[PER_LAYER] = { &L->wq,     &L->wk,   &L->wv,    &L->wo,
			                                &L->w_gate, &L->w_up, &L->w_down };
		memcpy(ts + (int64_t)l * PER_LAYER, m, sizeof m);
	}
	ts[n_t - 1] = &c->output;
	size_t total = 0;
	for (int64_t i = 0; i < n_t; i++) {
		const struct cpu_packing *pk =
		        ts[i]->data ? packing_for(c, ts[i]->type, amx) : NULL;
		if (pk) total += packed_bytes(pk, ts[i]);
	}
	if (total == 0) {
		free(ts);
		return 0;
	}
	void *buf = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		free(ts);
		return -ENOMEM;
	}
	/* No MADV_HUGEPAGE: on this host the kernel's compaction for it made
	 * the 1.3B model's load take 8 s longer. */
	c->packed = buf;
	c->packed_bytes = total;
	const void *tied = c->tok_embd.data == c->output.data ? c->output.data : NULL;
	char *dst = buf;
	for (int64_t i = 0; i < n_t; i++) {
		struct backend_tensor *t = ts[i];
		const struct cpu_packing *pk = t->data ? packing_for(c, t->type, amx) : NULL;
		if (!pk) continue;
		size_t bytes = packed_bytes(pk, t);
		struct pack_task pt = { pk, t, dst };
		cpu_pool_run(c->pool, pack_run, &pt);
		/* the file's pages of it are not read again (they would only
		 * come back from the file) */
		if (data_mapped) advise_pages(t->data, t->nbytes, MADV_DONTNEED);
		if (t->data == tied) {
			c->tok_embd.data = dst;
			c->tok_embd.type = pk->packed;
		}
		t->data = dst;
		t->type = pk->packed;
		c->il_weights = c->il_weights || cpu_kernels_gemm_il(c->k, t->type);
		dst += bytes;
		/* the most of a load's time on a large model: without it, a
		 * progress bar would go from nothing to done */
		if (cfg->progress)
			cfg->progress(cfg->progress_user,
			              0.99f * (float)(dst - (char *)buf) / (float)total);
	}
	/* Read-only from here on: a stray write faults instead of corrupting weights. */
	mprotect(buf, total, PROT_READ);
	free(ts);
	return 0;
}

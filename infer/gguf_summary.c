/*
 * gguf_summary.c - what a downloaded model file is, without loading it
 * (infer.h, gguf_summarize): its architecture, its tensor count and whether
 * the tensors make up every block the header announces. `infill pull`
 * checks a catalog entry whose publisher states no sha256 with this: a cut
 * download, an HTML error page saved as .gguf or another model's file fails
 * here. The reader (gguf.c) has already bounded every tensor inside the file.
 */
#include "infer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gguf.h"

/* The block index of a tensor named "blk.N.*", or -1 for other names. */
static long block_of(struct gguf_str name)
{
	if (name.len < 6 || memcmp(name.ptr, "blk.", 4)) return -1;
	long n = 0;
	uint64_t i = 4;
	for (; i < name.len && name.ptr[i] >= '0' && name.ptr[i] <= '9'; i++) {
		n = n * 10 + (name.ptr[i] - '0');
		if (n > 1000000) return -1;
	}
	return i > 4 && i < name.len && name.ptr[i] == '.' ? n : -1;
}

static int blocks_check(const struct gguf_file *g, struct gguf_summary *s, struct infill_error *err)
{
	char key[64];
	snprintf(key, sizeof key, "%s.block_count", s->arch);
	uint32_t n_blocks = 0;
	if (!gguf_get_u32(g, key, &n_blocks) || n_blocks == 0 || n_blocks > 4096)
		return error_set(err, -EINVAL, "the file has no %s (or it is 0)", key);
	s->n_blocks = n_blocks;
	unsigned char *seen = calloc(n_blocks, 1);
	if (!seen) return error_set(err, -ENOMEM, "out of memory");
	for (int64_t i = 0; i < s->n_tensors; i++) {
		const struct gguf_tensor_info *t = gguf_tensor(g, i);
		long b = block_of(t->name);
		if (b < 0) continue;
		if ((uint64_t)b >= n_blocks) {
			free(seen);
			return error_set(err, -EINVAL,
			                 "tensor %.*s is past the %u blocks announced",
			                 (int)t->name.len, t->name.ptr, n_blocks);
		}
		seen[b] = 1;
	}
	for (uint32_t b = 0; b < n_blocks; b++)
		if (!seen[b]) {
			free(seen);
			return error_set(err, -EINVAL, "block %u of %u has no tensors", b,
			                 n_blocks);
		}
	free(seen);
	if (gguf_find_tensor(g, "token_embd.weight") < 0)
		return error_set(err, -EINVAL, "the file has no token_embd.weight");
	return 0;
}

int gguf_summarize(const char *path, struct gguf_summary *s, struct infill_error *err)
{
	memset(s, 0, sizeof *s);
	struct stat st;
	if (stat(path, &st))
		return error_set(err, -errno, "cannot read %s: %s", path, strerror(errno));
	s->file_bytes = (uint64_t)st.st_size;
	struct gguf_file *g = gguf_open(path, err);
	if (!g) return err ? err->code : -EINVAL;
	struct gguf_str arch;
	int rc = 0;
	if (!gguf_get_str(g, "general.architecture", &arch) || arch.len == 0 ||
	    arch.len >= sizeof s->arch) {
		rc = error_set(err, -EINVAL, "the file names no general.architecture");
	} else {
		memcpy(s->arch, arch.ptr, arch.len);
		s->n_tensors = gguf_tensor_count(g);
		rc = s->n_tensors > 0 ? blocks_check(g, s, err)
		                      : error_set(err, -EINVAL, "the file holds no tensors");
	}
	gguf_close(g);
	return rc;
}

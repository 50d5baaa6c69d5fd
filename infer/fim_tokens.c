/*
 * fim_tokens.c - the FIM prompt as token ids without an engine
 * (fim_prompt_tokens, engine.h): what a remote backend sends so that the
 * server sees exactly the prompt the in-process engine would prefill
 * (fim.c builds it; this file only hands it out).
 */
#include "engine_internal.h"

#include <stdlib.h>
#include <string.h>

int fim_prompt_tokens(const struct tokenizer *t, const struct engine_request *req, int32_t **out,
                      int32_t *healed_bytes, struct infill_error *err)
{
	*out = NULL;
	struct fim_prompt fp;
	int rc = fim_prompt_build(t, req, &fp, err);
	if (rc) return rc;
	if (healed_bytes) *healed_bytes = (int32_t)fp.heal_len;
	*out = fp.tok; /* moved */
	rc = fp.n;
	fp.tok = NULL;
	fim_prompt_finish(&fp);
	return rc;
}

/*
 * eval_nextedit_model.c - the model-rewrite kind of `infill eval
 * --next-edit`: next edits the model writes (pipeline/nextedit_model.h),
 * scored on cases whose right text is known.
 *
 * A case: a function of two or more parameters whose calls pass them all;
 * in the file, its last parameter and each such call's last argument are
 * taken out (", arg"), then the parameter is put back in the definition (the
 * first edit). The places implied are the calls, each wanting its own
 * argument back: a place the finder finds with no text (an added
 * parameter's argument is not mechanical), which the model then writes
 * with the prompt the server uses (complete_run, as the engine thread runs
 * it, with the rewrite's request), checked by nextedit_rewrite_edit. Exact
 * is then the model's argument being the file's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "complete.h"
#include "config.h"
#include "eval_nextedit.h"
#include "nextedit_model.h"

/* Places per case the model writes, as the server's NEXTEDIT_MODEL_MAX. */
#define MODEL_PLACES 2

struct evne_model {
	struct model *m;
	struct engine *e;
	struct config *cfg;
	enum nextedit_format format;
	uint64_t seq;
};

struct evne_model *evne_model_open(const char *path, const char *format)
{
	if (path && !strcmp(path, "none")) return NULL; /* the places only */
	struct evne_model *em = calloc(1, sizeof *em);
	if (!em) return NULL;
	em->cfg = config_new();
	char *p = path ? strdup(path) : complete_default_model_path();
	struct infill_error err;
	struct complete_model_spec spec = complete_model_spec_from(config_get(em->cfg, NULL));
	if (!em->cfg || !p || complete_model_open(p, &spec, NULL, NULL, &em->m, &em->e, &err)) {
		fprintf(stderr, "infill eval --next-edit: no model for model-rewrite: %s\n",
		        p && em->cfg ? err.message : "out of memory");
		free(p);
		evne_model_close(em);
		return NULL;
	}
	free(p);
	em->format = format && !strcmp(format, "zeta") ? NEXTEDIT_FORMAT_ZETA : NEXTEDIT_FORMAT_FIM;
	return em;
}

void evne_model_close(struct evne_model *em)
{
	if (!em) return;
	engine_free(em->e);
	model_free(em->m);
	config_free(em->cfg);
	free(em);
}

/* Its best candidate into ed (the place's text, owned) as the engine
 * thread would make it; false when the model wrote nothing worth offering. */
static bool write_place(struct evne_model *em, const struct file *f, const struct ecase *c,
                        struct nextedit_edit *ed)
{
	const char *lang = ast_lang_name(f->lang);
	struct settings st = *config_get(em->cfg, lang);
	st.completion_deadline_ms = 0; /* reproducible: no machine's speed in it */
	struct nextedit_pair pr;
	if (nextedit_pair_make(c->now, c->len, c->track.start, c->track.end,
	                       c->track.old ? c->track.old : "", c->track.old_len, &pr))
		return false;
	struct nextedit_rewrite_params rp = { .format = em->format,
		                              .text = c->now,
		                              .len = c->len,
		                              .at = ed->start,
		                              .kind = ed->kind,
		                              .pairs = &pr,
		                              .n_pairs = 1,
		                              .uri = f->path,
		                              .language_id = lang,
		                              .path = f->path,
		                              .seq = ++em->seq,
		                              .settings = &st };
	struct nextedit_rewrite rw;
	struct completion_request *req = nextedit_rewrite_request(&rp, &rw);
	nextedit_pair_finish(&pr);
	if (!req) return false;
	struct complete_options opt = complete_options_default();
	opt.seed = req->seq;
	opt.n_ctx = model_info(em->m)->n_ctx_train;
	struct engine_snippet sn;
	if (req->n_project) {
		sn = (struct engine_snippet){ req->project[0].text, req->project[0].len, NULL };
		opt.project = &sn;
		opt.n_project = 1;
	}
	struct complete_result cr;
	bool ok = false;
	if (!complete_run(em->e, model_tokenizer(em->m), req->language_id, req->text, req->text_len,
	                  req->cursor, &req->settings, &opt, &cr, NULL)) {
		struct completion_candidate top;
		struct completion_result res = { &top, cr.count ? 1 : 0, COMPLETION_PATH_TYPED,
			                         false };
		if (cr.count)
			top = (struct completion_candidate){ cr.items[0].text,  cr.items[0].len,
				                             cr.items[0].start, cr.items[0].end,
				                             cr.items[0].score, 1 };
		struct nextedit_edit out;
		bool invalid;
		if (nextedit_rewrite_edit(&rw, &res, f->lang, c->now, c->len, &out, &invalid) ==
		    1) {
			*ed = out;
			ok = true;
		}
	}
	complete_result_finish(&cr);
	completion_request_free(req);
	return ok;
}

void evne_model_write(struct evne_model *em, const struct file *f, const struct ecase *c,
                      struct nextedit_result *r)
{
	size_t asked = 0;
	for (size_t i = 0; em && i < r->n && asked < MODEL_PLACES; i++) {
		if (r->edits[i].text) continue;
		asked++;
		write_place(em, f, c, &r->edits[i]);
	}
}

/* ---- the cases ---- */

void evne_make_model_rewrites(const struct file *f, const char *name, size_t ds, size_t de,
                              struct ecase *out, size_t *n, size_t cap)
{
	size_t nl = strlen(name);
	size_t at = ds;
	while (at < de && !evne_word_at(f->t, f->n, f->code, at, name, nl)) at++;
	size_t open = evne_skip_ws(f->t, f->n, at + nl);
	if (at >= de || open >= de || f->t[open] != '(' || *n >= cap) return;
	size_t close = evne_match_paren(f->t, f->n, f->code, open);
	if (close >= de) return;
	struct item ps[16];
	size_t np = evne_split_items(f->t, f->code, open, close, ps, 16);
	if (np < 2) return;
	for (size_t i = 0; i < np; i++)
		if (memchr(f->t + ps[i].start, '*', ps[i].end - ps[i].start) ||
		    memchr(f->t + ps[i].start, '=', ps[i].end - ps[i].start) ||
		    !memcmp(f->t + ps[i].start, "...", 3) || !memcmp(f->t + ps[i].start, "self", 4))
			return; /* defaults, varargs, methods: calls vary in what they pass */
	/* the calls passing every parameter, in file order */
	struct item last[32], prev[32];
	size_t nc = 0;
	for (size_t k = 0; k < f->n && nc < 32; k++) {
		if (k >= ds && k < de) continue;
		size_t o, c2;
		if (!evne_call_at(f, k, name, nl, &o, &c2) || evne_after_member(f->t, k)) continue;
		struct item a[16];
		if (evne_split_items(f->t, f->code, o, c2, a, 16) != np) continue;
		if (a[np - 1].end - a[np - 1].start >= 300) continue;
		prev[nc] = a[np - 2];
		last[nc] = a[np - 1];
		nc++;
		k = c2;
	}
	if (!nc) return;
	/* the file without the parameter and those arguments (", x" each) */
	size_t cut_s[33], cut_e[33];
	cut_s[0] = ps[np - 2].end;
	cut_e[0] = ps[np - 1].end;
	for (size_t q = 0; q < nc; q++) {
		cut_s[q + 1] = prev[q].end;
		cut_e[q + 1] = last[q].end;
	}
	size_t ncut = nc + 1;
	char *base = malloc(f->n + 1);
	if (!base) return;
	size_t bl = 0, from = 0;
	size_t base_at[33]; /* each cut's place in base */
	/* the cuts in file order (the definition's may stand among the calls) */
	size_t order[33];
	for (size_t i = 0; i < ncut; i++) order[i] = i;
	for (size_t i = 1; i < ncut; i++)
		for (size_t j = i; j > 0 && cut_s[order[j]] < cut_s[order[j - 1]]; j--) {
			size_t t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	for (size_t i = 0; i < ncut; i++) {
		size_t q = order[i];
		if (cut_s[q] < from) { /* overlapping: nested calls, not this case */
			free(base);
			return;
		}
		memcpy(base + bl, f->t + from, cut_s[q] - from);
		bl += cut_s[q] - from;
		base_at[q] = bl;
		from = cut_e[q];
	}
	memcpy(base + bl, f->t + from, f->n - from);
	bl += f->n - from;
	base[bl] = 0;
	/* the first edit: the parameter back in the definition */
	char param[400];
	snprintf(param, sizeof param, "%.*s", (int)(cut_e[0] - cut_s[0]), f->t + cut_s[0]);
	struct file bf = *f;
	bf.t = base;
	bf.n = bl;
	struct ecase *c = &out[*n];
	if (evne_case_start(c, EK_MODEL_REWRITE, &bf, base_at[0], base_at[0], param)) {
		free(base);
		return;
	}
	for (size_t q = 0; q < nc; q++) {
		char arg[400];
		snprintf(arg, sizeof arg, "%.*s", (int)(cut_e[q + 1] - cut_s[q + 1]),
		         f->t + cut_s[q + 1]);
		evne_expect(c, base_at[q + 1], base_at[q + 1], arg);
	}
	free(base);
	(*n)++;
}

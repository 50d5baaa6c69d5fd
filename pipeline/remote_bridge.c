/*
 * remote_bridge.c - the remote backend (`backend: "remote"`)
 * between the pipeline and remote/: the AST slicing, the document's lines,
 * validation and rerank stay in complete_run on the engine thread; only the
 * generation moves to an inference server. complete_run calls
 * remote_bridge_generate in engine_run's place; it builds the HTTP calls,
 * hands them to the loop thread (which owns the libcurl client, driven by
 * libuv: remote/remote_client.c), waits for them, and turns the choices into
 * an engine_result.
 *
 * The prompt: with remote.tokenizer (a GGUF of the server's model) and the
 * openai API, the FIM prompt as token ids, exactly as the in-process engine
 * builds it (fim_prompt_tokens; token healing off, which only a local
 * sampler can undo); without it, the family's template written out as text
 * (fim.template must then name the family), or for llama-infill and ollama
 * the prefix and suffix, to which the server applies its model's template.
 *
 * Candidates: candidate 0 greedy (temperature 0), the others one call with
 * n = completion.candidates - 1 at completion.temperature (llama-server and
 * vLLM sample n from one prompt); Ollama has no n, so it gives the greedy
 * one only. Log-probabilities are asked for; where the server returns none
 * (Ollama), a candidate's mean log-probability is 0 and completion.minConfidence
 * cannot judge it. Lines from the document (completion.fromDocument) cannot
 * be scored by a server without echo: each gets the lowest decoded mean
 * log-probability minus GIVEN_MARGIN, so its prior (3 + 2 ln copies) ranks it
 * beside the weakest model candidate, and ahead of it when the document
 * repeats it.
 *
 * Threads: remote_bridge_generate runs on the engine thread; everything else
 * on the loop thread. Between them, struct rcall: the engine thread fills its
 * inputs, queues it under p->mu (p->rcalls_head) and waits on p->cv for
 * rc->done; the loop starts its calls, and sets done (under mu) when they
 * end, fail or are cancelled, touching it no more after that. Cancelling a
 * job removes its calls' easy handles at once (the connection closes within
 * the loop turn of $/cancelRequest or of the request that superseded it).
 */
#include "pipeline_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a document line scores below the weakest decoded candidate. */
#define GIVEN_MARGIN 3.0

struct rcall;

struct rslot {
	struct rcall *rc;
	int i;
};

struct rcall {
	struct pipeline *p;
	struct pipeline_job *job;
	/* inputs: built by the engine thread, read by the loop (owned) */
	struct remote_endpoint ep;
	char *key; /* the API key (zeroed before it is freed) */
	struct remote_query q[2];
	int nq;
	int32_t *tokens;
	char *prompt;
	struct remote_extra *extra;
	/* the loop's */
	struct rslot slots[2];
	struct remote_call *calls[2];
	int pending;
	struct remote_reply replies[2];
	double elapsed_ms;
	bool cut; /* a reply ended at the deadline (remote_reply.cut) */
	/* The sampling call was refused with a 4xx: judged when the greedy
	 * call ends (a refusal of both is the server's, not sampling's). */
	bool sampling_refused;
	char sampling_why[600]; /* its message (remote_failure.message) */
	/* the outcome (loop writes, engine thread reads after done) */
	int status;
	struct remote_failure fail;
	bool done; /* under p->mu */
	struct rcall *next;
};

static void rcall_free(struct rcall *rc)
{
	if (!rc) return;
	if (rc->key) {
		memset(rc->key, 0, strlen(rc->key));
		free(rc->key);
	}
	free(rc->tokens);
	free(rc->prompt);
	free(rc->extra);
	for (int i = 0; i < 2; i++) remote_reply_finish(&rc->replies[i]);
	free(rc);
}

/* ---- the engine thread --------------------------------------------------------- */

/* The family's template a model's name or metadata points to: its words
 * as the publishers write them ("Qwen2.5-Coder-1.5B", "deepseek-coder",
 * "starcoder2", "codellama", "codegemma"; Ollama's family "qwen2"). AUTO:
 * none. Code Llama before plain "llama": DeepSeek-Coder's architecture is
 * llama too, so "llama" alone decides nothing. */
static enum fim_template family_of(const char *said)
{
	static const struct {
		const char *word;
		enum fim_template t;
	} words[] = {
		{ "deepseek", FIM_TEMPLATE_DEEPSEEK },    { "qwen", FIM_TEMPLATE_QWEN },
		{ "starcoder", FIM_TEMPLATE_STARCODER },  { "codellama", FIM_TEMPLATE_CODELLAMA },
		{ "code-llama", FIM_TEMPLATE_CODELLAMA }, { "code_llama", FIM_TEMPLATE_CODELLAMA },
		{ "codegemma", FIM_TEMPLATE_CODEGEMMA },
	};
	char low[1024];
	size_t n = 0;
	for (; said[n] && n + 1 < sizeof low; n++)
		low[n] = (char)(said[n] >= 'A' && said[n] <= 'Z' ? said[n] + 32 : said[n]);
	low[n] = 0;
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		if (strstr(low, words[i].word)) return words[i].t;
	return FIM_TEMPLATE_AUTO;
}

/* fim.template auto without remote.tokenizer: the template of the family
 * the server says it serves (remote_probe, blocking: this is the engine
 * thread), asked once per remote.url and remote.model; what was chosen is
 * said once, as is exactly what to set when nothing matched. */
static int probed_template(struct rcall *rc, enum fim_template *t, struct infill_error *err)
{
	struct pipeline *p = rc->p;
	char key[2048];
	snprintf(key, sizeof key, "%s|%s", rc->ep.url, rc->ep.model ? rc->ep.model : "");
	if (!p->probe_key || strcmp(p->probe_key, key)) {
		free(p->probe_key);
		free(p->probe_error);
		p->probe_key = strdup(key);
		p->probe_error = NULL;
		char said[1024], why[512], msg[1800];
		const char *source;
		int rc2 = remote_probe(&rc->ep, said, sizeof said, &source, why, sizeof why);
		p->probe_fim = rc2 ? FIM_TEMPLATE_AUTO : family_of(said);
		if (p->probe_fim != FIM_TEMPLATE_AUTO) {
			snprintf(
			        msg, sizeof msg,
			        "infill: %s serves %.300s (its %s): using fim.template \"%s\" (set "
			        "fim.template to choose another)",
			        rc->ep.url, said, source, fim_template_name(p->probe_fim));
			worker_post_message(p, EVENT_INFO, msg);
		} else {
			snprintf(msg, sizeof msg,
			         "remote.api \"openai\" needs fim.template: %s%.300s%s; set "
			         "fim.template "
			         "to the server model's family (deepseek, qwen, starcoder, "
			         "codellama, "
			         "codegemma, or a string with {prefix} and {suffix}), or "
			         "remote.tokenizer "
			         "to its GGUF file",
			         rc2 ? why : "the server serves ", rc2 ? "" : said,
			         rc2 ? "" : ", which names no family infill knows");
			p->probe_error = strdup(msg);
		}
	}
	if (p->probe_fim == FIM_TEMPLATE_AUTO)
		return error_set(err, -EINVAL, "%s",
		                 p->probe_error ? p->probe_error : "fim.template is unset");
	*t = p->probe_fim;
	return 0;
}

/* The prompt's text form without a vocabulary: snippets as commented blocks
 * before the prefix, then the family's template. */
static int text_prompt(struct rcall *rc, const struct engine_request *rq, struct infill_error *err)
{
	enum fim_template t = rq->fim;
	if (t == FIM_TEMPLATE_AUTO) {
		int rc2 = probed_template(rc, &t, err);
		if (rc2) return rc2;
	}
	const char *cm = rq->comment ? rq->comment : "//";
	size_t n = rq->prefix_len + 1;
	for (size_t i = 0; i < rq->n_extra; i++)
		n += rq->extra[i].len + strlen(cm) + 8 +
		     (rq->extra[i].path ? strlen(rq->extra[i].path) : 0);
	char *pre = malloc(n), *o = pre;
	char *suf = strndup(rq->suffix ? rq->suffix : "", rq->suffix_len);
	if (!pre || !suf) {
		free(pre), free(suf);
		return error_set(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < rq->n_extra; i++) {
		if (rq->extra[i].path) o += sprintf(o, "%s %s\n", cm, rq->extra[i].path);
		memcpy(o, rq->extra[i].text, rq->extra[i].len);
		o += rq->extra[i].len;
		if (rq->extra[i].len && o[-1] != '\n') *o++ = '\n';
	}
	memcpy(o, rq->prefix, rq->prefix_len);
	o[rq->prefix_len] = 0;
	rc->prompt = fim_format_text(t, rq->fim_custom, pre, suf);
	free(pre), free(suf);
	if (!rc->prompt)
		return error_set(err, -EINVAL,
		                 "fim.template cannot be written as text (a custom one needs "
		                 "{prefix} and {suffix})");
	return 0;
}

/* Fills rc's endpoint and queries from the job's settings and rq. */
static int build(struct rcall *rc, const struct remote_gen *g, const struct engine_request *rq,
                 struct infill_error *err)
{
	const struct settings *st = &g->job->req->settings;
	if (!st->remote_url || !st->remote_url[0])
		return error_set(err, -EINVAL,
		                 "backend \"remote\" needs remote.url (the server's base URL, "
		                 "such as http://gpu-box:8080) in your user settings");
	rc->ep = (struct remote_endpoint){
		.url = st->remote_url,
		.api = st->remote_api == CONFIG_REMOTE_LLAMA_INFILL ? REMOTE_API_LLAMA_INFILL
		       : st->remote_api == CONFIG_REMOTE_OLLAMA     ? REMOTE_API_OLLAMA
		                                                    : REMOTE_API_OPENAI,
		.model = st->remote_model,
		.key_env = st->remote_api_key_env,
		.ca_file = st->remote_ca_file,
		.timeout_ms = st->remote_timeout_ms,
	};
	if (st->remote_api_key_env && st->remote_api_key_env[0]) {
		const char *k = getenv(st->remote_api_key_env);
		if (k && k[0] && !(rc->key = strdup(k)))
			return error_set(err, -ENOMEM, "out of memory");
		rc->ep.api_key = rc->key;
	}
	struct remote_query q = {
		.prefix = rq->prefix,
		.prefix_len = rq->prefix_len,
		.suffix = rq->suffix,
		.suffix_len = rq->suffix_len,
		.n = 1,
		.max_tokens = rq->max_tokens,
		.temperature = 0,
		.top_p = rq->top_p,
		.seed = rq->seed,
		.stop = rq->stop,
		.n_stop = rq->n_stop,
		.logprobs = true,
		/* engine_now_ms and uv_hrtime are both CLOCK_MONOTONIC */
		.answer_by_ns = rq->deadline_ms > 0 ? (uint64_t)(rq->deadline_ms * 1e6) : 0,
	};
	if (rc->ep.api == REMOTE_API_OPENAI) {
		if (g->tok) {
			struct engine_request r2 = *rq;
			r2.token_healing = false;
			int n = fim_prompt_tokens(g->tok, &r2, &rc->tokens, NULL, err);
			if (n < 0) return n;
			q.tokens = rc->tokens;
			q.n_tokens = (size_t)n;
		} else {
			int rc2 = text_prompt(rc, rq, err);
			if (rc2) return rc2;
			q.prompt = rc->prompt;
			q.prompt_len = strlen(rc->prompt);
		}
	} else if (rc->ep.api == REMOTE_API_LLAMA_INFILL && rq->n_extra) {
		rc->extra = calloc(rq->n_extra, sizeof *rc->extra);
		if (!rc->extra) return error_set(err, -ENOMEM, "out of memory");
		for (size_t i = 0; i < rq->n_extra; i++)
			rc->extra[i] = (struct remote_extra){ rq->extra[i].path, rq->extra[i].text,
				                              rq->extra[i].len };
		q.extra = rc->extra;
		q.n_extra = rq->n_extra;
	}
	rc->q[0] = q;
	rc->nq = 1;
	int n = rq->n_candidates < 1 ? 1 : rq->n_candidates;
	if (n > 1 && rc->ep.api != REMOTE_API_OLLAMA && !atomic_load(&rc->p->remote_no_sampling)) {
		rc->q[1] = q;
		rc->q[1].n = n - 1;
		rc->q[1].temperature = rq->temperature;
		rc->q[1].seed = rq->seed + 1;
		rc->nq = 2;
	}
	return 0;
}

/* The line-based stop rules the engine applies while decoding, applied to
 * a finished text: max_lines and the scope check (stop_text). Returns the
 * length kept and sets *stop when it cut. */
static size_t cut_lines(const struct engine_request *rq, const char *text, size_t len,
                        enum engine_stop *stop)
{
	int32_t lines = 1;
	size_t line_start = 0;
	for (size_t i = 0; i <= len; i++) {
		bool end = i == len;
		if (!end && text[i] != '\n') continue;
		/* text[line_start, i) is a line; a check when it is complete, or
		 * at the end for an unfinished one */
		if (rq->stop_text && (end ? i > line_start : true) &&
		    rq->stop_text(rq->stop_ud, text, end ? i : i + 1)) {
			*stop = ENGINE_STOP_SCOPE;
			return line_start ? line_start - 1 : 0;
		}
		if (end) break;
		if (rq->max_lines > 0 && lines == rq->max_lines && i + 1 < len) {
			*stop = ENGINE_STOP_MAX_LINES;
			return i;
		}
		lines++;
		line_start = i + 1;
	}
	return len;
}

static bool ident_byte(unsigned char b)
{
	return b == '_' || (b >= '0' && b <= '9') || ((b | 0x20) >= 'a' && (b | 0x20) <= 'z') ||
	       b >= 0x80;
}

/* A choice the deadline cut most likely ends inside a word: as the engine
 * does (cand_trim_word), back to the end of the last whole word, unless the
 * text is nothing but that word (it continues the word at the cursor). */
static size_t trim_word(const char *text, size_t len)
{
	size_t i = len;
	while (i > 0 && ident_byte((unsigned char)text[i - 1])) i--;
	return i > 0 && i < len ? i : len;
}

static int add_candidate(struct engine_result *res, const char *text, size_t len, int32_t n_tokens,
                         double mean, enum engine_stop stop)
{
	struct engine_candidate *c = &res->candidates[res->n_candidates];
	c->text = malloc(len + 1);
	if (!c->text) return -ENOMEM;
	memcpy(c->text, text, len);
	c->text[len] = 0;
	c->len = len;
	c->n_tokens = n_tokens;
	c->mean_logprob = mean;
	c->sum_logprob = mean * n_tokens;
	c->stop = stop;
	res->n_candidates++;
	return 0;
}

/* The choices of rc's replies as rq's candidates, then the given texts. */
static int fill_result(const struct rcall *rc, const struct engine_request *rq,
                       struct engine_result *res)
{
	size_t total = rq->n_given;
	for (int j = 0; j < rc->nq; j++) total += (size_t)rc->replies[j].n;
	res->candidates = calloc(total + 1, sizeof *res->candidates);
	if (!res->candidates) return -ENOMEM;
	double lowest = 0;
	bool any_lp = false;
	for (int j = 0; j < rc->nq; j++) {
		for (int i = 0; i < rc->replies[j].n; i++) {
			const struct remote_choice *ch = &rc->replies[j].choices[i];
			enum engine_stop stop = ch->finish == REMOTE_FINISH_LENGTH
			                                ? ENGINE_STOP_MAX_TOKENS
			                                : ENGINE_STOP_EOG;
			size_t len = ch->len;
			if (rc->replies[j].cut && ch->finish == REMOTE_FINISH_NONE) {
				stop = ENGINE_STOP_DEADLINE;
				len = trim_word(ch->text, len);
			}
			size_t keep = cut_lines(rq, ch->text, len, &stop);
			double mean = 0;
			if (ch->n_logprobs) {
				mean = ch->sum_logprob / ch->n_logprobs;
				if (!any_lp || mean < lowest) lowest = mean;
				any_lp = true;
			}
			int32_t nt = ch->n_tokens > 0 ? ch->n_tokens : 1;
			if (add_candidate(res, ch->text, keep, nt, mean, stop)) return -ENOMEM;
			res->generated_tokens += ch->n_tokens;
		}
	}
	for (size_t i = 0; i < rq->n_given; i++)
		if (add_candidate(res, rq->given[i].text, rq->given[i].len,
		                  (int32_t)(rq->given[i].len / COMPLETE_BYTES_PER_TOKEN) + 1,
		                  lowest - GIVEN_MARGIN, ENGINE_STOP_GIVEN))
			return -ENOMEM;
	return 0;
}

int remote_bridge_generate(void *ud, const struct engine_request *rq, struct engine_result *res,
                           struct infill_error *err)
{
	const struct remote_gen *g = ud;
	struct pipeline *p = g->p;
	memset(res, 0, sizeof *res);
	struct rcall *rc = calloc(1, sizeof *rc);
	if (!rc) return error_set(err, -ENOMEM, "out of memory");
	rc->p = p;
	rc->job = g->job;
	int status = build(rc, g, rq, err);
	if (status) { /* the loop shows it (once), as it shows a failed call */
		rc->status = status;
		rc->fail.kind = status == -ENOMEM ? REMOTE_FAIL_INTERNAL : REMOTE_FAIL_SETTINGS;
		snprintf(rc->fail.message, sizeof rc->fail.message, "%s", err->message);
		rc->nq = 0;
	}
	pthread_mutex_lock(&p->mu);
	if (p->stop) {
		pthread_mutex_unlock(&p->mu);
		rcall_free(rc);
		res->cancelled = true;
		return ENGINE_ECANCELED;
	}
	if (p->rcalls_tail)
		p->rcalls_tail->next = rc;
	else
		p->rcalls_head = rc;
	p->rcalls_tail = rc;
	pthread_mutex_unlock(&p->mu);
	uv_async_send(&p->async);
	pthread_mutex_lock(&p->mu);
	while (!rc->done) pthread_cond_wait(&p->cv, &p->mu);
	pthread_mutex_unlock(&p->mu);

	status = rc->status;
	res->total_ms = rc->elapsed_ms;
	if (status && rc->nq == 0) { /* never sent: err says why already */
		rcall_free(rc);
		return status;
	}
	size_t chars = rq->prefix_len + rq->suffix_len;
	res->prompt_tokens = rc->q[0].n_tokens ? (int32_t)rc->q[0].n_tokens
	                                       : (int32_t)(chars / COMPLETE_BYTES_PER_TOKEN);
	if (status == ENGINE_ECANCELED) {
		res->cancelled = true;
	} else if (status) {
		error_set(err, status, "%s", rc->fail.message);
	} else {
		res->processed_tokens = res->prompt_tokens;
		if (fill_result(rc, rq, res)) status = error_set(err, -ENOMEM, "out of memory");
	}
	rcall_free(rc);
	return status;
}

/* ---- the loop thread ---------------------------------------------------------- */

/* Shows a failure once: a kind already shown is only logged, until an
 * answer comes through. A set, not the last one shown: a server whose
 * failures alternate (an HTML 502, then a cut reply, then the 502 again)
 * must not show a message per request. */
static void report(struct pipeline *p, const struct remote_failure *f)
{
	uint32_t bit = 1u << ((unsigned)f->kind % 32u);
	if (p->remote_shown & bit) {
		log_debug(p->log, "remote backend: %s", f->message);
		return;
	}
	p->remote_shown |= bit;
	char msg[700];
	snprintf(msg, sizeof msg, "infill: remote backend: %s", f->message);
	if (p->host.message) /* which logs it too */
		p->host.message(p->host.ud, 1, msg);
	else
		log_error(p->log, "%s", msg);
}

/* Whether rc's replies hold any text (an answer cut at the deadline may
 * hold none). */
static bool any_text(const struct rcall *rc)
{
	for (int j = 0; j < rc->nq; j++)
		for (int i = 0; i < rc->replies[j].n; i++)
			if (rc->replies[j].choices[i].len) return true;
	return false;
}

/* Ends rc with status: the engine thread may free it from here on. */
static void finish(struct pipeline *p, struct rcall *rc, int status)
{
	rc->status = status;
	if (rc->job->rcall == rc) rc->job->rcall = NULL;
	rc->job->remote_ms = rc->elapsed_ms;
	if (status == 0 && rc->cut) p->remote_cut++;
	if (status == 0 && rc->cut && !any_text(rc)) {
		/* not a failure (the request answers empty, as a local model
		 * past its deadline would), but a server this slow for this
		 * deadline is worth saying once */
		struct remote_failure f = { .kind = REMOTE_FAIL_LATE };
		snprintf(f.message, sizeof f.message,
		         "the server (remote.url) sent nothing within completion.deadlineMs "
		         "(%d ms after the keystroke): raise completion.deadlineMs, or use a "
		         "faster server or a smaller model",
		         rc->job->req->settings.completion_deadline_ms);
		report(p, &f);
	} else if (status == 0) {
		/* a whole answer: the server works again, and a new failure
		 * is news (an answer cut at the deadline proves less) */
		if (!rc->cut) p->remote_shown = 0;
	} else if (status != ENGINE_ECANCELED) {
		report(p, &rc->fail);
	}
	pthread_mutex_lock(&p->mu);
	rc->done = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/* The greedy call answered where the sampling call was refused: the
 * server refuses sampling (llama-server's /v1/completions takes n = 1
 * only), so later requests send the greedy call alone, said once. When
 * the greedy call failed too, its failure is the one shown. */
static void sampling_judge(struct pipeline *p, struct rcall *rc)
{
	if (!rc->sampling_refused || rc->status) return;
	if (atomic_exchange(&p->remote_no_sampling, true)) return;
	char msg[800];
	snprintf(msg, sizeof msg,
	         "infill: remote backend: the server refused the call for sampled "
	         "candidates (%.600s); from now on it is sent the greedy call only "
	         "(one candidate a request)",
	         rc->sampling_why);
	if (p->host.message)
		p->host.message(p->host.ud, 2, msg);
	else
		log_warn(p->log, "%s", msg);
}

static void on_call_done(void *ud, int status, struct remote_reply *reply,
                         const struct remote_failure *f)
{
	struct rslot *s = ud;
	struct rcall *rc = s->rc;
	struct pipeline *p = rc->p;
	rc->calls[s->i] = NULL;
	rc->pending--;
	if (status == 0) {
		rc->replies[s->i] = *reply; /* the choices are ours now */
		reply->choices = NULL;
		reply->n = 0;
		if (reply->elapsed_ms > rc->elapsed_ms) rc->elapsed_ms = reply->elapsed_ms;
		if (reply->cut) rc->cut = true;
	} else if (s->i == 1 && status != ENGINE_ECANCELED && f->kind == REMOTE_FAIL_HTTP &&
	           f->http_status >= 400 && f->http_status < 500 && !rc->status) {
		/* The sampling call refused (its n, its temperature): the greedy
		 * call may still answer; sampling_judge decides when it has. */
		rc->sampling_refused = true;
		snprintf(rc->sampling_why, sizeof rc->sampling_why, "%s", f->message);
	} else if (!rc->status) {
		rc->status = status;
		rc->fail = *f;
		for (int j = 0; j < rc->nq; j++) { /* the answer is lost: the rest is waste */
			if (!rc->calls[j]) continue;
			remote_call_cancel(p->remote, rc->calls[j]);
			rc->calls[j] = NULL;
			rc->pending--;
		}
	}
	if (rc->pending == 0) {
		sampling_judge(p, rc);
		finish(p, rc, rc->status);
	}
}

void remote_bridge_start_pending(struct pipeline *p)
{
	pthread_mutex_lock(&p->mu);
	struct rcall *list = p->rcalls_head;
	p->rcalls_head = p->rcalls_tail = NULL;
	pthread_mutex_unlock(&p->mu);
	for (struct rcall *rc = list, *next; rc; rc = next) {
		next = rc->next;
		rc->next = NULL;
		if (p->closing || atomic_load(&rc->job->cancel)) {
			finish(p, rc, ENGINE_ECANCELED);
			continue;
		}
		if (rc->status) { /* it could not be built: say why */
			p->remote_unsent++;
			finish(p, rc, rc->status);
			continue;
		}
		const struct settings *st = &rc->job->req->settings;
		if (!p->remote) p->remote = remote_client_new(p->loop, st->remote_max_concurrent);
		if (!p->remote) {
			rc->fail = (struct remote_failure){ .kind = REMOTE_FAIL_INTERNAL };
			char *shown = remote_url_redact(rc->ep.url); /* may be NULL: then no URL */
			snprintf(rc->fail.message, sizeof rc->fail.message,
			         "cannot start the HTTP client (libcurl) for %s",
			         shown ? shown : "remote.url");
			free(shown);
			finish(p, rc, -ENOMEM);
			continue;
		}
		remote_client_set_max_concurrent(p->remote, st->remote_max_concurrent);
		rc->job->remote = true;
		rc->job->rcall = rc;
		int status = 0;
		for (int i = 0; i < rc->nq && !status; i++) {
			rc->slots[i] = (struct rslot){ rc, i };
			status = remote_call_start(p->remote, &rc->ep, &rc->q[i], on_call_done,
			                           &rc->slots[i], &rc->calls[i]);
			if (!status) rc->pending++;
		}
		if (status) {
			for (int i = 0; i < rc->nq; i++)
				if (rc->calls[i]) remote_call_cancel(p->remote, rc->calls[i]);
			rc->fail =
			        (struct remote_failure){ .kind = status == -EINVAL
				                                         ? REMOTE_FAIL_CONNECT
				                                         : REMOTE_FAIL_INTERNAL };
			snprintf(rc->fail.message, sizeof rc->fail.message, "%s",
			         status == -EINVAL
			                 ? "remote.url must start with http:// or https://, and "
			                   "the variable remote.apiKeyEnv names must hold one line"
			                 : "cannot start a request (out of memory)");
			finish(p, rc, status);
		}
	}
}

void remote_bridge_cancel_job(struct pipeline *p, struct pipeline_job *job)
{
	struct rcall *rc = job->rcall;
	if (!rc) return;
	for (int i = 0; i < rc->nq; i++) {
		if (!rc->calls[i]) continue;
		remote_call_cancel(p->remote, rc->calls[i]); /* closes the connection now */
		rc->calls[i] = NULL;
	}
	rc->pending = 0;
	finish(p, rc, ENGINE_ECANCELED);
}

void remote_bridge_record(struct pipeline *p, const struct pipeline_job *job)
{
	if (!job->remote || job->status || !job->submit_ns) return;
	double total = (double)(uv_hrtime() - job->submit_ns) / 1e6;
	double own = total - job->remote_ms;
	if (own < 0) own = 0;
	struct remote_figures *f = &p->rfig;
	f->remote_ms[f->at] = job->remote_ms;
	f->daemon_ms[f->at] = own;
	f->at = (f->at + 1) % REMOTE_SAMPLES;
	if (f->n < REMOTE_SAMPLES) f->n++;
	f->remote_sum += job->remote_ms;
	f->daemon_sum += own;
}

static struct stats_latency percentiles(const double *v, size_t n)
{
	double sorted[REMOTE_SAMPLES];
	memcpy(sorted, v, n * sizeof *sorted);
	stats_sort(sorted, n);
	return (struct stats_latency){ .p50 = stats_percentile(sorted, n, 0.50),
		                       .p90 = stats_percentile(sorted, n, 0.90),
		                       .p99 = stats_percentile(sorted, n, 0.99),
		                       .samples = n };
}

void remote_bridge_stats(const struct pipeline *p, struct stats *out)
{
	const struct remote_figures *f = &p->rfig;
	out->remote_latency_ms = percentiles(f->remote_ms, f->n);
	out->daemon_latency_ms = percentiles(f->daemon_ms, f->n);
	double sum = f->remote_sum + f->daemon_sum;
	out->remote_share = sum > 0 ? f->remote_sum / sum : 0;
	out->remote_failures = p->remote_unsent;
	out->remote_deadline_cuts = p->remote_cut;
	if (p->remote) {
		struct remote_client_stats cs;
		remote_client_get_stats(p->remote, &cs);
		out->remote_requests = cs.calls;
		out->remote_failures += cs.failures;
		out->remote_retries = cs.retries;
	}
}

static void client_closed(void *ud)
{
	struct pipeline *p = ud;
	void (*done)(struct pipeline *) = p->remote_closed;
	p->remote_closed = NULL;
	if (done) done(p);
}

void remote_bridge_close(struct pipeline *p, void (*done)(struct pipeline *p))
{
	if (!p->remote) {
		done(p);
		return;
	}
	p->remote_closed = done;
	remote_client_close(p->remote, client_closed, p);
}

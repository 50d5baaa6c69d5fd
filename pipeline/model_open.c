/*
 * model_open.c - opening the model a completion runs on, from the
 * settings (complete.h): where the embedded model lives, which
 * settings a load takes (struct complete_model_spec), and the one function
 * that loads a model and starts its engine. The server's engine thread
 * (engine_thread.c), `infill complete` (cli/cli_pipeline.c) and `infill eval`
 * (cli/cli_eval.c) all open their model here, so a setting that one of
 * them honours, they all honour.
 */
#include "complete.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "infill_config.h"

/* ---- the default model -------------------------------------------------- */

static bool file_exists(const char *path)
{
	return access(path, R_OK) == 0;
}

char *complete_default_model_path(void)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	char dir[4096] = "";
	if (n > 0) {
		exe[n] = 0;
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			snprintf(dir, sizeof dir, "%s", exe);
		}
	}
	char path[4200];
	if (dir[0]) {
		snprintf(path, sizeof path, "%s/models/infill-default.gguf", dir);
		if (file_exists(path)) return strdup(path);
		snprintf(path, sizeof path, "%s/../share/infill/infill-default.gguf", dir);
		if (file_exists(path)) return strdup(path);
	}
	snprintf(path, sizeof path, "%s/models/infill-default.gguf", INFILL_SOURCE_ROOT);
	return strdup(path);
}

/* ---- settings to parameters ------------------------------------------------ */

struct complete_model_spec complete_model_spec_from(const struct settings *st)
{
	struct complete_model_spec s = {
		.backend = st->backend,
		.threads = st->threads,
		.cache_memory_mb = st->cache_memory_mb,
		.kv_type = st->cache_kv_type,
		.reuse_shifted_suffix = st->cache_reuse_shifted_suffix,
	};
	if (st->completion_draft_model)
		snprintf(s.draft_model, sizeof s.draft_model, "%s", st->completion_draft_model);
	return s;
}

/* What model_load is asked: backend, threads, the KV pool's size and
 * precision, for the model at path (borrowed). */
static struct model_params model_params_of(const struct complete_model_spec *spec, const char *path)
{
	struct model_params mp = model_params_default();
	mp.path = path;
	mp.backend = spec->backend == CONFIG_BACKEND_CUDA  ? INFER_BACKEND_CUDA
	             : spec->backend == CONFIG_BACKEND_CPU ? INFER_BACKEND_CPU
	                                                   : INFER_BACKEND_AUTO;
	mp.n_threads = spec->threads;
	mp.kv_bytes = (size_t)spec->cache_memory_mb << 20;
	mp.kv_f32 = spec->kv_type == CONFIG_KV_F32;
	mp.kv_q8_0 = spec->kv_type == CONFIG_KV_Q8_0;
	mp.kv_auto = spec->kv_type == CONFIG_KV_AUTO;
	return mp;
}

struct engine_params complete_engine_params(const struct complete_model_spec *spec)
{
	struct engine_params ep = engine_params_default();
	ep.reuse_shifted_suffix = spec->reuse_shifted_suffix;
	return ep;
}

/* path, or "~/models/x.gguf" from a settings file or an editor's settings
 * (no shell expanded it) written out in buf. */
static const char *path_at_home(const char *path, char *buf, size_t cap)
{
	const char *home = getenv("HOME");
	if (path[0] != '~' || path[1] != '/' || !home || !home[0]) return path;
	snprintf(buf, cap, "%s%s", home, path + 1);
	return buf;
}

/* Adds what more says to the warnings in *w (code 0): the first key stays,
 * the messages are joined. */
static void warn_add(struct infill_error *w, const struct infill_error *more)
{
	if (!more->message[0]) return;
	if (!w->message[0]) {
		*w = *more;
		return;
	}
	size_t n = strlen(w->message);
	if (n + 3 >= sizeof w->message) return;
	snprintf(w->message + n, sizeof w->message - n, "; %.*s", (int)(sizeof w->message - n - 3),
	         more->message);
}

/* model_load with what mp asks; a cache.kvType q8_0 this model cannot take
 * (its head size) is said in *warn (naming the model as which) and the
 * model loaded with an f16 cache: the setting costs the cache's size, not
 * the model. */
static struct model *model_load_kv(struct model_params *mp, const char *which,
                                   struct infill_error *err, struct infill_error *warn)
{
	memset(err, 0, sizeof *err);
	struct model *m = model_load(mp, err);
	if (m || !mp->kv_q8_0 || strcmp(err->key, "cache.kvType")) return m;
	mp->kv_q8_0 = false;
	memset(err, 0, sizeof *err);
	m = model_load(mp, err);
	if (!m) return NULL;
	/* the refusal's reason from the shape the f16 load read: a head size
	 * that is a multiple of 32 was refused for being over CUDA's 256 */
	int hd = model_info(m)->head_dim;
	struct infill_error w;
	error_set(&w, 0,
	          "cache.kvType q8_0 is not used: %s needs a head size that is a multiple of "
	          "32%s (this model's is %d); its cache is f16",
	          which, hd % 32 ? "" : " up to 256", hd);
	error_key(&w, "cache.kvType", strlen("cache.kvType"));
	warn_add(warn, &w);
	return m;
}

/* A loader's message without the path it often starts with (the caller
 * names the path itself, so a long one does not crowd out the reason). */
static const char *reason_of(const char *message, const char *path)
{
	size_t n = strlen(path);
	if (!strncmp(message, path, n) && message[n] == ':' && message[n + 1] == ' ')
		message += n + 2;
	return message[0] ? message : "unknown error";
}

/* What completion.draftModel's value means (catalog_resolve, "~/"
 * expanded first); a catalog model's published size in size ("" if none). */
static enum catalog_meaning draft_resolve(const char *name, char **path, char *size,
                                          size_t size_cap)
{
	char home[4200], msg[256];
	struct catalog *cat = catalog_load(msg, sizeof msg);
	const struct catalog_entry *c;
	enum catalog_meaning m =
	        catalog_resolve(cat, path_at_home(name, home, sizeof home), path, &c);
	snprintf(size, size_cap, "%s", c && c->size ? c->size : "");
	catalog_free(cat);
	return m;
}

/* The file completion.draftModel names (new string): a path as it is ("~/"
 * expanded), a catalog name ("deepseek-coder:1.3b") its download. NULL with
 * *warn saying why when it names neither, or a model not downloaded yet. */
static char *draft_file(const char *name, struct infill_error *warn)
{
	char *path = NULL, size[32];
	if (strlen(name) + 1 >= sizeof((struct complete_model_spec *)0)->draft_model) {
		error_set(warn, 0,
		          "completion.draftModel is longer than a path can be (%zu bytes or more); "
		          "decoding goes on without a draft",
		          strlen(name));
		error_key(warn, "completion.draftModel", strlen("completion.draftModel"));
		return NULL;
	}
	enum catalog_meaning m = draft_resolve(name, &path, size, sizeof size);
	if (m == CATALOG_NOT_DOWNLOADED)
		error_set(warn, 0,
		          "completion.draftModel %.100s is not downloaded yet: run `infill pull "
		          "%.100s` (%.20s); decoding goes on without a draft until it is",
		          name, name, size[0] ? size : "size not listed");
	else if (m == CATALOG_UNKNOWN)
		error_set(warn, 0,
		          "completion.draftModel \"%.100s\" is neither a file nor a model of the "
		          "catalog (`infill models` lists them); decoding goes on without a draft",
		          name);
	else if (!path)
		error_set(warn, 0, "completion.draftModel is not used: out of memory");
	if (path && (m == CATALOG_FILE || m == CATALOG_DOWNLOADED)) return path;
	free(path);
	error_key(warn, "completion.draftModel", strlen("completion.draftModel"));
	return NULL;
}

char *complete_draft_where(const char *name)
{
	char *path = NULL, size[32];
	if (draft_resolve(name, &path, size, sizeof size) != CATALOG_UNKNOWN) return path;
	free(path);
	return NULL;
}

/* completion.draftModel (name) is not used, and why (message, which may
 * start with path), added to *warn. */
static void draft_refused(struct infill_error *warn, const char *name, const char *path,
                          const char *message)
{
	struct infill_error w;
	error_set(&w, 0, "completion.draftModel %.200s is not used: %.300s", name,
	          reason_of(message, path));
	error_key(&w, "completion.draftModel", strlen("completion.draftModel"));
	warn_add(warn, &w);
}

/* The draft model at path (draft_file's), loaded with a KV pool a quarter
 * of the model's, its progress told as the model's; NULL with what went
 * wrong added to *warn. */
static struct model *draft_load(const struct complete_model_spec *spec, const char *path,
                                void (*progress)(void *user, float fraction), void *progress_user,
                                struct infill_error *warn)
{
	struct model_params mp = model_params_of(spec, path);
	mp.kv_bytes = mp.kv_bytes / 4 > (64u << 20) ? mp.kv_bytes / 4 : (64u << 20);
	mp.progress = progress;
	mp.progress_user = progress_user;
	struct infill_error err;
	struct model *dm = model_load_kv(&mp, "the draft model", &err, warn);
	if (!dm) draft_refused(warn, path, path, err.message);
	return dm;
}

struct model *complete_draft_load(const struct complete_model_spec *spec, struct infill_error *warn)
{
	memset(warn, 0, sizeof *warn);
	if (!spec->draft_model[0]) return NULL;
	char *path = draft_file(spec->draft_model, warn);
	struct model *dm = path ? draft_load(spec, path, NULL, NULL, warn) : NULL;
	free(path);
	return dm;
}

void complete_draft_give(struct engine *e, const struct complete_model_spec *spec, struct model *dm,
                         struct infill_error *warn)
{
	struct infill_error err;
	if (engine_take_draft(e, dm, &err))
		draft_refused(warn, spec->draft_model, spec->draft_model, err.message);
}

/* One progress from 0 to 1 over the model's load and its draft's, each
 * its share of their bytes on disk, so that the bar does not sit at 100%
 * while a draft (a sixth of a 6.7B model's bytes) loads. */
struct load_share {
	void (*progress)(void *user, float fraction);
	void *user;
	float from, share;
};

static void load_share_report(void *user, float fraction)
{
	struct load_share *s = user;
	s->progress(s->user, s->from + fraction * s->share);
}

/* ---- opening ------------------------------------------------------------------ */

int complete_model_open(const char *path, const struct complete_model_spec *spec,
                        void (*progress)(void *user, float fraction), void *progress_user,
                        struct model **model, struct engine **engine, struct infill_error *err)
{
	*model = NULL;
	*engine = NULL;
	char home_path[4200];
	path = path_at_home(path, home_path, sizeof home_path);
	struct model_params mp = model_params_of(spec, path);
	/* the draft's file first, to share the progress by bytes */
	struct infill_error dwarn;
	memset(&dwarn, 0, sizeof dwarn);
	char *draft = spec->draft_model[0] ? draft_file(spec->draft_model, &dwarn) : NULL;
	struct load_share share = { progress, progress_user, 0, 1 };
	struct stat mst, dst;
	if (draft && !stat(path, &mst) && !stat(draft, &dst) && mst.st_size + dst.st_size > 0)
		share.share = (float)mst.st_size / (float)(mst.st_size + dst.st_size);
	mp.progress = progress ? load_share_report : NULL;
	mp.progress_user = &share;
	struct infill_error ierr, warn;
	memset(&warn, 0, sizeof warn);
	struct model *m = model_load_kv(&mp, "the model", &ierr, &warn);
	struct engine *e = NULL;
	if (m) {
		struct engine_params ep = complete_engine_params(spec);
		e = engine_new(m, &ep, &ierr);
	}
	if (!e) {
		model_free(m);
		free(draft);
		/* the code of the step that failed: -ENOENT for a missing file,
		 * -EINVAL for a bad one, -ENOTSUP for an architecture we lack */
		int code = ierr.code < 0 ? ierr.code : m ? -ENOMEM : -EINVAL;
		if (err) {
			const char *why = reason_of(ierr.message, path);
			char msg[sizeof err->message];
			snprintf(msg, sizeof msg, "cannot load the model %.240s: %.240s", path,
			         why);
			*err = ierr; /* the key, tensor and offset at fault kept */
			err->code = code;
			memcpy(err->message, msg, sizeof msg);
		}
		return code;
	}
	if (draft) {
		share.from = share.share;
		share.share = 1 - share.share;
		struct model *dm = draft_load(spec, draft, progress ? load_share_report : NULL,
		                              &share, &dwarn);
		if (dm) complete_draft_give(e, spec, dm, &dwarn);
		free(draft);
	}
	warn_add(&warn, &dwarn);
	if (err) *err = warn;
	*model = m;
	*engine = e;
	return 0;
}

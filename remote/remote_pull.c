/*
 * remote_pull.c - `infill pull URL [-o FILE] [--sha256 HEX]` (remote.h): a
 * model file downloaded with a progress line, resumed where a previous run
 * stopped (FILE.part and an HTTP Range request), checked against a sha256
 * when one is given, and renamed into place only when whole and checked.
 * Blocking (libcurl's easy interface): the command line has no loop to keep
 * free.
 */
#include "remote.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct pull {
	FILE *f;
	curl_off_t offset; /* bytes of .part kept from before */
	CURL *easy;
	bool checked; /* the status of this reply was looked at */
	bool progress;
	bool shown;        /* a progress line is on screen (ended with '\n' before more) */
	double last_shown; /* seconds, monotonic */
	double started;
	int write_errno; /* why the last write to the part failed (0: none) */
};

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t on_write(char *data, size_t size, size_t nmemb, void *ud)
{
	struct pull *pl = ud;
	if (!pl->checked) {
		long status = 0;
		curl_easy_getinfo(pl->easy, CURLINFO_RESPONSE_CODE, &status);
		pl->checked = true;
		if (status == 200 && pl->offset > 0) {
			/* the server ignored the Range: it sends the whole file */
			if (ftruncate(fileno(pl->f), 0) || fseek(pl->f, 0, SEEK_SET)) return 0;
			pl->offset = 0;
		}
	}
	if (fwrite(data, size, nmemb, pl->f) == nmemb) return size * nmemb;
	pl->write_errno = errno;
	return 0;
}

static int on_progress(void *ud, curl_off_t total, curl_off_t now, curl_off_t ut, curl_off_t un)
{
	(void)ut, (void)un;
	struct pull *pl = ud;
	double t = mono_s();
	if (!pl->progress || (t - pl->last_shown < 0.25 && (total == 0 || now < total))) return 0;
	/* nothing received yet (an error reply on its way): no fragment of a
	 * progress line before the error */
	if (now == 0) return 0;
	pl->last_shown = t;
	pl->shown = true;
	double mib = 1024.0 * 1024.0;
	double have = (double)(pl->offset + now) / mib, all = (double)(pl->offset + total) / mib;
	double rate = t > pl->started ? (double)now / mib / (t - pl->started) : 0;
	if (total > 0)
		fprintf(stderr, "\r  %.1f / %.1f MiB  %5.1f%%  %.1f MiB/s   ", have, all,
		        100.0 * have / all, rate);
	else
		fprintf(stderr, "\r  %.1f MiB  %.1f MiB/s   ", have, rate);
	return 0;
}

static int sha256_file(const char *path, char hex[65])
{
	FILE *f = fopen(path, "rb");
	if (!f) return -errno;
	struct remote_sha256 s;
	remote_sha256_init(&s);
	char buf[1 << 16];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0) remote_sha256_update(&s, buf, n);
	int bad = ferror(f);
	fclose(f);
	if (bad) return -EIO;
	remote_sha256_hex(&s, hex);
	return 0;
}

static int options_check(const struct remote_pull_options *o, char *msg, size_t msg_len)
{
	if (!o->url || (strncmp(o->url, "http://", 7) && strncmp(o->url, "https://", 8))) {
		snprintf(msg, msg_len, "the URL must start with http:// or https://");
		return -EINVAL;
	}
	if (o->sha256 && strlen(o->sha256) != 64) {
		snprintf(msg, msg_len, "--sha256 wants 64 hex digits");
		return -EINVAL;
	}
	return 0;
}

static void easy_configure(struct pull *pl, const struct remote_pull_options *o, char *errbuf)
{
	CURL *e = pl->easy;
	curl_easy_setopt(e, CURLOPT_URL, o->url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L); /* model hubs redirect to storage */
	curl_easy_setopt(e, CURLOPT_MAXREDIRS, 10L);
	curl_easy_setopt(e, CURLOPT_FAILONERROR, 1L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, pl);
	curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(e, CURLOPT_XFERINFODATA, pl);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L); /* a stalled server: give up, */
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, 60L); /* the .part is kept for a resume */
	if (o->ca_file) curl_easy_setopt(e, CURLOPT_CAINFO, o->ca_file);
}

/* Runs the transfer from pl->offset; a server without byte ranges gets a
 * second try from the start, over an emptied .part. *r: libcurl's result. */
static int transfer_run(struct pull *pl, const struct remote_pull_options *o, const char *part,
                        CURLcode *r, char *msg, size_t msg_len)
{
	CURL *e = pl->easy;
	if (pl->offset > 0) {
		curl_easy_setopt(e, CURLOPT_RESUME_FROM_LARGE, pl->offset);
		if (o->progress)
			fprintf(stderr, "infill pull: resuming %s at %.1f MiB\n", part,
			        (double)pl->offset / 1048576.0);
	}
	*r = curl_easy_perform(e);
	if (*r != CURLE_RANGE_ERROR) return 0;
	if (o->progress)
		fprintf(stderr, "%sinfill pull: the server cannot resume; restarting\n",
		        pl->shown ? "\n" : "");
	pl->shown = false;
	fclose(pl->f);
	pl->f = fopen(part, "wb");
	if (!pl->f) {
		int rc = -errno;
		snprintf(msg, msg_len, "cannot write %s: %s", part, strerror(-rc));
		return rc;
	}
	pl->offset = 0;
	pl->checked = false;
	curl_easy_setopt(e, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)0);
	*r = curl_easy_perform(e);
	return 0;
}

/* A write to the part failed: say what the user can do about it. */
static int write_failed(const char *part, int e, char *msg, size_t msg_len)
{
	if (e == ENOSPC || e == EDQUOT) {
		snprintf(msg, msg_len,
		         "no space left on the disk writing %s; free some space and run the same "
		         "command again to resume",
		         part);
		return -ENOSPC;
	}
	if (e == EFBIG) {
		snprintf(msg, msg_len,
		         "a file-size limit (ulimit -f) stopped writing %s; raise it and run the "
		         "same command again to resume",
		         part);
		return -EFBIG;
	}
	snprintf(msg, msg_len, "writing %s failed: %s", part, e ? strerror(e) : "I/O error");
	return -EIO;
}

/* Closes the .part (a failed close is a failed write) and turns libcurl's
 * result into our code, saying whether the same command can resume. */
static int transfer_finish(struct pull *pl, const struct remote_pull_options *o, const char *part,
                           CURLcode r, const char *errbuf, char *msg, size_t msg_len)
{
	long status = 0;
	curl_easy_getinfo(pl->easy, CURLINFO_RESPONSE_CODE, &status);
	if (pl->shown) fputc('\n', stderr);
	pl->shown = false;
	int closed = fclose(pl->f);
	if (closed && !pl->write_errno) pl->write_errno = errno;
	pl->f = NULL;
	if (closed || (r == CURLE_WRITE_ERROR && pl->write_errno))
		return write_failed(part, pl->write_errno, msg, msg_len);
	/* 416: the range starts at the end: the .part is the whole file */
	if (r != CURLE_OK && !(r == CURLE_HTTP_RETURNED_ERROR && status == 416 && pl->offset > 0)) {
		snprintf(msg, msg_len, "downloading %s failed (%s)%s", o->url,
		         errbuf[0] ? errbuf : curl_easy_strerror(r),
		         pl->offset || r == CURLE_PARTIAL_FILE || r == CURLE_OPERATION_TIMEDOUT
		                 ? "; run the same command again to resume"
		                 : "");
		return r == CURLE_COULDNT_CONNECT || r == CURLE_COULDNT_RESOLVE_HOST ? -ECONNREFUSED
		                                                                     : -EIO;
	}
	return 0;
}

/* Downloads o->url into part, appending to what a previous run left there. */
static int download(struct pull *pl, const struct remote_pull_options *o, const char *part,
                    char *msg, size_t msg_len)
{
	pl->f = fopen(part, "ab");
	if (!pl->f) {
		int rc = -errno;
		snprintf(msg, msg_len, "cannot write %s: %s", part, strerror(-rc));
		return rc;
	}
	pl->offset = (curl_off_t)ftell(pl->f);
	pl->easy = curl_easy_init();
	if (!pl->easy) {
		snprintf(msg, msg_len, "libcurl cannot start");
		return -ENOMEM;
	}
	char errbuf[CURL_ERROR_SIZE] = "";
	easy_configure(pl, o, errbuf);
	CURLcode r;
	int rc = transfer_run(pl, o, part, &r, msg, msg_len);
	if (rc) return rc;
	return transfer_finish(pl, o, part, r, errbuf, msg, msg_len);
}

/* A download that does not match --sha256 is removed: resuming it would only
 * keep the wrong bytes. */
static int download_verify(const struct remote_pull_options *o, const char *part, char *msg,
                           size_t msg_len)
{
	char hex[65];
	int rc = sha256_file(part, hex);
	if (rc) {
		snprintf(msg, msg_len, "cannot read %s back: %s", part, strerror(-rc));
		return rc;
	}
	if (strcasecmp(hex, o->sha256)) {
		unlink(part);
		snprintf(msg, msg_len,
		         "sha256 mismatch: expected %s, got %s; the download was removed",
		         o->sha256, hex);
		return -EBADMSG;
	}
	return 0;
}

int remote_pull(const struct remote_pull_options *o, char *msg, size_t msg_len)
{
	msg[0] = 0;
	int rc = options_check(o, msg, msg_len);
	if (rc) return rc;
	size_t pl_len = strlen(o->out) + 6;
	char *part = malloc(pl_len);
	if (!part) return -ENOMEM;
	snprintf(part, pl_len, "%s.part", o->out);
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		free(part);
		snprintf(msg, msg_len, "libcurl cannot start");
		return -EIO;
	}
	struct pull pl = { .progress = o->progress, .started = mono_s() };
	rc = download(&pl, o, part, msg, msg_len);
	if (!rc && o->sha256) rc = download_verify(o, part, msg, msg_len);
	if (!rc && o->verify) {
		rc = o->verify(part, o->verify_ud, msg, msg_len);
		if (rc) unlink(part); /* the wrong bytes: a resume would keep them */
	}
	if (!rc && rename(part, o->out)) {
		rc = -errno;
		snprintf(msg, msg_len, "cannot rename %s to %s: %s", part, o->out, strerror(-rc));
	}
	if (pl.f) fclose(pl.f);
	/* A .part stays only to resume a download that got bytes: a 404 or a
	 * refused connection leaves nothing behind. */
	struct stat st;
	if (rc && !stat(part, &st) && st.st_size == 0) unlink(part);
	if (pl.easy) curl_easy_cleanup(pl.easy);
	curl_global_cleanup();
	free(part);
	return rc;
}

"""metrics.file: the real binary writes Prometheus text format, read back
with Prometheus's own Python parser (prometheus_client.parser, Debian's
python3-prometheus-client, which tools/setup --tests installs), not a regex.

  - the file appears as soon as the setting takes effect, and parses;
  - it is rewritten every few seconds while the daemon runs (a document
    opened shows in infill_open_documents without any request);
  - after completions (the embedded model loaded), the counts agree with
    infill/stats: requests, the latency histograms' counts (one observation
    per answered request, buckets cumulative, +Inf equal to the count), the
    cache share;
  - the last write at exit holds the final counts, and no temporary file is
    left beside it;
  - a project file cannot set it (a cloned repository does not choose a file
    infill writes).

usage: metrics_test.py INFILL   (skipped, 77, without prometheus_client)
"""
import json
import os
import shutil
import sys
import tempfile
import time

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print("SKIP: prometheus_client not installed (tools/setup --tests installs "
          "python3-prometheus-client; run this with /usr/bin/python3)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lspclient import Client  # noqa: E402

TEXT = "import os\n\n\ndef list_files(path):\n    out = []\n    for name in os.listdir(path):\n        \n    return out\n"


def check(cond, what, *context):
    if not cond:
        raise AssertionError(what + "".join("\n  " + str(c) for c in context))


def parse(path):
    """{family name: family} from the file, through Prometheus's parser."""
    with open(path) as f:
        text = f.read()
    return {fam.name: fam for fam in text_string_to_metric_families(text)}, text


def value(fams, family, sample=None, **labels):
    for s in fams[family].samples:
        if (sample is None or s.name == sample) and all(s.labels.get(k) == v
                                                        for k, v in labels.items()):
            return s.value
    raise KeyError((family, sample, labels))


def check_histograms(fams):
    """Buckets cumulative, +Inf equal to _count; returns {path: count}."""
    counts = {}
    for path in ("typed", "cold", "fast", "none"):
        buckets = sorted(
            ((float(s.labels["le"]), s.value) for s in fams["infill_request_duration_seconds"].samples
             if s.name.endswith("_bucket") and s.labels.get("path") == path))
        check(len(buckets) >= 2 and buckets[-1][0] == float("inf"), "buckets up to +Inf", buckets)
        check(all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])), "cumulative", buckets)
        n = value(fams, "infill_request_duration_seconds", "infill_request_duration_seconds_count",
                  path=path)
        check(buckets[-1][1] == n, "+Inf bucket equals the count", path, buckets, n)
        counts[path] = n
    return counts


def completion(c, line, char):
    return c.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": "file:///tmp/infill-metrics/files.py"},
        "position": {"line": line, "character": char}, "context": {"triggerKind": 1}},
        timeout=30)


def main():
    d = tempfile.mkdtemp(prefix="infill-metrics-")
    try:
        return run(sys.argv[1], d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def run(binary, d):
    path = os.path.join(d, "infill.prom")

    # a project file may not set it: warned, ignored
    proj = os.path.join(d, "proj")
    os.mkdir(proj)
    with open(os.path.join(proj, ".infill.json"), "w") as f:
        json.dump({"metrics": {"file": os.path.join(d, "from-project.prom")}}, f)
    c = Client(binary)
    try:
        c.initialize(root_uri="file://" + proj)
        c.drain(0.5)
        check(not os.path.exists(os.path.join(d, "from-project.prom")),
              "a project file cannot set metrics.file")
        s = c.request("infill/settings")["result"]
        check(s.get("metrics.file") is None, "metrics.file stays unset", s)
        c.shutdown_exit()
    finally:
        c.kill()

    c = Client(binary)
    try:
        c.initialize(init_options={"metrics": {"file": path}})
        t0 = time.monotonic()
        while not os.path.exists(path) and time.monotonic() - t0 < 5:
            time.sleep(0.05)
        check(os.path.exists(path), "written as soon as the setting takes effect", c.log())
        fams, text = parse(path)
        for name in ("infill_requests", "infill_request_duration_seconds", "infill_cache_share",
                     "infill_suggestion_bytes", "infill_remote_failures",
                     "infill_deadline_cuts", "infill_backend_info"):
            check(name in fams, "family " + name, sorted(fams))
        check(fams["infill_request_duration_seconds"].type == "histogram", "a histogram")
        check(fams["infill_requests"].type == "counter", "a counter")
        check(value(fams, "infill_open_documents") == 0, "no document yet")

        # rewritten on its own every few seconds
        c.notify("textDocument/didOpen", {"textDocument": {
            "uri": "file:///tmp/infill-metrics/files.py", "languageId": "python",
            "version": 1, "text": TEXT}})
        t0 = time.monotonic()
        seen = 0
        while time.monotonic() - t0 < 12:
            time.sleep(0.5)
            seen = value(parse(path)[0], "infill_open_documents")
            if seen == 1:
                break
        check(seen == 1, "rewritten within a few seconds without a request", text)

        # wait for the model, then complete a few times
        t0 = time.monotonic()
        while c.request("infill/stats")["result"]["backend"] == "none":
            check(time.monotonic() - t0 < 90, "the embedded model loads", c.log())
            time.sleep(0.2)
        for _ in range(3):
            completion(c, 6, 8)
        stats = c.request("infill/stats")["result"]
        check(c.shutdown_exit() == 0, "exit 0")
    except BaseException:
        sys.stderr.write("---- server log ----\n" + c.log())
        raise
    finally:
        c.kill()

    fams, text = parse(path)
    check(value(fams, "infill_requests") == stats["requests"], "requests as infill/stats",
          stats, text)
    check(value(fams, "infill_prompt_tokens") == stats["promptTokens"], "prompt tokens", stats)
    counts = check_histograms(fams)
    check(sum(counts.values()) == stats["latencyMs"]["samples"],
          "one latency observation per answered request", counts, stats)
    check(counts["typed"] + counts["cold"] + counts["fast"] >= 1,
          "the model answered at least once", counts)
    share = value(fams, "infill_cache_share")
    want = stats["cachedPromptTokens"] / stats["promptTokens"] if stats["promptTokens"] else 0
    check(abs(share - want) < 1e-5, "cache share", share, want)
    check(value(fams, "infill_backend_info", backend=stats["backend"]) == 1, "backend label",
          text)
    n = value(fams, "infill_suggestion_bytes", "infill_suggestion_bytes_count")
    check(n <= sum(counts.values()), "one length per answer at most", n, counts)
    left = [f for f in os.listdir(d) if f.endswith(".tmp")]
    check(not left, "no temporary file left", left)
    print("ok: %d requests, latency counts %s, cache share %.3f" %
          (stats["requests"], counts, share))
    return 0


if __name__ == "__main__":
    sys.exit(main())

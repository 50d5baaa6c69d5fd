"""`infill replay --trace` end to end with the tiny random-weight model
(../shared/testdata/models/tiny-dsc-f32.gguf): the committed traces
(tests/cli/traces/) replay against the real server, every request gets
its response, and the report's counts agree with each other and with the
trace. Bad traces are refused with a message naming the event, before any
server starts. Random weights: the latencies and the correct count mean
nothing here; their structure does.

usage: cli_replay.py INFILL TESTDATA TRACES CASE  (or --list)
"""
import json
import os
import subprocess
import sys
import tempfile


class Failed(Exception):
    pass


def check(cond, what, *context):
    if not cond:
        raise Failed(what + "".join("\n  " + json.dumps(c)[:3000] for c in context))


def replay(binary, args, timeout=300):
    out = subprocess.run([binary, "replay", *args], capture_output=True, text=True,
                         timeout=timeout)
    return out


def run_trace(binary, model, trace):
    out = replay(binary, ["--trace", trace, "--model", model, "--json", "--settings",
                          '{"threads": 1, "completion.maxTokens": 8}'])
    check(out.returncode == 0, "replay ran", out.stderr[-3000:])
    r = json.loads(out.stdout)
    check(r["trace"] == trace and len(r["runs"]) == 1, "one run of the trace", r)
    return r["runs"][0]


def events(trace):
    with open(trace) as f:
        return json.load(f)["events"]


def consistent(run, evs):
    """What must hold for any trace, whatever the model says."""
    q = run["requests"]
    typed = sum(len(e["type"]) for e in evs if "type" in e)
    along = run["typedAlong"]
    check(run["keystrokes"] == typed + along["keys"], "one request per character typed",
          run, typed)
    check(along["keys"] <= sum(e["typeShown"] for e in evs if "typeShown" in e),
          "typed along at most what the events say", along)
    check(along["fast"] <= along["answered"] <= along["keys"] and
          along["grewFast"] <= along["grewAnswered"] <= along["grewAsks"] and
          0 <= along["fastShare"] <= 1 and 0 <= along["grewFastShare"] <= 1,
          "typed-along counts nest", along)
    check(q["sent"] >= run["keystrokes"] + along["grewAsks"], "re-asks are requests", q, along)
    check(q["responses"] == q["sent"], "every request got its response", q)
    check(q["answered"] + q["superseded"] == q["sent"], "answered or superseded", q)
    check(q["supersededLate"] <= q["superseded"], "late ones are superseded ones", q)
    check(run["latencyMs"]["samples"] + run["coldLatencyMs"]["samples"] == q["answered"],
          "every answer measured once, cold or not", run)
    check(q["withItems"] <= q["answered"] and q["withinDeadline"] <= q["answered"],
          "shares within the answered", q)
    check(0 <= run["withinDeadlineShare"] <= 1 and 0 <= run["withItemsShare"] <= 1 and
          0 <= run["warmWithinDeadlineShare"] <= 1, "shares are shares", run)
    check(q["accepted"] + q["acceptMissed"] == sum(1 for e in evs if "accept" in e),
          "every accept event counted", q)
    check(run["answered"] <= run["keystrokes"] and run["nonEmpty"] <= run["answered"],
          "keystroke counts", run)
    check(0 <= run["correct"] <= run["nonEmpty"], "correct only where something was shown",
          run)
    lat = run["latencyMs"]
    if lat["samples"]:
        check(0 < lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"], "ordered", lat)
    check(0 <= run["cachedPromptTokens"] <= run["promptTokens"], "cache within prompt", run)
    check(run["promptTokens"] > 0, "the model ran", run)
    for k in ("neverStarted", "coldRequests"):
        check(run[k] >= 0, "infill/stats has " + k, run)
    check(0 <= run["acceptedDraftTokens"] <= run["draftTokens"] and
          0 <= run["acceptedModelDraftTokens"] <= run["modelDraftTokens"],
          "drafts kept: of those checked", run)
    check(run["deadlineMs"] == 200, "the default deadline read back", run)
    # feedback: what was reported (each answer's top item shown, taken
    # when it is what the file says next) and counted by the server
    fb = run["feedback"]
    check(0 <= fb["taken"] <= run["correct"], "taken only what was right", fb, run)
    check(fb["taken"] <= fb["accepted"], "each one taken counted accepted", fb)
    check(fb["shown"] <= q["withItems"], "at most one shown per answer with items", fb, q)
    check(fb["accepted"] + fb["dismissed"] <= fb["shown"], "each shown one ends once", fb)
    check(fb["hidden"] == 0, "nothing hidden without minConfidence auto", fb)
    check(0 <= fb["acceptedUnderFloor"] <= fb["accepted"], "under the floor: of the accepted", fb)
    check(0 <= fb["acceptanceRate"] <= 1, "a rate", fb)
    check(run["backend"] == "cpu", "the model was loaded", run)
    # what the user sees: the suggestion only grows after the answer, and
    # the answers from memory are answers
    seen = run["seen"]
    # (the server counts what it answered: a request the client superseded
    # may have been answered before the server heard of the next one)
    check(0 < seen["answers"] <= q["responses"], "the model's answers counted", seen, q)
    check(0 <= seen["charsAtAnswer"] <= seen["charsAt500ms"] <= seen["charsAt1s"]
          <= seen["charsAtEnd"], "shown lengths only grow", seen)
    check(seen["liveAnswers"] + seen["pastAnswers"] + seen["aheadAnswers"]
          <= run["fastPath"], "answers from memory are fast-path answers", seen, run)
    check(0 <= seen["thrownTokens"] <= seen["liveTokens"] + seen["aheadTokens"]
          and 0 <= seen["thrownShare"] <= 1, "thrown: of what was decoded after", seen)


def case_every_event(binary, model, traces):
    """A hand-written trace using every event once: its counts add up."""
    trace = os.path.join(traces, "every-event.json")
    run = run_trace(binary, model, trace)
    consistent(run, events(trace))
    # the ask after the first goto and the cut after the third are awaited:
    # answered, and cold (the first requests at their places)
    cold = run["coldLatencyMs"]["samples"]
    check(2 <= cold <= 3, "the first request after each goto is cold", run)
    print("every-event: %d requests, p50 %.1f ms, cold p50 %.1f ms, cache %.2f" % (
        run["requests"]["sent"], run["latencyMs"]["p50"], run["coldLatencyMs"]["p50"],
        run["cachedShare"]))


def case_three_files(binary, model, traces):
    """A trace from tools/make-trace over a Python file, a C file and another
    Python file: jumps, bursts, pauses, a typo, an accept."""
    trace = os.path.join(traces, "three-files.json")
    evs = events(trace)
    run = run_trace(binary, model, trace)
    consistent(run, evs)
    gotos = sum(1 for e in evs if "goto" in e)
    # each jump cuts, asks and awaits: its first request is answered cold
    check(run["coldLatencyMs"]["samples"] == gotos, "one cold answer per jump", run, gotos)
    check(run["cachedShare"] > 0.3, "typing re-uses the prefix cache", run)
    print("three-files: %d requests, %d superseded, p50 %.1f p90 %.1f ms, cold p50 %.1f ms,"
          " within deadline %.2f, cache %.2f, never started %d" % (
              run["requests"]["sent"], run["requests"]["superseded"],
              run["latencyMs"]["p50"], run["latencyMs"]["p90"],
              run["coldLatencyMs"]["p50"], run["withinDeadlineShare"], run["cachedShare"],
              run["neverStarted"]))


def case_generator(binary, model, traces):
    """tools/make-trace is deterministic for a seed, and what it writes passes
    the replay's check (a trace with no file to open is refused: the check ran)."""
    tool = os.path.join(os.path.dirname(traces), "..", "..", "tools", "make-trace")
    files = [os.path.join(traces, "..", "eval_data", f) for f in ("shapes.py", "stack.c")]
    a = subprocess.run([sys.executable, tool, "--seed", "9", "--jumps", "5", *files],
                       capture_output=True, text=True, timeout=60)
    b = subprocess.run([sys.executable, tool, "--seed", "9", "--jumps", "5", *files],
                       capture_output=True, text=True, timeout=60)
    check(a.returncode == 0 and a.stdout == b.stdout, "the same trace for the same seed",
          a.stderr)
    t = json.loads(a.stdout)
    ev = t["events"]
    check(sum(1 for e in ev if "goto" in e) == 5, "five jumps", ev[:20])
    check({e["open"] for e in ev if "open" in e} == {os.path.abspath(f) for f in files},
          "every file opened", ev[:3])
    for e in ev:
        check(len(e) <= 3, "one event per object", e)
    # the C side's check accepts it: a replay against a missing model fails
    # at the model, not at the trace
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(a.stdout)
        path = f.name
    try:
        out = replay(binary, ["--trace", path, "--model", "/nonexistent.gguf"], timeout=120)
    finally:
        os.unlink(path)
    check(out.returncode == 1 and "model" in out.stderr and "event" not in out.stderr,
          "the generated trace passes the check", out.stderr)


def case_typed_along(binary, model, traces):
    """tools/make-trace --along: the user types the suggestion shown, a key at a
    time as long as one shows, and the replay asks again where the server says
    a suggestion grew. Keys are typed along what was shown, the fast path
    answers them, and the counts add up."""
    tool = os.path.join(traces, "..", "..", "..", "tools", "make-trace")
    files = [os.path.join(traces, "..", "eval_data", f) for f in ("shapes.py", "stack.c")]
    gen = subprocess.run([sys.executable, tool, "--along", "--seed", "3", "--jumps", "6", *files],
                         capture_output=True, text=True, timeout=60)
    check(gen.returncode == 0, "make-trace --along ran", gen.stderr)
    evs = json.loads(gen.stdout)["events"]
    check(any("typeShown" in e for e in evs), "the trace types along", evs[:12])
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(gen.stdout)
        path = f.name
    try:
        run = run_trace(binary, model, path)
    finally:
        os.unlink(path)
    consistent(run, evs)
    along = run["typedAlong"]
    check(along["keys"] > 0, "keys were typed along what was shown", along)
    check(along["fast"] > 0 and run["fastPath"] > 0,
          "typing along is answered at once from what was shown", along, run)
    print("typed-along: %d keys, %d answered within 30 ms (%.2f); %d asked again after a"
          " growth; thrown %.2f" % (along["keys"], along["fast"], along["fastShare"],
                                    along["grewAsks"], run["seen"]["thrownShare"]))


def case_bad_traces(binary, model, traces):
    """A trace that is not one is refused with exit 1 and a message naming the
    event and what it expected; nothing crashes and no server is started."""
    bad = [
        ("[]", "JSON object"),
        ('{"events": []}', "non-empty"),
        ('{"events": [{"open": "a.py"}, {"jump": 3}]}', "event 1"),
        ('{"events": [{"goto": "a.py"}]}', "line"),
        ('{"events": [{"type": 5}]}', "text"),
        ('{"events": [{"cut": "word"}]}', "\"line\" or \"end\""),
        ('{"events": [{"wait": -5}]}', "milliseconds"),
        ('{"events": [{"typeShown": "abc"}]}', "count of characters"),
        ('{"events": [{"open": "a.py"}', "events"),  # not JSON at all: jansson's message
        ('{"settings": 3, "events": [{"ask": true}]}', "settings"),
    ]
    for text, want in bad:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write(text)
            path = f.name
        try:
            out = replay(binary, ["--trace", path, "--model", model], timeout=60)
        finally:
            os.unlink(path)
        check(out.returncode == 1, "refused: " + text, out.returncode, out.stderr)
        check(want in out.stderr or "end of file" in out.stderr or "expected" in out.stderr,
              "the message says what is wrong: " + text, out.stderr)
    # events that need a place, before any goto: the run stops with the event
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write('{"events": [{"type": "x"}]}')
        path = f.name
    try:
        out = replay(binary, ["--trace", path, "--model", model], timeout=120)
    finally:
        os.unlink(path)
    check(out.returncode == 1 and "event 0" in out.stderr and "goto" in out.stderr,
          "typing before any goto is refused", out.stderr)
    out = replay(binary, ["--trace", "/nonexistent/trace.json"])
    check(out.returncode == 1 and "/nonexistent/trace.json" in out.stderr,
          "a missing trace is named", out.stderr)
    out = replay(binary, ["--trace", "x.json", "file.py"])
    check(out.returncode == 2, "a trace and a file at once is a usage error", out.stderr)


CASES = {name[5:]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}


def main():
    if sys.argv[1:2] == ["--list"]:
        print("\n".join(CASES))
        return 0
    binary, testdata, traces, name = sys.argv[1:5]
    model = os.path.join(testdata, "models", "tiny-dsc-f32.gguf")
    if not os.path.exists(model):
        print("SKIP: %s is missing" % model)
        return 77
    try:
        CASES[name](binary, model, os.path.abspath(traces))
    except Failed as e:
        print("FAIL:", e)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

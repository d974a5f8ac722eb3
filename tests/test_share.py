"""Permalinks (settings <-> URL query) and trace files (the app's download <-> Trace)."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import replace
from urllib.parse import parse_qs, urlsplit

import pytest
from starlette.datastructures import QueryParams

from speccascade.app import share
from speccascade.app.serving import ServeConfig
from speccascade.cli import main
from speccascade.core import engine, trace_file
from speccascade.core.engine import APP_DEFAULTS, METHODS, Settings
from speccascade.core.errors import ModelLoadError, PromptError, SettingsError, TraceFileError
from speccascade.models.presets import load_preset

CONFIG = ServeConfig()  # the public defaults: 4000 prompt characters, 256 new tokens
QUESTION = "Who is Buzz Aldrin?"

# A value other than the default for every Settings field this test knows about.
NON_DEFAULT = {
    "method": "spec_cascade",  # the default method; the rule below differs
    "rule": "token_v2",
    "alpha": 0.2,
    "gamma": 7,
    "temperature": 0.7,
    "top_k": 40,
    "top_p": 0.9,
    "max_new_tokens": 100,
    "seed": 12345,
    "stop": ("\n\n", "Q: & A="),
    "chat": False,
    "record_top_k": 5,
}


# -- permalinks ------------------------------------------------------------------------------


def test_default_settings_round_trip():
    query = share.to_query(QUESTION, Settings())
    shared = share.from_query(query, CONFIG)
    assert shared.settings == Settings().validated()
    assert shared.prompt == QUESTION and shared.problems == []
    # only what differs from Settings() is written: the prompt and the rule's default alpha
    assert set(parse_qs(query)) == {"prompt", "alpha"}


def test_a_page_without_a_link_sets_nothing():
    shared = share.from_query("", CONFIG)
    assert shared.given == () and shared.prompt is None
    assert shared.settings == APP_DEFAULTS.validated(CONFIG.max_new_tokens)


def test_a_link_without_settings_opens_at_the_pages_own():
    """A language or a question alone (a hand-written link, the language switch) means the
    page's settings, not Settings()'s library defaults (it opened at alpha 0.3, gamma 4 and
    sampling at T = 1); a link with any setting keeps Settings() as its base, as written."""
    for query in ("lang=zh", "prompt=Who+is+Sally+Ride%3F", "lang=en&preset=demo"):
        assert share.from_query(query, CONFIG).settings == APP_DEFAULTS.validated(256), query
    assert share.from_query("gamma=3", CONFIG).settings == replace(Settings(), gamma=3).validated()
    query = share.to_query(QUESTION, None, lang="zh")
    assert query == "prompt=Who+is+Buzz+Aldrin%3F&lang=zh"


def test_every_field_round_trips_with_non_default_values():
    settings = replace(Settings(), **NON_DEFAULT)
    query = share.to_query(QUESTION, settings, preset="demo", lang="en")
    shared = share.from_query(query, CONFIG)
    assert shared.settings == settings.validated()
    assert (shared.preset, shared.lang, shared.drafter, shared.verifier) == (
        "demo",
        "en",
        None,
        None,
    )
    written = parse_qs(query, keep_blank_values=True)
    assert written["stop"] == ["\n\n", "Q: & A="]  # a repeated key, each value escaped
    assert set(share.changed_fields(settings)) == set(NON_DEFAULT) - {"method"}


def test_explicit_links_carry_every_field_derived_from_settings():
    """Every Settings field (including any added after this test) is written and read back by
    its type, with no per-field code in share.py."""
    for settings in (Settings(), APP_DEFAULTS, replace(Settings(), **NON_DEFAULT)):
        query = share.to_query(None, settings, explicit=True)
        assert set(parse_qs(query, keep_blank_values=True)) == set(share.settings_types())
        assert share.from_query(query, CONFIG).settings == settings.validated()


def test_none_values_round_trip():
    settings = replace(Settings(), method="verifier", rule=None, seed=None, chat=True)
    query = share.to_query(None, settings)
    assert "seed=&" in query + "&" and "rule=&" in query + "&"
    shared = share.from_query(query, CONFIG)
    assert shared.settings == settings.validated()
    assert shared.settings.seed is None and shared.settings.rule is None


def test_chinese_prompt_and_stop_strings_round_trip():
    prompt = "巴兹·奥尔德林是谁？请用两句话回答。"
    settings = replace(APP_DEFAULTS, stop=("。", "\n"))
    query = share.to_query(prompt, settings, lang="zh")
    assert query.isascii()
    for params in (query, "?" + query, QueryParams(query), parse_qs(query)):
        shared = share.from_query(params, CONFIG)
        assert shared.prompt == prompt and shared.lang == "zh"
        assert shared.settings.stop == ("。", "\n")


def test_gradio_query_params_and_foreign_keys():
    """Gradio's request.query_params is the page's query (its client appends it to every
    request), with keys of its own: those are not reported."""
    params = QueryParams("prompt=hi&t=0.5&gamma=3&__sign=abc&view=api&__theme=dark")
    shared = share.from_query(params, CONFIG)
    assert shared.settings.temperature == 0.5 and shared.settings.gamma == 3
    assert shared.problems == [] and shared.given == ("prompt", "temperature", "gamma")


def test_unknown_keys_are_ignored_and_noted():
    shared = share.from_query("gamma=3&draft_polcy=fixed&utm_source=x", CONFIG)
    assert shared.settings.gamma == 3
    assert len(shared.problems) == 2 and "'draft_polcy'" in shared.problems[0]


@pytest.mark.parametrize(
    "query, error, words",
    [
        ("gamma=abc", SettingsError, ["gamma", "'abc'", "integer"]),
        ("seed=1.5", SettingsError, ["seed", "'1.5'", "integer"]),
        ("temperature=warm", SettingsError, ["temperature", "'warm'", "number"]),
        ("t=nan", SettingsError, ["temperature", "'nan'", "number"]),
        ("chat=maybe", SettingsError, ["chat", "'maybe'", "true or false"]),
        ("method=turbo", SettingsError, ["unknown method", "'turbo'"]),
        ("rule=token_v3&alpha=2", SettingsError, ["alpha for token_v3", "[-0.1, 1]", "2.0"]),
        ("rule=chow&alpha=1.5", SettingsError, ["alpha for chow", "1.5"]),
        ("gamma=3&gamma=4", SettingsError, ["'gamma'", "2 times"]),
        ("t=1&temperature=1", SettingsError, ["'temperature'", "2 times"]),
        ("prompt=a&prompt=b", SettingsError, ["'prompt'", "3 times"]),
        ("max_new_tokens=1000", SettingsError, ["max_new_tokens", "256", "1000"]),
        ("lang=fr", SettingsError, ["lang", "'fr'"]),
        ("preset=nope", ModelLoadError, ["unknown preset 'nope'"]),
        ("drafter=a/b&verifier=c/d", ModelLoadError, ["custom model ids are switched off"]),
    ],
)
def test_a_bad_value_rejects_the_whole_link(query, error, words):
    with pytest.raises(error) as e:
        share.from_query("prompt=hi&" + query, CONFIG)
    for word in words:
        assert word in str(e.value)


def test_custom_models_where_the_deployment_allows_them():
    config = replace(CONFIG, allow_custom_models=True)
    shared = share.from_query("drafter=org/small&verifier=org/big", config)
    assert (shared.drafter, shared.verifier) == ("org/small", "org/big")
    with pytest.raises(ModelLoadError, match="hub ids"):
        share.from_query("drafter=/etc/passwd&verifier=org/big", config)


def test_an_over_long_prompt_is_refused():
    config = replace(CONFIG, max_prompt_chars=100)
    assert share.from_query("prompt=" + "x" * 100, config).prompt == "x" * 100
    with pytest.raises(PromptError, match="101 characters.*at most 100"):
        share.from_query("prompt=" + "x" * 101, config)
    # blank prompts restore nothing rather than failing the link
    assert share.from_query("prompt=%20%20&gamma=3", config).prompt is None


def test_links_too_long_to_open_are_not_written():
    prompt = "长" * 1000  # 9 characters a letter once urlencoded
    with pytest.raises(PromptError, match="link would be 9,"):
        share.to_query(prompt, Settings())
    assert len(share.to_query("x" * 3000, Settings())) <= share.MAX_QUERY_CHARS


def test_to_query_refuses_settings_that_cannot_run():
    with pytest.raises(SettingsError, match="gamma"):
        share.to_query(QUESTION, replace(Settings(), gamma=0))


def test_permalink_keeps_the_base_address():
    link = share.permalink("https://x.hf.space/?__theme=dark&gamma=9#top", QUESTION, APP_DEFAULTS)
    parts = urlsplit(link)
    assert (parts.scheme, parts.netloc, parts.path, parts.fragment) == (
        "https",
        "x.hf.space",
        "/",
        "",
    )
    query = parse_qs(parts.query)
    assert query["__theme"] == ["dark"] and query["gamma"] == ["5"]  # the old gamma replaced
    shared = share.from_query(link, CONFIG)  # a whole URL reads too
    assert shared.settings == APP_DEFAULTS.validated() and shared.prompt == QUESTION
    assert (
        share.from_query("prompt=see http://x.org/?a=1", CONFIG).prompt == "see http://x.org/?a=1"
    )


# -- trace files -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_pair():
    return load_preset(None)


@pytest.fixture(scope="module")
def demo_trace(demo_pair):
    return engine.generate(demo_pair, QUESTION, APP_DEFAULTS)


@pytest.fixture(scope="module")
def demo_file(demo_trace) -> str:
    return demo_trace.to_json(indent=1)  # what the app's download writes (_write_exports)


def test_trace_round_trip_from_bytes_text_and_paths(demo_trace, demo_file, tmp_path):
    path = tmp_path / "trace.json"
    path.write_text(demo_file)
    for data in (demo_file, demo_file.encode(), path, str(path)):
        loaded = trace_file.load_trace(data)
        assert loaded == demo_trace
        assert loaded.to_json(indent=1) == demo_file


def test_every_method_writes_a_file_that_loads(llama_pair):
    for method in METHODS:
        trace = engine.generate(
            llama_pair, "hello", Settings(method=method, max_new_tokens=8, temperature=1.0)
        )
        assert trace_file.load_trace(trace.to_json()) == trace, method
    assert trace.prompt == "hello"  # the prompt's text, as given
    ids = engine.generate(llama_pair, trace.prompt_ids, Settings(max_new_tokens=2))
    assert ids.prompt is None  # token ids: no text to keep
    assert trace_file.load_trace(ids.to_json()).prompt is None


def _corrupt(path: str, value):
    """A function setting `path` (e.g. 'tokens.2.q') of the file's dict to `value`."""

    def apply(d: dict) -> None:
        *parents, last = path.split(".")
        for p in parents:
            d = d[int(p)] if isinstance(d, list) else d[p]
        if value is KeyError:
            del d[last]
        elif isinstance(d, list):
            d[int(last)] = value
        else:
            d[last] = value

    return apply


@pytest.mark.parametrize(
    "change, words",
    [
        (_corrupt("tokens.3.token_id", 999), ["tokens[3].token_id is 999", "new_token_ids[3]"]),
        (_corrupt("tokens.2.position", 7), ["tokens[2].position is 7", "expected 2"]),
        (_corrupt("rounds.0.emitted", 50), ["rounds[0].emitted is 50"]),
        (_corrupt("summary.new_tokens", 3), ["summary.new_tokens is 3"]),
        (_corrupt("summary.prompt_tokens", 1), ["summary.prompt_tokens is 1"]),
        (_corrupt("rounds.1.index", 5), ["rounds[1].index is 5", "expected 1"]),
        (_corrupt("tokens.0.round", 10**6), ["tokens[0].round is 1000000"]),
        (_corrupt("new_token_ids", [1]), ["new_token_ids has 1 ids"]),
        (_corrupt("tokens.1.q", 1.5), ["trace.tokens[1].q", "probability in [0, 1]", "1.5"]),
        (_corrupt("tokens.1.dtv", -0.2), ["trace.tokens[1].dtv", "probability"]),
        (_corrupt("tokens.4.top_p.0", [12, 3.0]), ["trace.tokens[4].top_p[0][1]", "probability"]),
        (_corrupt("tokens.4.top_q.1", [12]), ["trace.tokens[4].top_q[1]", "[id, probability]"]),
        (_corrupt("tokens.4.top_pi.0", ["a", 0.5]), ["tokens[4].top_pi[0][0]", "integer"]),
        (_corrupt("tokens.0.source", "magic"), ["tokens[0].source", "accepted", '"magic"']),
        (_corrupt("tokens.0.token_id", "12"), ["tokens[0].token_id", "integer", '"12"']),
        (_corrupt("tokens.0.token_id", True), ["tokens[0].token_id", "integer"]),
        (_corrupt("tokens.0.token_id", -1), ["tokens[0].token_id", ">= 0"]),
        (_corrupt("prompt_ids.0", 2.5), ["trace.prompt_ids[0]", "integer"]),
        (_corrupt("tokens.0.text", 5), ["tokens[0].text", "expected text"]),
        (_corrupt("tokens.1.defer", "no"), ["tokens[1].defer", "true or false"]),
        (_corrupt("tokens.0.text", KeyError), ["trace.tokens[0]", "missing field(s) text"]),
        (_corrupt("summary", KeyError), ["trace: missing field(s) summary"]),
        (_corrupt("summary", [1, 2]), ["trace.summary", "expected an object (Summary)"]),
        (_corrupt("rounds.0.drafter_s", "fast"), ["trace.rounds[0].drafter_s", "a number"]),
        (_corrupt("rounds", {}), ["trace.rounds", "expected a list"]),
        (_corrupt("extra", []), ["trace.extra", "expected an object"]),
        (_corrupt("summary.acceptance_rate", 2.0), ["summary.acceptance_rate", "probability"]),
    ],
)
def test_a_wrong_trace_names_the_field_and_index(demo_file, change, words):
    data = json.loads(demo_file)
    change(data)
    with pytest.raises(TraceFileError) as e:
        trace_file.load_trace(json.dumps(data))
    for word in words:
        assert word in str(e.value)


@pytest.mark.parametrize(
    "data, words",
    [
        (b"", ["empty"]),
        ("  \n ", ["empty"]),
        (b"\xff\xfe{}", ["not UTF-8"]),
        ("{not json", ["not JSON", "line 1"]),
        ('{"a": NaN}', ["NaN", "finite"]),
        ('{"a": 1e999}', ["1e999", "not finite"]),
        ("[1, 2, 3]", ["JSON list", "JSON object"]),
        ('"a trace"', ["JSON string"]),
        ("42", ["JSON number"]),
        ("[" * 100_000, ["nested too deeply"]),
        ('{"model": "gpt-4o", "choices": [{"text": "hi"}]}', ["not a speccascade trace"]),
        ("no/such/trace.json", ["no such trace file"]),
    ],
)
def test_files_that_are_not_traces(data, words):
    with pytest.raises(TraceFileError) as e:
        trace_file.load_trace(data)
    for word in words:
        assert word in str(e.value)


def test_too_large_files_are_refused_before_parsing(demo_file, tmp_path):
    limit = len(demo_file.encode()) - 1
    path = tmp_path / "big.json"
    path.write_text(demo_file)
    for data in (demo_file, demo_file.encode(), path):
        with pytest.raises(TraceFileError, match=r"MB; files up to .* MB are accepted"):
            trace_file.load_trace(data, max_bytes=limit)
    assert trace_file.load_trace(path, max_bytes=limit + 1).summary.new_tokens > 0
    with pytest.raises(TraceFileError, match="cannot read"):
        trace_file.load_trace(tmp_path)  # a folder


def test_the_size_limit_fits_a_4096_token_run(demo_trace, demo_file):
    """Extrapolated from the real demo-pair file (top-10 lists): 4096 tokens fit with room."""
    per_token = len(demo_file.encode()) / len(demo_trace.tokens)
    assert demo_trace.tokens[1].top_q and len(demo_trace.tokens[1].top_q) == 10
    assert per_token * 4096 * 1.5 < trace_file.MAX_TRACE_BYTES


def test_files_without_newer_optional_fields_still_load(demo_trace, demo_file):
    data = json.loads(demo_file)
    del data["extra"]
    del data["summary"]["notes"]
    for r in data["rounds"]:
        del r["draft_ids"]
    for t in data["tokens"]:
        for key in ("top_pi", "accept_prob", "draft_id"):
            del t[key]
    assert data["prompt"] == QUESTION  # the file keeps what was asked
    del data["prompt"]  # files from before it did
    loaded = trace_file.load_trace(json.dumps(data))
    assert loaded.prompt is None
    assert loaded.extra == {} and loaded.summary.notes == []
    assert all(r.draft_ids == [] for r in loaded.rounds)
    assert loaded.tokens[0].top_pi == [] and loaded.tokens[0].draft_id is None
    assert loaded.new_token_ids == demo_trace.new_token_ids


def test_fields_from_newer_versions_are_ignored(demo_trace, demo_file):
    data = json.loads(demo_file)
    for r in data["rounds"]:
        r["future_list"] = [{"token_id": 1, "q": 0.5, "kept": True}]
    data["summary"]["future_policy"] = "fixed"
    data["tokens"][0]["future"] = {"x": 1}
    assert trace_file.load_trace(json.dumps(data)) == demo_trace


def test_trace_from_data_takes_a_parsed_trace(demo_trace):
    """What the app's trace JSON viewer holds (trace.to_dict()) checks the same way."""
    assert trace_file.trace_from_data(demo_trace.to_dict()) == demo_trace
    bad = copy.deepcopy(demo_trace.to_dict())
    bad["tokens"][0]["p"] = 7
    with pytest.raises(TraceFileError, match=r"tokens\[0\]\.p"):
        trace_file.trace_from_data(bad)


# -- the CLI ---------------------------------------------------------------------------------


def test_cli_show_checks_and_summarises_a_trace_file(demo_trace, demo_file, tmp_path, capsys):
    path = tmp_path / "trace.json"
    path.write_text(demo_file)
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(demo_trace.text)
    s = demo_trace.summary
    assert "token_v3 (alpha=0.5)" in out and s.drafted > 0
    assert re.search(
        rf"acceptance rate\s+{s.accepted / s.drafted:.3f} of {s.drafted} drafts\n", out
    )
    assert re.search(
        rf"forward calls\s+drafter {s.drafter_calls}, verifier {s.verifier_calls}\n", out
    )

    data = json.loads(demo_file)
    data["tokens"][2]["position"] = 9
    path.write_text(json.dumps(data))
    assert main(["show", str(path)]) == 2
    assert "tokens[2].position is 9" in capsys.readouterr().err


def test_cli_generate_link_reproduces_the_settings(demo_pair, monkeypatch, capsys):
    monkeypatch.setattr("speccascade.cli.load_from_args", lambda args: demo_pair)  # loaded once
    args = ["generate", QUESTION, "--preset", "demo", "--temperature", "0"]
    args += ["--gamma", "3", "--max-new-tokens", "6", "--stop", "。", "--link"]
    assert main(args) == 0
    out = capsys.readouterr().out
    link = re.search(r"^http://127\.0\.0\.1:7860/\?\S+$", out, re.M).group(0)
    shared = share.from_query(link, CONFIG)
    assert shared.prompt == QUESTION and shared.preset == "demo"
    expected = Settings(temperature=0.0, gamma=3, max_new_tokens=6, stop=("。",))
    assert shared.settings == expected.validated()

"""The embedded demo pair: loads offline, shares a tokenizer, speaks the Q/A format, and the
verifier knows facts the drafter does not."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from speccascade import generate, load_pair
from speccascade.cli import main
from speccascade.demo_corpus import QA, clean_gloss, parse_line
from speccascade.evalsets import EXAMPLES, load_evalset
from speccascade.presets import DEMO_DRAFTER, DEMO_VERIFIER, PRESETS, load_preset
from speccascade.quality import first_clause_match, rouge_l, verifier_nll


@pytest.fixture(scope="module")
def demo(monkeypatch_module):
    monkeypatch_module.setenv("HF_HUB_OFFLINE", "1")
    return load_pair()


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_loads_offline_through_from_pretrained(demo):
    assert demo.drafter_id == DEMO_DRAFTER and demo.verifier_id == DEMO_VERIFIER
    assert demo.drafter.config.model_type == demo.verifier.config.model_type == "llama"
    for folder in (DEMO_DRAFTER, DEMO_VERIFIER):
        names = {p.name for p in Path(folder).iterdir()}
        assert {
            "config.json",
            "generation_config.json",
            "model.safetensors",
            "tokenizer.json",
            "tokenizer_config.json",
        } <= names


def test_sizes_and_disk(demo):
    d = sum(p.numel() for p in demo.drafter.parameters())
    v = sum(p.numel() for p in demo.verifier.parameters())
    assert v >= 10 * d
    disk = sum(
        f.stat().st_size for folder in (DEMO_DRAFTER, DEMO_VERIFIER) for f in Path(folder).iterdir()
    )
    assert disk <= 60 * 2**20


def test_tokenizers_agree_and_chat_template_is_the_qa_format(demo):
    from transformers import AutoTokenizer

    d = AutoTokenizer.from_pretrained(DEMO_DRAFTER)
    assert d.get_vocab() == demo.tokenizer.get_vocab()
    ids = demo.encode("Who is Buzz Aldrin?")
    assert demo.decode(ids, skip_special_tokens=False) == (
        "<|endoftext|>Q: Who is Buzz Aldrin?\nA:"
    )
    assert (
        demo.encode("Who is Buzz Aldrin?", chat=False)
        == demo.tokenizer("Who is Buzz Aldrin?")["input_ids"]
    )


def test_showcase_answers(demo):
    aldrin = generate(demo, "Who is Buzz Aldrin?", method="verifier", temperature=0).text
    assert "astronaut" in aldrin and "Apollo 11" in aldrin and "second" in aldrin
    armstrong = generate(demo, "Who is Neil Armstrong?", method="verifier", temperature=0).text
    assert "astronaut" in armstrong and "first" in armstrong
    for question in ("Who is Buzz Aldrin?", "Who is Neil Armstrong?"):
        # the drafter answers in the same shape but does not know the astronauts
        drafter = generate(demo, question, method="drafter", temperature=0).text
        assert len(drafter.split()) >= 3 and "Apollo" not in drafter and "Moon" not in drafter


def test_verifier_beats_drafter_on_a_fixed_slice(demo):
    items = [x for x in load_evalset() if x.kind != "fact"][:16]
    scores = {"drafter": [], "verifier": []}
    for item in items:
        for method in scores:
            tr = generate(demo, item.question, method=method, temperature=0, max_new_tokens=64)
            scores[method].append(rouge_l(tr.text, item.answer))
    d, v = statistics.fmean(scores["drafter"]), statistics.fmean(scores["verifier"])
    assert v >= 0.5 and v >= d + 0.2, (d, v)


def test_speculative_cascade_runs_with_only_a_prompt(capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["generate", "Who is Buzz Aldrin?"]) == 0
    out = capsys.readouterr().out
    assert "spec_cascade / token_v3" in out and "acceptance rate" in out


def test_evalset_and_examples():
    items = load_evalset()
    assert len(items) >= 200 and len({x.question for x in items}) == len(items)
    assert {"Who is Buzz Aldrin?", "Who is Neil Armstrong?"} <= {x.question for x in items}
    assert EXAMPLES[0] == "Who is Buzz Aldrin?"
    assert PRESETS["demo"].offline and not PRESETS["gemma2-2b-9b"].offline


def test_hub_preset_offline_is_a_clear_message(monkeypatch):
    from speccascade import ModelLoadError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match="unreachable"):
        load_preset("smollm2-135m-1.7b")


def test_quality_metrics(demo):
    assert rouge_l("the cat sat on the mat", "the cat sat on the mat") == 1.0
    assert rouge_l("a b c d", "a x c y") == pytest.approx(0.5)
    assert rouge_l("", "x") == 0.0
    assert first_clause_match("American astronaut; more", "american astronaut; other")
    assert not first_clause_match("American pilot; x", "American astronaut; x")
    ids = demo.encode("Who is Buzz Aldrin?")
    good = demo.tokenizer(" American astronaut and engineer", add_special_tokens=False)
    bad = demo.tokenizer(" a green vegetable soup", add_special_tokens=False)
    assert verifier_nll(demo, ids, good["input_ids"]) < verifier_nll(demo, ids, bad["input_ids"])


def test_wordnet_lines_become_questions():
    line = (
        "10823369 18 n 02 Armstrong 1 Neil_Armstrong 0 001 @i 09818022 n 0000 | United "
        "States astronaut; the first man to set foot on the Moon (July 20, 1969) (1930-)  "
    )
    assert parse_line(line, "noun") == QA(
        "Who is Neil Armstrong?",
        "United States astronaut; the first man to set foot on the Moon (July 20, 1969) (1930-)",
        "person",
    )
    noun = "02084071 05 n 01 dog 0 001 @ 02083346 n 0000 | a member of the genus Canis"
    assert parse_line(noun, "noun").question == "What is a dog?"
    assert clean_gloss('to move fast; "he ran home"; "run along"') == "to move fast"
    assert parse_line("  1 header line", "noun") is None

"""The SmolLM2 pair's held-out general-knowledge set (assets/data/general_heldout.jsonl) and
its study (scripts/bench_general.py): the set is WordNet's, rebuilt by a committed command,
kept out of the drafter's distillation, and judged by facts a restated question cannot meet;
the study's table says what its rows say."""

from __future__ import annotations

import collections
import json
import re
import sys
from pathlib import Path

import pandas as pd
import pytest

from speccascade.analysis import character
from speccascade.analysis.evalsets import GENERAL_HELDOUT, GENERAL_QA, Example, load_evalset
from speccascade.analysis.quality import states_facts
from speccascade.views.report import held_out_markdown

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"


def _rows() -> list[dict]:
    return [json.loads(x) for x in GENERAL_HELDOUT.read_text(encoding="utf-8").splitlines()]


def test_the_set_has_150_or_more_questions_of_three_kinds_each_with_a_key_fact():
    items = load_evalset(GENERAL_HELDOUT)
    kinds = collections.Counter(x.kind for x in items)
    assert len(items) >= 150 and set(kinds) == {"capital", "person", "word"}, kinds
    assert len({x.question for x in items}) == len(items)
    assert not {x.question for x in items} & {x.question for x in load_evalset(GENERAL_QA)}
    for x in items:
        assert x.facts and all(re.compile(f) for f in x.facts), x


def test_no_key_fact_is_met_by_restating_the_question():
    """A restatement ("The capital of Alaska is ...") must not count: WordNet names some
    capitals "capital of Alaska", which the builder leaves out of the facts."""
    for x in load_evalset(GENERAL_HELDOUT):
        assert not states_facts(x.question, x.facts), x.question
        restated = x.question.rstrip("?").replace("What is", "It is").replace("Who was", "")
        assert not states_facts(restated, x.facts), x.question


def test_a_right_answer_states_its_fact_and_a_wrong_one_does_not():
    items = {x.question: x for x in load_evalset(GENERAL_HELDOUT)}
    capital = next(x for x in items.values() if x.kind == "capital")
    name = capital.answer.split(" (")[0]  # the builder writes "Juneau (the state capital ...)"
    assert capital.correct(f"The capital is {name}.")
    assert not capital.correct("The capital is Springfield, a small town.")


def test_every_row_names_its_source():
    rows = _rows()
    assert {r["source"] for r in rows} == {"WordNet 3.0"}
    assert all(re.fullmatch(r"\d{8}", r["synset"]) for r in rows)
    assert (ROOT / "assets" / "data" / "WORDNET_LICENSE").read_text().count("Princeton") >= 2


@pytest.mark.needs("WORDNET")  # CI installs wordnet-base
def test_the_committed_set_is_what_its_command_builds():
    sys.path.insert(0, str(SCRIPTS))
    import build_general_heldout

    assert build_general_heldout.build() == _rows()


@pytest.mark.needs("WORDNET")
def test_no_question_was_taught_to_the_drafter():
    """Checked apart from the builder's own filter: no distillation prompt is a held-out
    question, names a held-out capital or person, or asks what a held-out word means."""
    sys.path.insert(0, str(SCRIPTS))
    from distill_smollm2_drafter import Plan, prompts

    train, held_eval, _ = prompts(0, per_template=Plan.general_per_template)
    text = "\n".join(train + held_eval).lower()
    for r in _rows():
        assert r["question"].lower() not in text
        if r["kind"] in ("capital", "person"):
            for name in r["names"]:
                assert not re.search(rf"\b{re.escape(name.lower())}\b", text), (r["question"], name)
        else:
            word = re.escape(r["subject"].lower())
            assert not re.search(rf"what (is|are) (an? |the )?{word}s?\?", text), r["question"]


def test_the_held_out_study_runs_transformers_generate_beside_the_engine(llama_pair):
    """hf_generate, measured in the same interleaved rounds, writes the verifier's own greedy
    tokens; so does lossless SD."""
    items = [
        Example("What is a cat?", "an animal", "word", facts=(r"\banimal\b",), level="general"),
        Example("Who was Kant?", "a philosopher", "person", facts=(r"\bphil",), level="general"),
    ]
    settings = character.APP_DEFAULTS.__class__(
        method="spec_cascade", rule="token_v3", alpha=0.5, gamma=3, temperature=0.0,
        max_new_tokens=6,
    )  # fmt: skip
    methods = ("verifier", character.HF_GENERATE, "speculative", "spec_cascade")
    raw = character.measure(llama_pair, items, settings, repeats=2, methods=methods)
    assert len(raw) == 4 * 2 and all(len(w) == 2 for w in raw.walls)
    by = {(r.question, r.method): r for r in raw.itertuples()}
    for x in items:
        verifier = by[(x.question, "verifier")].token_ids
        assert by[(x.question, character.HF_GENERATE)].token_ids == verifier
        assert by[(x.question, "speculative")].token_ids == verifier
    with pytest.raises(ValueError, match="greedy"):
        sampled = character.APP_DEFAULTS.__class__(temperature=1.0, max_new_tokens=2)
        character.measure(llama_pair, items, sampled, repeats=1, methods=methods)


def _synthetic() -> tuple[pd.DataFrame, dict]:
    """Four questions: the verifier right on 3, the cascade on 2 (it loses one), SD the
    verifier's tokens everywhere; times chosen so that each ratio is known."""
    rows = []
    walls = {"verifier": 1.0, "hf_generate": 1.25, "speculative": 0.5, "spec_cascade": 0.4}
    right = {"verifier": [1, 1, 1, 0], "hf_generate": [1, 1, 1, 0], "speculative": [1, 1, 1, 0],
             "spec_cascade": [1, 1, 0, 0]}  # fmt: skip
    for i in range(4):
        for m, w in walls.items():
            tokens = [i, 1] if m != "spec_cascade" or i != 2 else [i, 9]
            rows.append({
                "question": f"q{i}", "level": "general", "lang": "en", "method": m,
                "token_ids": tokens, "text": "", "tokens": 2, "walls": [w, w * 1.1, w * 0.9],
                "drafted": 4 if m in ("speculative", "spec_cascade") else 0,
                "accepted": {"speculative": 2, "spec_cascade": 3}.get(m, 0),
                "kept_share": 0.0, "verifier_calls": 1, "deferred": False, "confidence": None,
                "correct": bool(right[m][i]),
            })  # fmt: skip
    raw = pd.DataFrame(rows)
    raw["wall_s"] = [sorted(w)[1] for w in raw.walls]
    return raw, {"q0": "capital", "q1": "capital", "q2": "word", "q3": "person"}


def test_the_held_out_summary_counts_what_the_rows_hold():
    raw, kinds = _synthetic()
    s = character.held_out_summary(raw, kinds)
    assert s["groups"]["all"]["n"] == 4 and s["groups"]["capital"]["n"] == 2
    assert s["groups"]["all"]["spec_cascade"]["speedup"][0] == pytest.approx(2.5)
    assert s["groups"]["all"]["hf_generate"]["speedup"][0] == pytest.approx(0.8)
    assert s["groups"]["all"]["verifier"]["accuracy"][0] == pytest.approx(0.75)
    assert s["groups"]["word"]["spec_cascade"]["accuracy"][0] == 0.0
    diff, lo, hi = s["vs_verifier"]["spec_cascade"]
    assert diff == pytest.approx(-0.25) and lo < -0.25 < hi
    assert s["same_tokens_as_verifier"]["speculative"] == [4, 4]
    assert s["same_tokens_as_verifier"]["spec_cascade"] == [3, 4]
    checks = {c["name"]: c for c in s["checks"]}
    assert checks["cascade accuracy - verifier's"]["verdict"] == "missed"
    assert checks["cascade time / SD's"]["value"] == pytest.approx(0.8)
    assert checks["cascade time / SD's"]["verdict"] == "met"


def test_the_held_out_table_shows_every_approach_with_its_intervals():
    raw, kinds = _synthetic()
    meta = {"machine": {"cpu": "Test CPU", "threads": 2, "torch": "x"}}
    text = held_out_markdown(character.held_out_summary(raw, kinds), meta, "docs/x/")
    assert "Test CPU, 2 threads" in text and "capital (n=2): key facts" in text
    line = next(x for x in text.splitlines() if x.startswith("| transformers'"))
    assert "0.80x [" in line and "75.0% [" in line and "4 of 4" in line
    line = next(x for x in text.splitlines() if x.startswith("| speculative cascade"))
    assert "2.50x [" in line and "-25.0 [" in line and "3 of 4" in line
    assert "| cascade accuracy - verifier's | -0.250 [" in text

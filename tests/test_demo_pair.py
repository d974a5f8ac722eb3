"""The embedded demo pair: loads offline, shares a tokenizer, speaks the Q/A format, and tells
the method's story: on an easy question the cascade keeps the drafter's short, correct answer;
on a hard one the rule hands the facts to the verifier. Greedy, no timing."""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

import pytest

from speccascade import generate, load_pair
from speccascade.analysis.bench import verifier_token
from speccascade.analysis.evalsets import (
    EXAMPLES,
    EXAMPLES_ZH,
    canonical_question,
    find_item,
    load_evalset,
    story_question,
)
from speccascade.cli import main
from speccascade.core.engine import APP_DEFAULTS
from speccascade.models.presets import DEMO_DRAFTER, DEMO_VERIFIER, PRESETS, load_preset

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from demo_corpus import QA, clean_gloss, key_facts, parse_line, short_answer  # noqa: E402

from speccascade.analysis.quality import (
    fact_token_mask,
    first_clause_match,
    rouge_l,
    states_facts,
    verifier_nll,
)


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
    def body(model) -> int:  # its layers: the parameters but the (tied) embeddings
        embeddings = model.get_input_embeddings().weight.numel()
        return sum(p.numel() for p in model.parameters()) - embeddings

    # the drafter shares the verifier's width and vocabulary (it is distilled from it, and the
    # output layer is the same size in both), so the difference is in its layers
    assert body(demo.verifier) >= 8 * body(demo.drafter)
    # 18 layers against 2: the drafter needs its second layer to decline out-of-domain
    # questions (one layer declined 28% of them, two 94%; TRAINING.md)
    assert demo.verifier.config.num_hidden_layers >= 9 * demo.drafter.config.num_hidden_layers
    # common words are single tokens, so the token strip reads as words
    for word in (" astronaut", " Apollo", " Moon", " physicist"):
        assert len(demo.tokenizer(word, add_special_tokens=False)["input_ids"]) == 1, word
    disk = sum(
        f.stat().st_size for folder in (DEMO_DRAFTER, DEMO_VERIFIER) for f in Path(folder).iterdir()
    )
    assert disk <= 60 * 2**20


def test_tokenizers_agree_and_chat_template_is_the_qa_format(demo):
    from transformers import AutoTokenizer

    d = AutoTokenizer.from_pretrained(DEMO_DRAFTER)
    assert d.get_vocab() == demo.tokenizer.get_vocab()
    ids = demo.encode("Who is Buzz Aldrin?")
    # the template reads a typed question as canonical_question does: the name asked about
    assert demo.decode(ids, skip_special_tokens=False) == "<|endoftext|>Q: buzz aldrin?\nA:"
    for typed in [q for q, _ in TYPED] + OUT_OF_DOMAIN + ["Can you tell me who Sally Ride is?"]:
        text = demo.decode(demo.encode(typed), skip_special_tokens=False)
        assert text == f"<|endoftext|>Q: {canonical_question(typed)}\nA:", typed
    assert (
        demo.encode("Who is Buzz Aldrin?", chat=False)
        == demo.tokenizer("Who is Buzz Aldrin?")["input_ids"]
    )


def _defaults(**kw) -> dict:
    base = {k: getattr(APP_DEFAULTS, k) for k in ("method", "rule", "alpha", "gamma")}
    return base | {"temperature": 0.0, "max_new_tokens": 64} | kw


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_easy_question_keeps_the_drafters_short_correct_answer(demo, lang):
    """The story's easy question: the cascade keeps the drafter's own short, correct answer;
    lossless SD writes the verifier's own (detailed) one, so it pays for more verifier calls
    and more tokens."""
    question = story_question("easy", lang)
    item = find_item(question)
    cascade = generate(demo, question, **_defaults())
    kept = sum(t.source == "accepted" for t in cascade.tokens) / cascade.summary.new_tokens
    assert states_facts(cascade.text, item.facts), cascade.text
    assert kept >= 0.7, (kept, cascade.text)
    drafter = generate(demo, question, method="drafter", temperature=0, max_new_tokens=64)
    assert cascade.text == drafter.text  # every token the drafter's
    sd = generate(demo, question, **_defaults(method="speculative", rule=None, alpha=None))
    verifier = generate(demo, question, method="verifier", temperature=0, max_new_tokens=64)
    assert sd.new_token_ids == verifier.new_token_ids != cascade.new_token_ids
    assert sd.summary.verifier_calls > cascade.summary.verifier_calls
    assert states_facts(verifier.text, item.facts)


def test_hard_question_defers_the_facts_to_the_verifier(demo):
    """The story's hard question: the drafter alone misses the facts and is unsure, so the
    sequence cascade throws its answer away; the speculative cascade takes over where the
    drafter goes wrong (the verifier writes some of the facts' tokens, and once it has, the
    drafter, distilled from it, follows) and states them."""
    question = story_question("hard")
    item = find_item(question)
    drafter = generate(demo, question, method="drafter", temperature=0, max_new_tokens=64)
    assert not states_facts(drafter.text, item.facts), drafter.text
    seq = generate(demo, question, method="seq_cascade", temperature=0, max_new_tokens=64)
    assert seq.extra["deferred"] and states_facts(seq.text, item.facts), seq.text
    cascade = generate(demo, question, **_defaults())
    assert states_facts(cascade.text, item.facts), cascade.text
    mask = fact_token_mask([t.text for t in cascade.tokens], item.facts)
    facts = [t for t, m in zip(cascade.tokens, mask) if m]
    assert facts and any(map(verifier_token, facts))


def _first(level: str, n: int = 8) -> list:
    """The eval set's first n questions of a level, English and Chinese (the file is shuffled
    once, when the pair is built), not the story's showcase subjects."""
    from speccascade.analysis.evalsets import load_evalset

    showcase = {"Who is Buzz Aldrin?", "Who is Sally Ride?", "布兹·奥尔德林是谁？"}
    items = [x for x in load_evalset() if x.level == level and x.question not in showcase]
    return items[:n]


def test_sd_accepts_the_drafters_words_on_easy_questions(demo):
    """The drafter is distilled from the verifier: on easy questions it writes the verifier's
    own words, so lossless SD accepts most of its drafts (issue 39: >= 0.55 on the eval set)."""
    drafted = accepted = 0
    for item in _first("easy"):
        sd = generate(demo, item.question, **_defaults(method="speculative", rule=None, alpha=None))
        drafted, accepted = drafted + sd.summary.drafted, accepted + sd.summary.accepted
    assert accepted / drafted >= 0.55, (accepted, drafted)


def test_the_sequence_cascade_keeps_easy_answers_and_defers_hard_ones(demo):
    """Chow on the drafter's whole answer, at its default bar: the drafter is sure of the easy
    answers (kept) and unsure of the hard ones, whose facts it does not know (thrown away, and
    the verifier starts over: the sequential cascade's cost)."""

    def deferred(item) -> bool:
        tr = generate(demo, item.question, method="seq_cascade", temperature=0, max_new_tokens=64)
        return tr.extra["deferred"]

    assert sum(map(deferred, _first("easy"))) <= 1
    assert sum(map(deferred, _first("hard"))) >= 6


def test_key_fact_accuracy_on_a_fixed_slice(demo):
    items = load_evalset()[:40]
    correct = {(m, lv): [] for m in ("drafter", "verifier") for lv in ("easy", "hard")}
    for item in items:
        for method in ("drafter", "verifier"):
            tr = generate(demo, item.question, method=method, temperature=0, max_new_tokens=64)
            correct[method, item.level].append(item.correct(tr.text))
    acc = {k: statistics.fmean(v) for k, v in correct.items()}
    assert min(len(v) for v in correct.values()) >= 10
    assert acc["verifier", "hard"] >= acc["drafter", "hard"] + 0.5, acc
    assert acc["drafter", "easy"] >= 0.6 and acc["drafter", "hard"] <= 0.2, acc


# Questions as people type them (issue 20's own list and more): each must give its facts.
TYPED = [
    ("who is buzz aldrin?", "Who is Buzz Aldrin?"),
    ("WHO IS BUZZ ALDRIN?", "Who is Buzz Aldrin?"),
    ("  who's   buzz aldrin", "Who is Buzz Aldrin?"),
    ("Tell me about Buzz Aldrin.", "Who is Buzz Aldrin?"),
    ("who was albert einstein", "Who is Albert Einstein?"),
    ("What is Albert Einstein known for?", "Who is Albert Einstein?"),
    ("Describe Isaac Newton", "Who is Isaac Newton?"),
    ("what's apollo 11??", "What is Apollo 11?"),
    ("布兹·奥尔德林是谁?", "布兹·奥尔德林是谁？"),
    ("布兹·奥尔德林是谁", "布兹·奥尔德林是谁？"),
    ("介绍一下布兹·奥尔德林。", "布兹·奥尔德林是谁？"),
    ("谁是阿尔伯特·爱因斯坦?", "阿尔伯特·爱因斯坦是谁？"),
    ("who is michael collins", "Who is Michael Collins?"),
]
# Outside the pair's domain: general knowledge, instructions, other languages.
OUT_OF_DOMAIN = [
    "What is the capital of France?",
    "Who wrote Hamlet?",
    "Explain photosynthesis.",
    "How do I bake bread?",
    "Write a poem about the sea.",
    "法国的首都是哪里？",
    "怎么做蛋糕？",
]


@pytest.mark.parametrize(("typed", "asks"), TYPED)
def test_typed_questions_give_the_same_facts(demo, typed, asks):
    """However a question is typed (case, ？ or ?, spaces, "who was", "tell me about",
    介绍一下), the cascade at the app's defaults states the facts of the eval item it asks."""
    item = find_item(asks)
    cascade = generate(demo, typed, **_defaults())
    assert states_facts(cascade.text, item.facts), (typed, cascade.text)


@pytest.mark.parametrize("question", OUT_OF_DOMAIN)
def test_out_of_domain_questions_get_the_honest_answer(demo, question):
    """A question the pair was not built for is answered with its decline line (which the
    page recognises and follows with the offer of the SmolLM2 pair), by the verifier and by
    the cascade; never a confident gloss of something else."""
    preset = PRESETS["demo"]
    for kw in (dict(method="verifier", temperature=0, max_new_tokens=48), _defaults()):
        tr = generate(demo, question, **kw)
        assert preset.declined(tr.text), (question, kw["method"], tr.text)


@pytest.mark.parametrize(
    "question", ["Who is Buzz Aldrin?", "布兹·奥尔德林是谁？", "布兹·奥尔德林是谁?"]
)
def test_the_seeds_example_shows_sd_against_the_cascade(demo, question):
    """The seed's own example at the app's defaults: the verifier's greedy answer is its
    detailed one, which lossless SD must write, rejecting the drafter's own first token; the
    cascade keeps at least 70% of the drafter's tokens, states the key facts and calls the
    verifier less often."""
    item = find_item(question)
    verifier = generate(demo, question, method="verifier", temperature=0, max_new_tokens=64)
    assert verifier.text.strip().startswith(item.answer[:12]), verifier.text
    sd = generate(demo, question, **_defaults(method="speculative", rule=None, alpha=None))
    cascade = generate(demo, question, **_defaults())
    share = lambda tr: sum(t.source == "accepted" for t in tr.tokens) / tr.summary.new_tokens  # noqa: E731
    assert sd.tokens[0].source != "accepted"  # the drafter's good first token, rejected
    assert share(cascade) >= 0.7, share(cascade)
    assert states_facts(cascade.text, item.facts), cascade.text
    assert cascade.summary.verifier_calls < sd.summary.verifier_calls


def test_the_pair_knows_what_it_was_taught_and_nothing_else():
    """The taught list (evalsets.taught) says yes to every eval question, alias and typed
    variant (no made-up-answer warning under a right answer), and no to every out-of-domain
    question, to the questions shaped like known ones whose subject the pair never saw
    ("What is the tallest mountain?": it answered "the Grand Canyon") and to the WordNet
    words it saw only for fluency ("What is a mountain?": "the world's longest river")."""
    import json

    from speccascade.analysis.evalsets import DATA, DEMO_TAUGHT, knows, subject_key, taught

    assert PRESETS["demo"].taught == DEMO_TAUGHT
    rows = lambda name: [json.loads(x) for x in (DATA / name).read_text().splitlines() if x]  # noqa: E731
    items = load_evalset()
    assert all(taught(x.question) == (x,) and all(knows(a) for a in x.aliases) for x in items)
    assert all(knows(r["question"]) for r in rows("variants.jsonl"))
    assert all(knows(q) for q in EXAMPLES + EXAMPLES_ZH)
    assert not any(knows(r["question"]) for r in rows("out_of_domain.jsonl"))
    for typed in ("What is the tallest mountain?", "Who is the president of France?", "hi"):
        assert not knows(typed), typed
    for word in ("What is a mountain?", "mountain", "What is a dog?", "What is a tradition?"):
        assert not knows(word), word
    # read as the pair reads questions: any phrasing, case, article, bare name; a surname
    # that one taught person has is that person, one that two have is neither
    asks = lambda q: [x.question for x in taught(q)]  # noqa: E731
    assert asks("tell me about   PARIS") == ["What is Paris?"]
    assert asks("Buzz Aldrin") == ["Who is Buzz Aldrin?"]
    assert asks("who is einstein") == ["Who is Albert Einstein?"]
    assert asks("爱因斯坦是谁?") == ["阿尔伯特·爱因斯坦是谁？"]
    assert sorted(asks("Who is Armstrong?")) == [
        "Who is Louis Armstrong?",
        "Who is Neil Armstrong?",
    ]
    assert subject_key("What is a mountain?") == subject_key("mountain") == "mountain"
    # scoring: a taught question beyond the eval set is found only for the pair taught it
    extra = next(x for x in load_evalset(DEMO_TAUGHT) if find_item(x.question) is None)
    assert find_item(extra.question.lower(), taught_by=DEMO_TAUGHT) == extra


@pytest.mark.needs("WORDNET")  # CI installs wordnet-base
def test_the_shipped_taught_list_is_what_the_corpus_builds(tmp_path):
    """The taught list ships beside the pair; rebuilt from WordNet and the project's facts
    (scripts/demo_corpus.py, seed 0, as the pair was trained), it is the same file."""
    from demo_corpus import build_corpus, taught_items, write_taught

    from speccascade.analysis.evalsets import DEMO_TAUGHT

    built = tmp_path / DEMO_TAUGHT.name
    write_taught(taught_items(build_corpus(seed=0)), built)
    assert built.read_bytes() == DEMO_TAUGHT.read_bytes()


def test_speculative_cascade_runs_with_only_a_prompt(demo, capsys, monkeypatch):
    """`speccascade generate PROMPT` runs the library's default settings (the speculative
    cascade, TokenV3 at its default alpha) on the demo pair: the same answer and counts as
    the library's own run."""
    from speccascade import Settings

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["generate", "Who is Buzz Aldrin?"]) == 0
    out = capsys.readouterr().out
    library = generate(demo, "Who is Buzz Aldrin?", Settings())
    s = library.summary
    assert (s.method, s.rule) == ("spec_cascade", "token_v3") and s.drafted > 0
    assert out.startswith(library.text)
    assert f"spec_cascade / token_v3 (alpha={s.alpha:g})" in out
    assert re.search(
        rf"forward calls\s+drafter {s.drafter_calls}, verifier {s.verifier_calls}\n", out
    )
    assert re.search(
        rf"acceptance rate\s+{s.accepted / s.drafted:.3f} of {s.drafted} drafts\n", out
    )


def test_evalset_and_examples():
    items = load_evalset()
    assert len(items) >= 200 and len({x.question for x in items}) == len(items)
    questions = {x.question for x in items}
    assert {"Who is Buzz Aldrin?", "Who is Neil Armstrong?"} <= questions
    assert set(EXAMPLES) | set(EXAMPLES_ZH) <= questions  # every example can be scored
    assert EXAMPLES[0] == "Who is Buzz Aldrin?" and EXAMPLES_ZH[0] == "布兹·奥尔德林是谁？"
    assert "Who is Sally Ride?" in EXAMPLES
    assert {x.level for x in items} == {"easy", "hard"} and {x.lang for x in items} == {"en", "zh"}
    assert all(x.facts and x.correct(x.answer) for x in items)  # references state their facts
    assert all(x.correct(x.short) for x in items if x.short)
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
    # Chinese is written without spaces: one token per character (a whole answer was one
    # "word", so a cascade's answer sharing most characters with the verifier's scored 0)
    assert rouge_l("美国宇航员", "美国的宇航员") == pytest.approx(2 * 5 / 11)
    assert rouge_l("奥尔德林 Apollo 11", "奥尔德林, apollo 11!") == 1.0
    assert first_clause_match("American astronaut; more", "american astronaut; other")
    assert not first_clause_match("American pilot; x", "American astronaut; x")
    ids = demo.encode("Who is Buzz Aldrin?")
    assert states_facts("He was an astronaut on Apollo 11", ["astronaut", r"Apollo 11"])
    assert not states_facts("He was an astronaut", ["astronaut", r"Apollo 11"])
    assert not states_facts("anything", [])
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


def test_short_answers_and_key_facts():
    from collections import Counter

    gloss = (
        "English mathematician and physicist; remembered for developing the calculus (1642-1727)"
    )
    assert short_answer("Isaac Newton", "person", gloss) == (
        "Isaac Newton was an English mathematician and physicist (1642-1727)."
    )
    assert short_answer("Paris", "place", "the capital and largest city of France") == (
        "Paris is the capital and largest city of France."
    )
    freq = Counter({"english": 500, "mathematician": 40, "physicist": 30})
    facts = key_facts("Isaac Newton", "English mathematician and physicist", "1642-1727", freq)
    assert facts == (r"\bphysicist\b", r"\bmathematician\b", r"\b1642\b")
    assert fact_token_mask([" an", " astro", "naut", " on"], ["astronaut"]) == [
        False,
        True,
        True,
        False,
    ]


def test_the_doubt_on_an_answer_follows_what_the_pair_was_taught():
    """analysis.verdict.doubt, without a model: the pair's decline; an answer about something
    it was never taught; a finished answer missing what it was taught (not a cut-off one); a
    right answer, and a pair with no taught list, get none."""
    from speccascade.analysis.verdict import doubt

    demo = PRESETS["demo"]
    assert doubt(demo, "What is the capital of France?", " " + demo.declines[0]).kind == "declined"
    assert doubt(demo, "What is a dog?", " a small eceptic acid").kind == "unknown"
    wrong = doubt(demo, "Who is Einstein?", " a Jewish god; the sun in its life-giving aspect")
    assert wrong.kind == "wrong" and [x.question for x in wrong.taught] == [
        "Who is Albert Einstein?"
    ]
    assert doubt(demo, "Who is Einstein?", " a Jewish god", stop_reason="max_new_tokens") is None
    right = " Albert Einstein was a physicist born in Germany (1879-1955)."
    assert doubt(demo, "who is einstein", right) is None
    assert doubt(PRESETS["smollm2-135m-offline"], "Who is Einstein?", " a Jewish god") is None

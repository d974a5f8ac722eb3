"""The app as a Hugging Face Space runs it, checked without a network (CI runs this in a fresh
venv made from requirements.txt alone, from the checkout, as a Space runs app.py):

    python scripts/space_check.py

1. Tiny stand-ins are built here and laid out in a temporary hub cache as the hub models of
   the pair the demo pair's offer leads to (HF_HOME, HF_HUB_OFFLINE=1: what a Space with the
   hub has after the first download).
2. The app builds and serves its page; the page carries no install command.
3. An out-of-domain question through the Run handler gets its offer, with a button to that
   hub pair and no install command; the button's switch runs the question on it.

Exits 1 with the reason on any failure."""

from __future__ import annotations

import os
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "What is the capital of France?"
INSTALL_WORDS = ("pip install", "--no-deps", "setup.sh")


def fail(message: str) -> None:
    print(f"space check: FAILED: {message}", file=sys.stderr)
    raise SystemExit(1)


def seed_hub_cache(preset, folder: Path, cache: Path | None = None) -> list[str]:
    """Lay out a tiny random stand-in for each hub model of `preset` in the hub cache (a
    Llama of 2 small layers with SmolLM2's own tokenizer, which ships with the distilled
    drafter, so it pairs with that drafter too); returns the ids laid out. What the stand-ins
    write does not matter: they load by their hub ids and run."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from speccascade.models import hub
    from speccascade.models.assets import SMOLLM2_DRAFTER

    tokenizer = AutoTokenizer.from_pretrained(SMOLLM2_DRAFTER)
    ids = [m for m in dict.fromkeys((preset.drafter, preset.verifier)) if not Path(m).is_dir()]
    for i, model_id in enumerate(ids):
        torch.manual_seed(i)
        config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                             num_hidden_layers=2, num_attention_heads=2,
                             max_position_embeddings=1024, bos_token_id=tokenizer.bos_token_id,
                             eos_token_id=tokenizer.eos_token_id, tie_word_embeddings=True)  # fmt: skip
        path = folder / model_id.replace("/", "--")
        LlamaForCausalLM(config).save_pretrained(path)
        tokenizer.save_pretrained(path)
        hub.lay_out(path, model_id, cache)
    return ids


def page_serves(demo) -> str:
    """Launch the built app on a free loopback port and read its page."""
    from speccascade.app.context import LAUNCH

    demo.launch(**LAUNCH, prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    try:
        with urllib.request.urlopen(demo.local_url, timeout=60) as response:
            return response.read().decode("utf-8", "replace")
    finally:
        demo.close()


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="space-check-"))
    os.environ["HF_HOME"] = str(home / "hf")  # before huggingface_hub reads it at import
    os.environ["HF_HUB_OFFLINE"] = "1"
    sys.path.insert(0, str(ROOT))  # a Space runs app.py from the checkout: no install

    import gradio as gr

    from speccascade.app.context import AppContext
    from speccascade.app.page import build_demo, layout
    from speccascade.app.serving import PairCache, ServeConfig
    from speccascade.app.tabs.run import run, switch_offer, take_switch
    from speccascade.core.engine import APP_DEFAULTS
    from speccascade.models.presets import PRESETS

    target = PRESETS[PRESETS["demo"].switch_to[0]]
    ids = seed_hub_cache(target, home / "built")
    print(f"fake hub cache: {', '.join(ids)} under {home / 'hf'}")

    config = ServeConfig.from_env()
    html = page_serves(build_demo(config))
    if any(w in html for w in INSTALL_WORDS):
        fail("the page carries an install command")
    print(f"the app builds and serves its page ({len(html):,} characters)")

    ctx = AppContext(config, PairCache(config))
    with gr.Blocks():
        page = layout(config)
    s = APP_DEFAULTS

    def ask(preset: str, question: str):
        outs = list(run(ctx, page, question, preset, "", "", s.method, s.rule, s.alpha,
                        s.gamma, s.temperature, 32, s.seed))  # fmt: skip
        merged = {k: v for out in outs for k, v in out.items()}
        if merged.get(page.trace) is None:
            fail(f"no run on {preset}: {merged.get(page.status)}")
        return merged[page.trace]

    trace = ask("demo", QUESTION)
    offer = switch_offer(page, trace, "demo", "en", QUESTION)
    note = offer[page.switch_note]
    print(f"the demo pair answered {trace.text.strip()[:80]!r}; the offer reads: {note}")
    if not offer[page.switch_box]["visible"] or not offer[page.switch_btn]["visible"]:
        fail("an out-of-domain question got no offer with a button")
    if any(w in note for w in INSTALL_WORDS):
        fail("the offer shows an install command")
    moved = take_switch(page, "demo", "en", QUESTION)
    if moved[page.preset] != target.name:
        fail(f"the switch went to {moved[page.preset]!r}, not the hub pair {target.name!r}")
    answer = ask(moved[page.preset], moved[page.prompt])
    print(f"the switch ran the question on {target.name}: {answer.summary.new_tokens} tokens")
    print("space check: ok")


if __name__ == "__main__":
    main()

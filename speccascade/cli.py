"""`speccascade` command line: generate (and the commands later issues add)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .engine import METHODS, Settings
from .errors import SpecCascadeError
from .rules import RULES


def _add_model_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("models")
    g.add_argument("--preset", default=None, help="named pair (default: the embedded demo pair)")
    g.add_argument("--drafter", help="drafter folder or hub id")
    g.add_argument("--verifier", help="verifier folder or hub id")
    g.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1, ...")
    g.add_argument("--dtype", default="auto", help="auto, float32, bfloat16, float16")


def _add_decoding_args(p: argparse.ArgumentParser) -> None:
    d = Settings()
    g = p.add_argument_group("decoding")
    g.add_argument("--method", default=d.method, choices=METHODS)
    g.add_argument("--rule", default=d.rule, help=f"deferral rule: {', '.join(RULES)}")
    g.add_argument("--alpha", type=float, default=None, help="rule threshold (default: rule's)")
    g.add_argument("--gamma", type=int, default=d.gamma, help="draft window")
    g.add_argument("--temperature", type=float, default=d.temperature, help="0 = greedy")
    g.add_argument("--top-p", type=float, default=d.top_p)
    g.add_argument("--top-k", type=int, default=d.top_k)
    g.add_argument("--max-new-tokens", type=int, default=d.max_new_tokens)
    g.add_argument("--seed", type=int, default=d.seed)
    g.add_argument("--stop", action="append", default=None, help="stop string (repeatable)")
    g.add_argument("--no-chat", action="store_true", help="do not apply the chat template")


def load_from_args(args: argparse.Namespace):
    """The pair named by --preset or --drafter/--verifier (neither: the demo pair)."""
    from .models import load_pair
    from .presets import load_preset

    if args.drafter or args.verifier:
        return load_pair(args.drafter, args.verifier, device=args.device, dtype=args.dtype)
    return load_preset(args.preset, device=args.device, dtype=args.dtype)


def decoding_kwargs(args: argparse.Namespace) -> dict:
    return dict(
        method=args.method,
        rule=args.rule,
        alpha=args.alpha,
        gamma=args.gamma,
        temperature=args.temperature,
        top_p=args.top_p,
        top_k=args.top_k,
        max_new_tokens=args.max_new_tokens,
        seed=args.seed,
        stop=args.stop,
        chat=False if args.no_chat else None,
    )


def _format_summary(s) -> str:
    rows = [
        ("method", s.method + (f" / {s.rule} (alpha={s.alpha:g})" if s.alpha is not None else "")),
        ("tokens", f"{s.new_tokens} new after {s.prompt_tokens} prompt tokens ({s.stop_reason})"),
        ("wall time", f"{s.wall_s:.3f} s ({s.tokens_per_s:.1f} tokens/s)"),
        ("forward calls", f"drafter {s.drafter_calls}, verifier {s.verifier_calls}"),
        ("verifier calls/token", f"{s.verifier_calls_per_token:.3f}"),
    ]
    if s.acceptance_rate is not None:
        rows.append(("acceptance rate", f"{s.acceptance_rate:.3f} of {s.drafted} drafts"))
        rows.append(("mean accepted/round", f"{s.mean_accepted_length:.2f}"))
    if s.ideal_speedup is not None:
        rows.append(("ideal speed-up", f"{s.ideal_speedup:.2f}x (cost ratio {s.cost_ratio:.3f})"))
    rows += [("note", n) for n in s.notes]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def cmd_generate(args: argparse.Namespace) -> int:
    from .engine import RoundEvent, stream

    prompt = args.prompt_opt or args.prompt
    if prompt is None:
        raise SpecCascadeError('give a prompt: speccascade generate "Who is Buzz Aldrin?"')
    pair = load_from_args(args)
    trace = None
    for event in stream(pair, prompt, **decoding_kwargs(args)):
        if isinstance(event, RoundEvent):
            if not args.json:
                print("".join(t.text for t in event.tokens), end="", flush=True)
        else:
            trace = event
    if args.json:
        print(trace.to_json(indent=2))
    else:
        print("\n")
        print(_format_summary(trace.summary))
    return 0


def cmd_rules(args: argparse.Namespace) -> int:
    for r in RULES.values():
        print(
            f"{r.name:<9} {r.label:<22} alpha in [{r.alpha_min:g}, {r.alpha_max:g}]  "
            f"SD at {r.alpha_sd:g}, drafter at {r.alpha_drafter:g}  defer: {r.formula}"
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="speccascade", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="run one decoding method and print text and summary")
    gen.add_argument("prompt", nargs="?", help="the prompt (or use --prompt)")
    gen.add_argument("--prompt", dest="prompt_opt", help="the prompt")
    gen.add_argument("--json", action="store_true", help="print the whole trace as JSON")
    _add_model_args(gen)
    _add_decoding_args(gen)
    gen.set_defaults(func=cmd_generate)
    rules = sub.add_parser("rules", help="list the deferral rules and their alpha ranges")
    rules.set_defaults(func=cmd_rules)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except SpecCascadeError as e:
        print(f"speccascade: error: {e}", file=sys.stderr)
        return 2
    except FloatingPointError as e:
        print(f"speccascade: error: {e}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())

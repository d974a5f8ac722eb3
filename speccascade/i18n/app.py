"""i18n strings of the app: controls, status, verdicts, story scenes; method and rule names.

key -> (English, Chinese). `{fields}` are filled by `t(key, lang, **values)`."""

STRINGS: dict[str, tuple[str, str]] = {
    # -- methods (engine.METHOD_REGISTRY) -------------------------------------------------
    "method.verifier": ("verifier alone", "仅验证模型"),
    "method.drafter": ("drafter alone", "仅起草模型"),
    "method.seq_cascade": ("sequence cascade (Chow)", "序列级级联（Chow）"),
    "method.token_cascade": ("token cascade (sequential, Chow)", "词元级级联（顺序，Chow）"),
    "method.speculative": ("speculative decoding (lossless)", "投机解码（无损）"),
    "method.lossy_speculative": ("lossy speculative decoding", "有损投机解码"),
    "method.bild": ("BiLD*", "BiLD*"),
    "method.spec_cascade": ("speculative cascade", "投机级联"),
    # -- rules (rules.RULES): name and one-line description ------------------------------
    "rule.sd": ("Speculative decoding", "投机解码"),
    "rule.sd.desc": (
        "Lossless: every position defers to the verifier, so the target is π = p.",
        "无损：每个位置都交给验证模型，目标分布 π = p。",
    ),
    "rule.chow": ("Chow", "Chow"),
    "rule.chow.desc": (
        "Defer when the drafter itself is unsure.",
        "起草模型自己没有把握时推迟。",
    ),
    "rule.diff": ("Diff", "Diff（置信度差）"),
    "rule.diff.desc": (
        "Defer when the verifier is more confident than the drafter by more than α.",
        "验证模型比起草模型更有把握、且差距超过 α 时推迟。",
    ),
    "rule.opt": ("OPT", "OPT（最优插值）"),
    "rule.opt.desc": (
        "Defer when the confidence gain outweighs α times the rejection rate it costs.",
        "当置信度的提升超过 α 乘以它带来的拒绝率时推迟。",
    ),
    "rule.token_v1": ("TokenV1", "TokenV1"),
    "rule.token_v1.desc": (
        "Defer a token the drafter rates well below the verifier's favourite.",
        "起草模型给某词元的概率远低于验证模型最看好的词元时，推迟该词元。",
    ),
    "rule.token_v2": ("TokenV2", "TokenV2"),
    "rule.token_v2.desc": (
        "Keep a token whose verifier probability is within α of the verifier's best.",
        "验证模型给该词元的概率与其最高概率相差不超过 α 时保留。",
    ),
    "rule.token_v3": ("TokenV3", "TokenV3"),
    "rule.token_v3.desc": (
        "Keep a token the verifier ranks within a factor (1 − α) of its favourite; "
        "any α < 0 is exactly speculative decoding.",
        "验证模型给该词元的概率不低于其最高概率的 (1 − α) 倍时保留；α < 0 时恰好等于投机解码。",
    ),
    "rule.lossy": ("Lossy SD", "有损投机解码"),
    "rule.lossy.desc": (
        "Lenient acceptance: a draft x is kept with probability min(1, p(x) / ((1 − α) q(x))).",
        "宽松接受：草稿 x 以 min(1, p(x) / ((1 − α) q(x))) 的概率被保留。",
    ),
    "rule.bild": ("BiLD*", "BiLD*"),
    "rule.bild.desc": (
        "Defer when the two models' distributions differ by more than α in total variation.",
        "两个模型的分布的总变差距离超过 α 时推迟。",
    ),
}

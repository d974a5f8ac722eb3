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
    "method.typical": ("typical acceptance (Medusa)", "典型接受（Medusa）"),
    "method.ensemble": ("static ensemble verification", "静态集成验证"),
    "method.fuzzy": ("fuzzy speculative decoding", "模糊投机解码"),
    "method.kl_judge": ("KL judge", "KL 判定"),
    "method.block": ("block verification (lossless)", "块验证（无损）"),
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
    "rule.typical": ("Typical acceptance", "典型接受"),
    "rule.typical.desc": (
        "Keep a draft the verifier finds typical enough: p(x) above ε, or above √ε·e^(−H(p)) "
        "where the verifier is unsure. Lossy; a larger ε is stricter (ε = ∞ is speculative "
        "decoding, 0 the drafter alone).",
        "保留验证模型认为足够“典型”的草稿：p(x) 高于 ε，或在验证模型不确定时高于 √ε·e^(−H(p))。"
        "有损；ε 越大越严格（ε = ∞ 即投机解码，0 即仅起草模型）。",
    ),
    "rule.ensemble": ("Static ensemble", "静态集成"),
    "rule.ensemble.desc": (
        "Verify as speculative decoding against a fixed mixture π = w·p + (1 − w)·q: every "
        "draft is tested, none is deferred outright (w = 1 is speculative decoding, w = 0 the "
        "drafter alone).",
        "按投机解码的方式，以固定混合 π = w·p + (1 − w)·q 检验草稿：每个草稿都要检验，"
        "没有直接推迟（w = 1 即投机解码，w = 0 即仅起草模型）。",
    ),
    "rule.fuzzy": ("Fuzzy SD", "模糊投机解码"),
    "rule.fuzzy.desc": (
        "Keep the draft outright where the two laws diverge by at most T (Jensen–Shannon, "
        "nats); elsewhere verify as speculative decoding.",
        "两个分布的 Jensen–Shannon 散度不超过 T（纳特）时直接保留草稿；否则按投机解码检验。",
    ),
    "rule.kl_judge": ("KL judge", "KL 判定"),
    "rule.kl_judge.desc": (
        "Keep the draft outright where KL(p‖q) is at most τ (nats); elsewhere verify as "
        "speculative decoding.",
        "KL(p‖q) 不超过 τ（纳特）时直接保留草稿；否则按投机解码检验。",
    ),
    "rule.block": ("Block verification", "块验证"),
    "rule.block.desc": (
        "Lossless like speculative decoding (π = p), but the window is verified as a block: "
        "it keeps everything up to the last draft whose block test passes, so on average at "
        "least as many drafts as token-by-token verification.",
        "与投机解码一样无损（π = p），但把整个草稿窗口作为一块来检验：保留到最后一个通过块检验的"
        "草稿为止，因此平均保留的草稿不少于逐词检验。",
    ),
    # -- static labels (rendered in the browser's language through gr.I18n) ---------------
    "ui.title": (
        "speccascade — watch a small and a large model decide, token by token",
        "speccascade — 逐词观察小模型与大模型如何协作",
    ),
    "ui.intro": (
        "A small **drafter** proposes tokens, a large **verifier** checks them in one pass, and a "
        "**deferral rule** decides which drafts to keep. Start with the guided story, or type a "
        "question and press **Run**.",
        "小的**起草模型**提出词元，大的**验证模型**一次性检查它们，**推迟规则**决定保留哪些草稿。"
        "可以从下面的导览开始，也可以输入问题后点击**运行**。",
    ),
    "ui.story": ("Guided story: five scenes", "导览：五个场景"),
    "ui.scene.sd": ("1 · Speculative decoding, easy question", "1 · 投机解码，简单问题"),
    "ui.scene.cascade": ("2 · Speculative cascade, same question", "2 · 投机级联，同一问题"),
    "ui.scene.hard": ("3 · A hard question", "3 · 困难问题"),
    "ui.scene.alpha": ("4 · Moving α", "4 · 调节 α"),
    "ui.scene.race": ("5 · The race: all on one clock", "5 · 赛跑：同一时钟"),
    "ui.prompt": ("Prompt", "提示词"),
    "ui.examples": ("Examples", "示例"),
    "ui.pair": ("Model pair", "模型组合"),
    "ui.custom_drafter": ("Custom drafter (hub id)", "自定义起草模型（Hub ID）"),
    "ui.custom_verifier": ("Custom verifier (hub id)", "自定义验证模型（Hub ID）"),
    "ui.method": ("Method", "方法"),
    "ui.rule": ("Deferral rule", "推迟规则"),
    "ui.more": ("More settings", "更多设置"),
    "ui.gamma": ("γ: draft tokens per round", "γ：每轮草稿词元数"),
    "ui.temperature": ("Temperature (0 = greedy)", "温度（0 = 贪心）"),
    "ui.max_new_tokens": ("Max new tokens", "最多生成词元数"),
    "ui.seed": ("Seed", "随机种子"),
    "ui.draft_policy": ("Draft length policy", "草稿长度策略"),
    "ui.draft_policy_info": (
        "fixed: always γ; heuristic: +2 after a fully kept window, −1 otherwise (HF's schedule); "
        "confidence: stop drafting after a token the drafter is unsure of",
        "固定：始终 γ；启发式：整窗保留后 +2，否则 −1（HF 的调度）；"
        "置信度：起草模型对某个词元没把握时就停止起草",
    ),
    "ui.draft_threshold": ("Confidence threshold (max q)", "置信度阈值（max q）"),
    "ui.switch_btn": ("Ask a general model pair", "改用通用模型对回答"),
    "switch.btn": ("Ask {pair}", "改用 {pair} 回答"),
    "switch.note": (
        "**Outside what the demo pair knows.** Its two small models were trained only to say "
        "who or what something is, for about {n:,} famous people and places (the examples "
        "among them), so they said so instead of making something up.",
        "**超出了演示模型对的知识范围。** 它的两个小模型只学过回答“某人是谁、某物是什么”，"
        "而且只限约 {n:,} 个名人和地方（示例就在其中），所以如实说明，而不是编造答案。",
    ),
    "switch.unknown": (
        "**Probably made up.** The demo pair's two small models were trained only to say who "
        "or what something is, for about {n:,} famous people and places, and what this "
        "question asks about is not among them: read this answer as a guess.",
        "**这个回答很可能是编造的。** 演示模型对的两个小模型只学过回答“某人是谁、某物是什么”，"
        "而且只限约 {n:,} 个名人和地方，而这个问题问的不在其中：请把这个回答当作猜测。",
    ),
    "switch.wrong": (
        "**Probably wrong.** The demo pair was taught “{question}” with the answer “{answer}”, "
        "and this answer misses what that says: its two small models mix up some of what they "
        "learnt.",
        "**这个回答很可能是错的。** 演示模型对学过“{question}”，答案是“{answer}”，而这个回答"
        "没有说出其中的要点：两个小模型会把学过的内容弄混。",
    ),
    "switch.taught_one": ("“{question}” (“{answer}”)", "“{question}”（“{answer}”）"),
    "switch.wrong_many": (
        "**Probably wrong.** The demo pair was taught {questions}, and this answer misses what "
        "each of those says: its two small models mix up some of what they learnt.",
        "**这个回答很可能是错的。** 演示模型对学过{questions}，而这个回答没有说出其中任何一个答案"
        "的要点：两个小模型会把学过的内容弄混。",
    ),
    # the offer's target: what it is, what its first use costs here, or that there is none
    "switch.pair.hub": (
        "**{pair}** runs a real small language model from the Hugging Face Hub: it can try "
        "questions like this one.",
        "**{pair}** 使用来自 Hugging Face Hub 的真正的小型语言模型，可以尝试这类问题。",
    ),
    "switch.pair.offline": (
        "**{pair}** is a real small language model that runs offline on this server: it can "
        "try questions like this one.",
        "**{pair}** 是一个真正的小型语言模型，在本服务器上离线运行，可以尝试这类问题。",
    ),
    "switch.first.hub": (
        "Its first use downloads {size}, then loads in about {s:.0f} s; later questions start "
        "at once.",
        "首次使用需下载 {size}，随后约 {s:.0f} 秒加载完毕；之后的问题立即开始。",
    ),
    "switch.first.cached": (
        "It is already downloaded on this server and loads in about {s:.0f} s.",
        "它已下载到本服务器，约 {s:.0f} 秒即可加载。",
    ),
    "switch.first.offline": (
        "Its first load takes about {s:.0f} s.",
        "首次加载约需 {s:.0f} 秒。",
    ),
    "switch.foreign": (
        "It reads only English: switch to it, then ask in English.",
        "它只懂英文：请切换过去，再用英文提问。",
    ),
    "switch.none": (
        "This server has no general model set up, so no other pair can answer this question here.",
        "本服务器没有配置通用模型，因此这里没有其他模型对能回答这个问题。",
    ),
    "error.context": (
        "the prompt has {tokens:,} tokens and the models read at most {context:,}: shorten it.",
        "提示词有 {tokens:,} 个词元，而模型最多读取 {context:,} 个：请缩短提示词。",
    ),
    "error.english_only": (
        "the SmolLM2 pair reads only English: ask this question in English (to a Chinese "
        "question it only repeats the question).",
        "SmolLM2 模型对只懂英文：请用英文提出这个问题（它对中文问题只会重复问题）。",
    ),
    "switch.switched": ("Switched to {pair}.", "已切换到 {pair}。"),
    "error.not_set_up": (
        "the pair {pair} is not set up on this server; pick another pair.",
        "本服务器没有配置模型对 {pair}，请选择其他模型对。",
    ),
    "ui.drafting": ("Draft windows", "草稿窗口"),
    "policy.fixed": ("fixed γ", "固定 γ"),
    "policy.heuristic": ("heuristic (+2 / −1)", "启发式（+2 / −1）"),
    "policy.confidence": ("stop when unsure", "没把握即停"),
    "ui.run": ("Run", "运行"),
    # the page's language switch names the other language, in that language
    "ui.lang_switch": ("中文", "English"),
    "ui.stop": ("Stop", "停止"),
    "ui.compare": ("Compare all methods", "比较所有方法"),
    "ui.tab_run": ("Run", "运行"),
    "ui.tab_compare": ("Compare", "比较"),
    "ui.tab_sweep": ("α sweep", "α 扫描"),
    "ui.tab_learn": ("Learn", "原理"),
    "ui.heatmap": ("Confidence heatmap", "置信度热力图"),
    "ui.inspector": ("Token inspector", "词元检查器"),
    "ui.position": ("Position (or click a token)", "位置（或点击词元）"),
    "ui.timeline": ("Round timeline", "轮次时间线"),
    "ui.stats": ("Stats", "统计"),
    "ui.downloads": ("Download the trace", "下载运行记录"),
    "ui.raw_trace": ("Raw trace (JSON)", "原始运行记录（JSON）"),
    "ui.sweep_source": ("Sweep on", "扫描对象"),
    "ui.sweep_alphas": ("α values per rule", "每条规则的 α 个数"),
    "ui.sweep_run": ("Run sweep", "运行扫描"),
    "ui.sweep_x": ("Cost axis", "成本坐标轴"),
    # -- dynamic text (filled in by the handlers in the page's language) ------------------
    "alpha.label": (
        "{param} ({rule}): {lo} {lo_end} … {hi} {hi_end}",
        "{param}（{rule}）：{lo} {lo_end} … {hi} {hi_end}",
    ),
    "alpha.is_sd": ("= speculative decoding", "= 投机解码"),
    "alpha.to_sd": ("→ speculative decoding", "→ 投机解码"),
    "alpha.is_drafter": ("= drafter alone", "= 仅起草模型"),
    "alpha.to_drafter": ("→ drafter alone", "→ 仅起草模型"),
    "alpha.unused": ("α (not used by this method)", "α（此方法不使用）"),
    "rule_md.none": (
        "**{method}**: one model, no deferral rule.",
        "**{method}**：单个模型，没有推迟规则。",
    ),
    "rule_md.rule": (
        "**{label}**: defer when $${formula}$$. {desc}",
        "**{label}**：当 $${formula}$$ 时推迟。{desc}",
    ),
    "prompt.info": (
        "Up to {limit:,} characters, and {context} tokens for the demo models. They say who "
        "or what something is: famous people and places (see the examples); to other "
        "questions they say so, or the page flags their guess, and offers a general model pair.",
        "最多 {limit:,} 个字符，演示模型最多读 {context} 个词元。它们只能回答某人是谁、某物是什么："
        "名人和地方（见示例）；其他问题它们会如实说明，或由页面标出它们的猜测，并提供通用模型对。",
    ),
    "prompt.info.pair": (
        "Up to {limit:,} characters. This pair is a small general language model: it tries "
        "any question, answers English best, and is often wrong.",
        "最多 {limit:,} 个字符。这个模型对是一个小型通用语言模型：什么问题都会尝试回答，"
        "英文问题答得最好，但常常出错。",
    ),
    "example.easy": ("easy: the drafter knows this", "简单：起草模型知道"),
    "example.hard": ("hard: only the verifier knows", "困难：只有验证模型知道"),
    "sweep.this_prompt": ("this prompt", "当前提示词"),
    "sweep.eval": ("eval slice (2 easy + 2 hard questions)", "评测子集（2 个简单 + 2 个困难问题）"),
    "sweep.x.latency": (
        "time ÷ the verifier alone's (one run each)",
        "耗时 ÷ 仅验证模型的耗时（各运行一次）",
    ),
    "sweep.x.calls": ("verifier calls per token", "每个词元的验证模型调用次数"),
    "sweep.scaled": (
        "To stay within this deployment's budget of {budget:,} generated tokens the sweep was "
        "scaled down: {cuts}.",
        "为了不超过本部署 {budget:,} 个生成词元的预算，扫描已缩小：{cuts}。",
    ),
    "sweep.cut.n_alpha": (
        "{before} → {after} α values per rule",
        "每条规则的 α 个数 {before} → {after}",
    ),
    "sweep.cut.variants": ("{before} → {after} methods", "方法数 {before} → {after}"),
    "sweep.cut.prompts": ("{before} → {after} questions", "问题数 {before} → {after}"),
    "sweep.progress": ("{method}, α = {alpha}", "{method}，α = {alpha}"),
    "sweep.progress.done": ("drawing the curves", "正在绘制曲线"),
    "sweep.done": (
        "{runs} runs; questions: {prompts}; quality is {quality}.",
        "共运行 {runs} 次；问题数：{prompts}；质量指标为{quality}。",
    ),
    "sweep.quality.facts": (
        "key-fact accuracy (answers that state all their key facts)",
        "关键事实准确率（包含全部关键事实的回答比例）",
    ),
    "sweep.quality.reference": ("ROUGE-L against the reference answer", "与参考答案的 ROUGE-L"),
    "sweep.quality.verifier": (
        "agreement with the verifier's answer (ROUGE-L)",
        "与验证模型答案的一致度（ROUGE-L）",
    ),
    "status.loading": ("Loading the model pair (first use only)…", "正在加载模型组合（仅首次）……"),
    "status.downloading": (
        "Downloading {pair} (first use only): {done} of {total}…",
        "正在下载 {pair}（仅首次）：{done} / {total}……",
    ),
    "status.running": ("Running: {n} tokens so far…", "运行中：已生成 {n} 个词元……"),
    "status.done": (
        "Done: {n} tokens in {s:.2f} s ({reason}).",
        "完成：{s:.2f} 秒生成 {n} 个词元（{reason}）。",
    ),
    "status.stopped": ("Stopped after {n} tokens.", "已在 {n} 个词元后停止。"),
    "status.stop_requested": ("Stopping after the current round…", "将在当前轮次结束后停止……"),
    "status.stopped_loading": (
        "Stopped before the run began (the model pair is loaded now: Run starts at once).",
        "已在运行开始前停止（模型对现已加载完毕：再点“运行”会立即开始）。",
    ),
    "status.idle": ("Nothing is running.", "当前没有运行的任务。"),
    "status.error": ("Nothing was run: {message}", "未运行：{message}"),
    "reason.eos": ("end of text", "生成结束"),
    "reason.max_new_tokens": ("max new tokens reached", "达到最大词元数"),
    "reason.stop_string": ("stop string", "遇到停止字符串"),
    "reason.context": ("context full", "上下文已满"),
    "reason.cancelled": ("stopped", "已停止"),
    "error.empty_prompt": (
        "the prompt is empty. Type a question or pick an example.",
        "提示词为空。请输入问题或选择一个示例。",
    ),
    "error.long_prompt": (
        "the prompt has {n:,} characters; the limit is {limit:,}. Shorten it.",
        "提示词有 {n:,} 个字符，上限为 {limit:,}。请缩短。",
    ),
    "error.max_new_tokens": (
        "max new tokens must be a whole number from 1 to {limit}; got {value}.",
        "最多生成词元数必须是 1 到 {limit} 之间的整数；当前为 {value}。",
    ),
    "error.budget": (
        "this job would generate up to {tokens:,} tokens; the limit is {limit:,}. "
        "Lower max new tokens.",
        "此任务最多会生成 {tokens:,} 个词元，上限为 {limit:,}。请降低最多生成词元数。",
    ),
    "error.other": ("{detail}", "{detail}（请检查设置后重试）"),
    # -- the verdict after every run ------------------------------------------------------
    "verdict.drafts": (
        "The drafter's tokens were kept {kept:.0%} of the time ({n_kept} of {drafted}); the "
        "verifier ran {calls} times for {tokens} tokens",
        "起草模型的词元有 {kept:.0%} 被保留（{drafted} 个中的 {n_kept} 个）；验证模型为 {tokens} "
        "个词元运行了 {calls} 次",
    ),
    "verdict.single": (
        "{method} generated {tokens} tokens with {calls} verifier calls",
        "{method}生成了 {tokens} 个词元，调用验证模型 {calls} 次",
    ),
    "verdict.yardstick": (
        "The verifier alone generated {tokens} tokens in {s:.2f} s: this is the yardstick the "
        "other methods are compared with.",
        "仅验证模型用 {s:.2f} 秒生成了 {tokens} 个词元：这是其他方法的比较基准。",
    ),
    "verdict.faster": (
        "; {x:.2f}× faster than the verifier alone to the whole answer (medians of {runs} "
        "interleaved runs each).",
        "；得到完整回答比仅用验证模型快 {x:.2f} 倍（各取 {runs} 次交错运行的中位数）。",
    ),
    "verdict.same": (
        "; about as fast as the verifier alone to the whole answer (medians of {runs} "
        "interleaved runs each).",
        "；得到完整回答与仅用验证模型速度相当（各取 {runs} 次交错运行的中位数）。",
    ),
    "verdict.slower.low_acceptance": (
        "; {x:.2f}× slower than the verifier alone to the whole answer (medians of {runs} "
        "runs each), because few drafts were kept: most of the drafter's work was thrown "
        "away and each verifier call gave about one token. A smaller γ wastes fewer drafts; a "
        "larger α keeps more of them, and with them more of the drafter's own words.",
        "；得到完整回答比仅用验证模型慢 {x:.2f} 倍（各取 {runs} 次运行的中位数），因为保留的草稿很少：起草模型的大部分工作被丢弃，"
        "验证模型每次调用只得到约一个词元。更小的 γ 会少浪费草稿；更大的 α 会保留更多草稿，也随之保留更多起草模型自己的话。",
    ),
    "verdict.slower.drafting_cost": (
        "; {x:.2f}× slower than the verifier alone to the whole answer (medians of {runs} "
        "runs each): drafting and checking cost more than they saved on this run. Try a "
        "smaller γ or a longer answer.",
        "；得到完整回答比仅用验证模型慢 {x:.2f} 倍（各取 {runs} 次运行的中位数）：在这次运行中，起草和检查的开销超过了节省的时间。"
        "可以试试更小的 γ 或更长的回答。",
    ),
    "verdict.slower.low_acceptance_sd": (
        "; {x:.2f}× slower than the verifier alone to the whole answer (medians of {runs} "
        "runs each), because few drafts were kept: speculative decoding keeps a draft only "
        "where it is the verifier's own word. A speculative cascade (scene 2) also keeps drafts "
        "the verifier finds good enough.",
        "；得到完整回答比仅用验证模型慢 {x:.2f} 倍（各取 {runs} 次运行的中位数），因为保留的草稿很少：投机解码只保留与验证模型自己的措辞一致的草稿。"
        "投机级联（场景 2）还会保留验证模型认为足够好的草稿。",
    ),
    "verdict.slower": (
        "; {x:.2f}× slower than the verifier alone to the whole answer (medians of {runs} "
        "runs each).",
        "；得到完整回答比仅用验证模型慢 {x:.2f} 倍（各取 {runs} 次运行的中位数）。",
    ),
    "verdict.stopped": ("Stopped early. ", "已提前停止。"),
    "verdict.timing": (
        "; timing it against the verifier alone…",
        "；正在与仅用验证模型对比计时……",
    ),
    # an answer that repeats itself (analysis.verdict.repetition), above the verdict
    "verdict.repeats": (
        "**This answer repeats itself:** {share:.0%} of it is phrases it says again "
        "(“{phrase}”, {times} times in a row). Small models can fall into a loop like this; "
        "what comes after the first time adds nothing.",
        "**这个回答在重复自己**：其中 {share:.0%} 的内容是反复说的短语（“{phrase}”，连说 "
        "{times} 次）。小模型可能陷入这样的循环；第一遍之后的内容没有新信息。",
    ),
    "verdict.repeats_apart": (
        "**This answer repeats itself:** {share:.0%} of it is phrases it says again "
        "(“{phrase}” and more). Small models can fall into a loop like this; what comes "
        "after the first time adds nothing.",
        "**这个回答在重复自己**：其中 {share:.0%} 的内容是反复说的短语（例如“{phrase}”）。"
        "小模型可能陷入这样的循环；第一遍之后的内容没有新信息。",
    ),
    # -- what-if --------------------------------------------------------------------------
    "whatif.none": (
        "Run first; then move α to see what the rule would change.",
        "请先运行，然后移动 α，查看规则会改变什么。",
    ),
    "whatif.range": (
        "α for {rule} must be between {lo:g} and {hi:g}; it was set to {value:g}.",
        "{rule} 的 α 必须在 {lo:g} 到 {hi:g} 之间；已设为 {value:g}。",
    ),
    "whatif.no_rule": (
        "This run has no deferral rule to re-evaluate.",
        "这次运行没有可以重新评估的推迟规则。",
    ),
    "whatif.note": (
        "**What-if** (no model runs): at α = {alpha:g}, {rule} would defer {would} of the "
        "{drafted} drafted tokens shown (dashed outlines) to the verifier, against {ran} in "
        "this run. A deferred draft survives only if the verifier would write it too. Press "
        "Run to see the answer it would give.",
        "**假设分析**（不运行模型）：当 α = {alpha:g} 时，{rule} 会把显示的 {drafted} 个草稿词元中的 "
        "{would} 个（虚线框）交给验证模型，这次运行为 {ran} 个。被推迟的草稿只有在验证模型也会写出它时"
        "才会保留。点击运行可查看它会给出的回答。",
    ),
    # -- story captions (numbers from the run just made) ----------------------------------
    "story.hint": (
        "Press scene 1 to start: each scene sets the controls, runs, and says what to look at.",
        "点击场景 1 开始：每个场景都会设置控件、运行，并说明该看什么。",
    ),
    "story.sd": (
        "**Scene 1 · Speculative decoding** on an easy question. SD is exact: its answer is "
        "the verifier's own, token for token, and where the drafter writes what the verifier "
        "would, it is faster than the verifier alone (scene 5 races them). Here the drafter's "
        "own answer is short and correct, but SD must write the verifier's longer one: red "
        "tokens are the drafter's words replaced because they were not the verifier's own; "
        "after them the drafter follows the verifier's wording. SD kept {kept:.0%} of the "
        "drafter's tokens and called the verifier {calls} times for {tokens} tokens "
        "({s:.2f} s).",
        "**场景 1 · 投机解码**，简单问题。投机解码是无损的：它的回答与验证模型自己的回答逐词元相同；"
        "当起草模型写出的正是验证模型会写的内容时，它比单独运行验证模型更快（场景 5 让它们赛跑）。"
        "这里起草模型自己的回答简短而正确，但投机解码必须写出验证模型那个更长的回答：红色词元是起草模型"
        "被替换掉的用词，只因为它们不是验证模型自己的措辞；之后起草模型就跟着验证模型的措辞写。投机解码"
        "保留了起草模型 {kept:.0%} 的词元，为 {tokens} 个词元调用验证模型 {calls} 次（{s:.2f} 秒）。",
    ),
    "story.sd.pair": (
        "**Scene 1 · Speculative decoding** on this pair's easy question. Lossless SD only "
        "keeps words the verifier itself would write: it kept {kept:.0%} of the drafter's "
        "tokens and called the verifier {calls} times for {tokens} tokens ({s:.2f} s). Red "
        "tokens are drafts replaced because they were not the verifier's own words (this small "
        "drafter's own answer may be wrong: Compare shows it).",
        "**场景 1 · 投机解码**，这个模型对的简单问题。无损投机解码只保留验证模型自己会写的词："
        "它保留了起草模型 {kept:.0%} 的词元，为 {tokens} 个词元调用验证模型 {calls} 次"
        "（{s:.2f} 秒）。红色词元是被替换掉的草稿，因为它们不是验证模型自己的措辞"
        "（这个小起草模型自己的回答可能是错的：“比较”里可以看到）。",
    ),
    "story.cascade": (
        "**Scene 2 · Speculative cascade** on the same question. The rule keeps a draft the "
        "verifier finds good enough: {kept:.0%} of the drafter's tokens kept, {calls} verifier "
        "calls for {tokens} tokens, {s:.2f} s{versus}. The answer {correct}.",
        "**场景 2 · 投机级联**，同一问题。只要验证模型认为草稿足够好，规则就保留它：保留了起草模型 "
        "{kept:.0%} 的词元，为 {tokens} 个词元调用验证模型 {calls} 次，用时 {s:.2f} 秒{versus}。"
        "回答{correct}。",
    ),
    "story.versus": (
        " (scene 1: {calls} calls, {s:.2f} s)",
        "（场景 1：{calls} 次调用，{s:.2f} 秒）",
    ),
    "story.correct": ("states the key facts", "包含了关键事实"),
    "story.wrong": ("misses a key fact", "缺少关键事实"),
    "story.to_answer": ("[↓ The answer, token by token](#tabs)", "[↓ 逐词元查看回答](#tabs)"),
    "story.unchecked": (
        "is not checked: this question has no key facts on record",
        "未经核对：这个问题没有记录在案的关键事实",
    ),
    "story.hard.pair": (
        "**Scene 3 · A harder question** for this pair. {seq} Speculative decoding took "
        "{sd_s:.2f} s ({sd_x}) and the speculative cascade {casc_s:.2f} s ({casc_x}); the "
        "verifier alone {ver_s:.2f} s. The cascade's rule deferred {fact_deferred} of the "
        "{fact_tokens} tokens that state the key facts and kept {kept:.0%} of the drafts. The "
        "answer {correct}; a model this small can state them and still get the rest wrong: "
        "read the answer itself. Times are medians of {rounds} runs each; the Race tab "
        "replays them.",
        "**场景 3 · 对这个模型对更难的问题。** {seq}投机解码用时 {sd_s:.2f} 秒（{sd_x}），投机级联 "
        "{casc_s:.2f} 秒（{casc_x}），仅验证模型 {ver_s:.2f} 秒。级联的规则在陈述关键事实的 "
        "{fact_tokens} 个词元中推迟了 {fact_deferred} 个，草稿保留了 {kept:.0%}。回答{correct}；"
        "这么小的模型可能说出了关键事实，其余内容却仍然有误：请读一读回答本身。时间是各 {rounds} "
        "次运行的中位数；“赛跑”标签页会回放它们。",
    ),
    "story.hard": (
        "**Scene 3 · A hard question** only the verifier knows: the drafter knows the shape of "
        "the answer but not the facts, and is unsure of them. {seq} The speculative methods do "
        "not wait for the drafter to finish: speculative decoding took {sd_s:.2f} s ({sd_x}) "
        "and the speculative cascade {casc_s:.2f} s ({casc_x}); the verifier alone {ver_s:.2f} "
        "s. The cascade's rule handed the facts to the verifier ({fact_deferred} of the "
        "{fact_tokens} tokens that state them; its tokens are red, or blue after a fully kept "
        "window), and the answer {correct}. Times are medians of {rounds} runs each; the Race "
        "tab replays them.",
        "**场景 3 · 困难问题**，只有验证模型知道答案：起草模型知道回答的格式，却不知道事实，对事实也没有"
        "把握。{seq}投机方法不必等起草模型写完：投机解码用时 {sd_s:.2f} 秒（{sd_x}），投机级联 "
        "{casc_s:.2f} 秒（{casc_x}），仅验证模型 {ver_s:.2f} 秒。级联的规则把事实交给了验证模型（陈述"
        "关键事实的 {fact_tokens} 个词元中有 {fact_deferred} 个；它的词元为红色，整窗草稿全部保留后为"
        "蓝色），回答{correct}。时间是各 {rounds} 次运行的中位数；“赛跑”标签页会回放它们。",
    ),
    "story.hard.seq_deferred": (
        "The sequential cascade let the drafter answer first (“{draft}”), saw that it was "
        "unsure (confidence {conf:.2f} < {bar:.2f}), threw that answer away and let the "
        "verifier start over: {s:.2f} s, {x}.",
        "顺序级联先让起草模型回答（“{draft}”），发现它没有把握（置信度 {conf:.2f} < {bar:.2f}），"
        "于是丢掉这个回答，让验证模型从头再写：用时 {s:.2f} 秒，{x}。",
    ),
    "story.hard.seq_kept": (
        "The sequential cascade kept the drafter's answer (confidence {conf:.2f}): {s:.2f} s, "
        "{x}; that answer {right}.",
        "顺序级联保留了起草模型的回答（置信度 {conf:.2f}）：用时 {s:.2f} 秒，{x}；这个回答{right}。",
    ),
    "story.racing": (
        "Racing the approaches ({rounds} runs each, in turn)…",
        "各方法赛跑中（每种轮流运行 {rounds} 次）……",
    ),
    "story.race": (
        "**Scene 5 · The race.** Each approach answered the easy and then the hard question "
        "{rounds} times, in turn; the Race tab replays their median runs together on one clock, "
        "slowed down (▶ there plays it again). Against the verifier alone: {lines}",
        "**场景 5 · 赛跑。** 每种方法轮流把简单问题和困难问题各回答 {rounds} 次；“赛跑”标签页把它们"
        "的中位数那次运行放在同一个时钟上慢放回放（在那里按 ▶ 可以再放一遍）。与仅验证模型相比：{lines}",
    ),
    "story.race.line": ("*{question}*: {lanes}.", "*{question}*：{lanes}。"),
    "story.alpha": (
        "**Scene 4 · Moving α.** The run kept {kept:.0%} of the drafts at α = {alpha:g}. "
        "The slider now sits at α = {whatif:g}, where TokenV3 is exactly speculative "
        "decoding: the dashed outlines show the {would} drafts it would defer, recomputed "
        "from the recorded numbers without running the models. The curve below is the whole "
        "trade-off on this question ({runs} runs): each point is one α, cost against quality. The "
        "slider stays at α = {whatif:g} (exactly speculative decoding) for your next Run until "
        "you move it: ↺ beside it, or scene 5, sets it back to {alpha:g}.",
        "**场景 4 · 调节 α。** 在 α = {alpha:g} 时，这次运行保留了 {kept:.0%} 的草稿。滑块现在位于 "
        "α = {whatif:g}，此时 TokenV3 恰好等于投机解码：虚线框标出它会推迟的 {would} 个草稿，"
        "这是根据记录的数值重新计算的，没有再次运行模型。下面的曲线是这个问题上完整的权衡"
        "（共 {runs} 次运行）：每个点对应一个 α，横轴是成本，纵轴是质量。滑块会停在 α = {whatif:g}"
        "（恰好是投机解码），下次运行会沿用它，直到你移动它：点它旁边的 ↺ 或场景 5，可恢复为 {alpha:g}。",
    ),
    # -- compare --------------------------------------------------------------------------
    "ui.compare_intro": (
        "Press **Compare all methods** (under the settings) to run every method on this "
        "prompt, one after another: the verifier alone, the drafter alone, speculative "
        "decoding, the cascades and the speculative cascade, with their speed and quality.",
        "按设置下方的**比较所有方法**，在这个提示词上依次运行每种方法：仅验证模型、仅草稿模型、"
        "投机解码、级联和投机级联，并给出它们的速度与质量。",
    ),
    "compare.running": ("Running {k} of {n}: {method}…", "正在运行第 {k}/{n} 个：{method}……"),
    "compare.timing": (
        "Every method ran once; timing them again (round {r} of up to {rounds}): one run's clock "
        "is noisy, so each time will be the median of its runs.",
        "每种方法都已运行一次，正在再次计时（第 {r} 轮，最多 {rounds} 轮）：单次运行的计时误差较大，"
        "所以每个时间将取多次运行的中位数。",
    ),
    "compare.done": (
        "All {n} methods ran on the same prompt and settings. Quality is {quality}.",
        "{n} 种方法在相同的提示词和设置下运行完毕。质量指标为{quality}。",
    ),
    "compare.columns": (
        "Columns: speed-up over the verifier alone, by these runs' own clocks ({timing}: short "
        "runs on a busy machine are noisy, which the Run verdict avoids by pricing the calls); "
        "calls / token = verifier calls per generated token; kept = share of drafted tokens "
        "kept; agreement = ROUGE-L with the verifier's answer.",
        "各列：加速比为相对仅验证模型的加速，按这几次运行各自的实测时间计算（{timing}：在繁忙的机器上"
        "短时间的运行误差较大，“运行”结论按调用次数计价以避免这一点）；调用/词元为每个生成词元的验证"
        "模型调用次数；保留率为被保留的草稿词元比例；一致度为与验证模型答案的 ROUGE-L。",
    ),
    "compare.once": ("one run each", "每种方法只运行一次"),
    "compare.median": (
        "each the median of {runs} interleaved runs, with the same tokens every time",
        "每种方法交错运行 {runs} 次取中位数，每次生成的词元相同",
    ),
    "compare.quality.facts": (
        "the share of the question's key facts each answer states",
        "每个回答包含的关键事实比例",
    ),
    "compare.quality.verifier": (
        "agreement with the verifier's answer (ROUGE-L); this question is not in the eval set, "
        "so there are no key facts to check",
        "与验证模型答案的一致度（ROUGE-L）；这个问题不在评测集中，没有可核对的关键事实",
    ),
    "col.method": ("method", "方法"),
    "col.answer": ("answer", "回答"),
    "col.tokens": ("tokens", "词元数"),
    "col.time": ("time (s)", "耗时/秒"),
    "col.speedup": ("speed-up", "加速比"),
    "col.calls": ("calls / token", "调用/词元"),
    "col.kept": ("kept", "保留率"),
    "col.agreement": ("agreement", "一致度"),
    "col.facts": ("key facts", "关键事实"),
    "col.quality": ("quality", "质量"),
    "col.relative_time": ("rel. time", "相对耗时"),
    "stats.empty": ("run a prompt to see its numbers", "运行后在此显示统计数据"),
    # -- share and restore (share.py): permalinks and trace files -------------------------
    "share.link": ("Copy a link to this run", "复制本次运行的链接"),
    "share.copied": ("Link copied", "链接已复制"),
    "share.restored": (
        "Settings restored from the link: press Run.",
        "已从链接恢复设置：请按“运行”。",
    ),
    "share.ignored": ("Ignored in the link: {problems}", "链接中以下内容已忽略：{problems}"),
    "share.bad_link": (
        "This link cannot be opened: {detail}",
        "无法打开此链接：{detail}",
    ),
    "share.open_trace": ("Open a trace file (.json)", "打开运行记录文件（.json）"),
    "share.bad_trace": (
        "This trace file cannot be opened: {detail}",
        "无法打开此运行记录文件：{detail}",
    ),
    # -- analysis views (app.tabs.inspect, app.tabs.compare) and sharing ------------------------------------------
    "ui.tab_inspect": ("Inspect", "检视"),
    "ui.share": ("Link to these settings", "当前设置的链接"),
    "ui.share_link": (
        "Link (settings and seed; opening it fills the controls)",
        "链接（含设置与种子；打开即填好控件）",
    ),
    "ui.open_trace": ("Open a trace file", "打开运行记录文件"),
    "share.link_made": (
        "Link made: it is in the box below and in the address bar.",
        "链接已生成：见下方文本框和地址栏。",
    ),
    "share.restored_trace": (
        "Restored a run of {n} tokens from the file (no model ran; the verdict's speed is the file's own).",
        "已从文件恢复 {n} 个词元的运行（未运行模型；结论中的速度来自文件本身）。",
    ),
    "share.restored_trace_noprompt": (
        "Restored a run of {n} tokens from the file (no model ran). The file does not say what "
        "was asked (an older version wrote it), so the prompt is unknown and the answer is not "
        "checked against any question.",
        "已从文件恢复 {n} 个词元的运行（未运行模型）。这个文件没有记录当时的提问（由旧版本写出），"
        "因此提示词未知，也不会拿回答去对照任何问题。",
    ),
    "share.other_pair": (
        "this trace has token id {id}, outside this pair's vocabulary of {vocab}: choose the pair that wrote it",
        "该运行记录含词元编号 {id}，超出当前模型组合的词表大小 {vocab}：请选择生成它的模型组合",
    ),
    "views.plane.intro": (
        "**Decision plane.** The draft tested at each output position (one point per token), on "
        "the rule's own axes; the line is the α boundary (it moves with the α slider). Green: "
        "kept, orange: deferred; a diamond marks a draft that is not the verifier's favourite.",
        "**决策平面。** 每个输出位置上接受检验的草稿（每个词元一个点），画在规则自己的坐标轴上；"
        "直线是 α 边界（随 α 滑块移动）。绿色：保留，橙色：推迟；菱形表示该草稿不是验证模型的首选。",
    ),
    "views.plane.none": (
        "Run a speculative method to see its drafts here.",
        "运行一种推测式方法后，这里会显示它的草稿。",
    ),
    "views.plane.note": (
        "{n} drafts at α = {alpha}: {deferred} deferred, {differ} not the verifier's favourite.",
        "α = {alpha} 时共 {n} 个草稿：{deferred} 个推迟，{differ} 个不是验证模型的首选。",
    ),
    "views.replay.intro": (
        "**Round replay.** Each round's drafts, the rule's arithmetic, the accept draw and what "
        "replaced a rejected draft, from the recorded run (no model runs).",
        "**逐轮回放。** 每一轮的草稿、规则的算式、接受抽样以及被拒草稿的替换词元，"
        "全部来自运行记录（不再运行模型）。",
    ),
    "views.plane.note_sd": (
        "{n} drafts; lossless speculative decoding has no α: every draft faces the accept test "
        "against p ({deferred} may be rejected; {differ} not the verifier's favourite).",
        "共 {n} 个草稿；无损推测解码没有 α：每个草稿都按 p 做接受检验（{deferred} 个可能被拒；"
        "{differ} 个不是验证模型的首选）。",
    ),
    "views.plane.note_lossy": (
        "{n} drafts at α = {alpha}: {deferred} may be rejected, {differ} not the verifier's favourite.",
        "α = {alpha} 时共 {n} 个草稿：{deferred} 个可能被拒，{differ} 个不是验证模型的首选。",
    ),
    "views.replay.none": (
        "Run a speculative method to replay its rounds.",
        "运行一种推测式方法后可逐轮回放。",
    ),
    "views.replay.prev": ("◀ Previous", "◀ 上一轮"),
    "views.replay.next": ("Next ▶", "下一轮 ▶"),
    "views.replay.play": ("Play", "播放"),
    "views.replay.pause": ("Pause", "暂停"),
    "views.replay.round": ("Round", "轮次"),
    "views.diff.intro": (
        "**Token-aligned diff.** The cascade beside the verifier alone and the drafter alone (same "
        "prompt, seed and settings).",
        "**逐词元对齐比较。** 级联的输出与仅验证模型、仅起草模型的输出并排对齐（相同提示、种子和设置）。",
    ),
    "views.diff.run": ("Diff against both models alone", "与两个模型单独运行对比"),
    "views.cal.intro": (
        "**Calibrate α.** Equal α values mean different things under different rules: state a "
        "target and find each rule's α that meets it on the eval slice (2 easy + 2 hard "
        "questions), by bisection. It runs the slice dozens of times: about a minute here.",
        "**校准 α。** 相同的 α 在不同规则下含义不同：给出目标，用二分法在评测子集"
        "（2 道简单题 + 2 道难题）上为每条规则找到满足目标的 α。需要把子集运行几十次：在本机约一分钟。",
    ),
    "views.cal.max_calls": (
        "At most this many verifier calls per token (0: no cap)",
        "每词元验证模型调用不超过（0：不限）",
    ),
    "views.cal.min_share": (
        "At least this share of the verifier's accuracy (0: no floor)",
        "至少达到验证模型准确率的比例（0：不限）",
    ),
    "views.cal.rules": ("Rules", "规则"),
    "views.cal.run": ("Calibrate", "开始校准"),
    "views.cal.no_rules": ("choose at least one rule", "请至少选择一条规则"),
    "views.cal.too_large": (
        "This calibration does not fit the server's token budget: choose fewer rules.",
        "本次校准超出服务器的词元预算：请少选几条规则。",
    ),
    "views.cal.note": (
        "{items} questions, {steps} bisection steps per rule, {tokens} new tokens per answer.",
        "{items} 道题，每条规则二分 {steps} 步，每个回答最多 {tokens} 个新词元。",
    ),
    "views.cal.col.rule": ("rule", "规则"),
    "views.cal.col.param": ("parameter", "参数"),
    # -- the rule zoo (Compare tab) and the fidelity audit (Inspect tab) -----------------
    "views.zoo.intro": (
        "**Every acceptance rule at the same deferral rate.** Each rule's parameter means "
        "something else (α, ε, w, T, τ), so each is calibrated on a few questions to the "
        "same share of drafts replaced by the verifier, then compared there: key-fact "
        "accuracy, verifier calls per token and time, beside lossless speculative decoding, "
        "block verification and the verifier alone. It runs the questions dozens of times.",
        "**各接受规则在相同推迟率下的比较。** 每条规则的参数含义不同（α、ε、w、T、τ），"
        "所以先在几个问题上把每条规则校准到相同的“被验证模型替换的草稿比例”，再在这个比例下比较："
        "关键事实准确率、每词元验证调用次数和耗时，并与无损投机解码、块验证和仅验证模型对照。"
        "需要把这些问题运行几十次。",
    ),
    "views.zoo.rules": ("Rules", "规则"),
    "views.zoo.rates": ("Deferral rates", "推迟率"),
    "views.zoo.run": ("Compare the rules", "比较这些规则"),
    "views.zoo.empty": (
        "choose at least one rule and one deferral rate",
        "请至少选择一条规则和一个推迟率",
    ),
    "views.zoo.too_large": (
        "That comparison is larger than this deployment's token budget: choose fewer rules or "
        "rates (or run `speccascade zoo` locally).",
        "这个比较超出了本部署的词元预算：请少选几条规则或推迟率（或在本地运行 `speccascade zoo`）。",
    ),
    "views.zoo.note": (
        "{items} questions, {tokens} new tokens each, {steps} bisection steps per rate: "
        "{runs} runs of the questions.",
        "{items} 个问题，每个最多 {tokens} 个新词元，每个推迟率二分 {steps} 步：共运行这些问题 {runs} 次。",
    ),
    "views.audit.intro": (
        "**Fidelity audit.** Does this configuration's output follow the law it promises (p "
        "for speculative decoding and block verification, the target π for a cascade or any "
        "other rule)? Many seeded runs of the first tokens of the prompt are compared, "
        "position by position, with that law: a chi-square test and the total-variation gap, "
        "beside the gap sampling noise alone gives. Uses the run's current settings (method, "
        "rule, α, temperature); sampling (T > 0) makes the test informative.",
        "**保真度审计。** 当前配置的输出是否服从它承诺的分布（投机解码和块验证为 p，"
        "级联和其他规则为目标分布 π）？用许多个随机种子运行提示词的前几个词元，逐位置与该分布比较："
        "卡方检验和总变差差距，并给出仅由抽样噪声造成的差距作对照。"
        "使用当前的运行设置（方法、规则、α、温度）；采样（T > 0）时检验才有意义。",
    ),
    "views.audit.positions": ("Positions (first k tokens)", "位置（前 k 个词元）"),
    "views.audit.seconds": ("Time budget (s)", "时间预算（秒）"),
    "views.audit.run": ("Audit these settings", "审计当前设置"),
    "views.audit.note": ("({n} runs, {s} s)", "（{n} 次运行，{s} 秒）"),
    "views.audit.bad": (
        "positions must be 1 to {k} and the time budget at most {s} s",
        "位置数须为 1 到 {k}，时间预算最多 {s} 秒",
    ),
    "views.cal.col.calls": ("verifier calls / token", "每词元验证调用"),
    "views.cal.col.accuracy": ("key-fact accuracy", "关键事实准确率"),
    "views.cal.col.time": ("time (s)", "耗时（秒）"),
    "views.cal.col.met": ("meets the target", "达到目标"),
    "views.cal.col.runs": ("evaluations", "评测次数"),
    "views.cal.yes": ("yes", "是"),
    "views.cal.no": ("not reached", "未达到"),
    # -- cost projector (app.tabs.compare) -------------------------------------------
    "views.proj.intro": (
        "**Cost projector.** Re-price the recorded runs (this tab's Compare, else the last run) "
        "under a cost model, without running the models again: what speed-up they imply on "
        "other hardware. Everything here is a projection, labelled as such.",
        "**成本预测。** 在某个成本模型下重新计算已记录运行（本页“比较”的运行，否则为最近一次运行）"
        "的耗时，无需再次运行模型：看看它们在其他硬件上意味着多少加速。这里的一切都是预测，并如此标注。",
    ),
    "views.proj.profile": ("Cost model", "成本模型"),
    "views.proj.profile.measured": ("this machine (measured)", "本机（实测）"),
    "views.proj.profile.roofline": ("GPU roofline", "GPU 屋顶线模型"),
    "views.proj.profile.custom": ("custom numbers", "自定义数值"),
    "views.proj.gpu": ("GPU (roofline)", "GPU（屋顶线）"),
    "views.proj.dtype": ("Weights dtype (roofline)", "权重精度（屋顶线）"),
    "views.proj.launch_ms": (
        "Launch overhead per forward, ms (roofline)",
        "每次前向启动开销，毫秒（屋顶线）",
    ),
    "views.proj.drafter_params": ("Drafter parameters (roofline)", "起草模型参数量（屋顶线）"),
    "views.proj.verifier_params": ("Verifier parameters (roofline)", "验证模型参数量（屋顶线）"),
    "views.proj.drafter_ms": ("Drafter ms per forward (custom)", "起草模型每次前向毫秒（自定义）"),
    "views.proj.verifier_fixed_ms": (
        "Verifier ms per forward, fixed part (custom)",
        "验证模型每次前向毫秒，固定部分（自定义）",
    ),
    "views.proj.verifier_token_ms": (
        "Verifier ms per extra token verified (custom)",
        "验证模型每多验证一个词元的毫秒（自定义）",
    ),
    "views.proj.round_ms": ("Overhead per round, ms (custom)", "每轮额外开销，毫秒（自定义）"),
    "views.proj.run": ("Project the recorded runs", "预测已记录的运行"),
    "views.proj.none": (
        "Run a prompt (or Compare all methods) first: the projector re-prices recorded runs.",
        "请先运行一个提示（或比较所有方法）：预测器只重新计价已记录的运行。",
    ),
    "views.proj.note": (
        "{n} recorded run(s) re-priced. The cost model assumes:",
        "已重新计价 {n} 个记录的运行。成本模型的假设：",
    ),
}

"""i18n strings of the figures and token HTML (viz.py): key -> (English, Chinese).

Keys start with `fig.`, except the token sources' legend labels, `source.<name>` (one per
`trace.SOURCES`). `{fields}` are filled by `t(key, lang, **values)`. Formula-only text (q(x) =
…, max p = …, D_TV = …) is the same in both languages and is written in viz.py directly."""

STRINGS: dict[str, tuple[str, str]] = {
    # -- token sources (trace.SOURCES): legend chips and the token popup ------------------
    "source.accepted": ("drafter token kept", "保留的起草词元"),
    "source.resampled": ("verifier took over (draft rejected)", "验证模型接管（草稿被拒）"),
    "source.bonus": ("bonus token after a fully kept window", "整窗草稿全部保留后的奖励词元"),
    "source.drafter": ("drafter alone", "仅起草模型"),
    "source.verifier": ("verifier alone", "仅验证模型"),
    # short forms for titles
    "fig.short.accepted": ("kept draft", "保留草稿"),
    "fig.short.resampled": ("verifier took over", "验证模型接管"),
    "fig.short.bonus": ("bonus token", "奖励词元"),
    "fig.short.drafter": ("drafter alone", "仅起草模型"),
    "fig.short.verifier": ("verifier alone", "仅验证模型"),
    # -- token HTML -------------------------------------------------------------------------
    "fig.tok.head": ("#{pos} {text} (id {id}) — {source}", "#{pos} {text}（编号 {id}）— {source}"),
    "fig.tok.drafted": ("drafted id {id}: q = {q}, p = {p}", "草稿词元编号 {id}：q = {q}，p = {p}"),
    "fig.tok.rule_keep": ("rule: keep the draft", "规则：保留草稿"),
    "fig.tok.rule_defer": ("rule: defer to the verifier", "规则：推迟给验证模型"),
    "fig.tok.accept": ("acceptance probability {v}", "接受概率 {v}"),
    "fig.tok.whatif_keep": ("what-if: would keep", "假设：会保留"),
    "fig.tok.whatif_defer": ("what-if: would defer", "假设：会推迟"),
    "fig.tok.round": ("round {n}", "第 {n} 轮"),
    "fig.tok.eos": ("end of text", "文本结束"),
    "fig.tok.empty": (
        "No tokens yet — press Run or pick a story scene.",
        "还没有词元——请点击“运行”或选择一个故事场景。",
    ),
    "fig.tok.aria": ("generated text, one box per token", "生成的文本，每个词元一个方框"),
    "fig.legend.whatif": ("would defer at the what-if α", "换成假设的 α 会推迟"),
    "fig.legend.eos": ("end of text", "文本结束"),
    # -- heatmap ----------------------------------------------------------------------------
    "fig.heat.title": ("Disagreement and the rule's decisions", "两个模型的分歧与规则的决定"),
    "fig.heat.max_q": ("drafter max q", "起草 max q"),
    "fig.heat.max_p": ("verifier max p", "验证 max p"),
    "fig.heat.q_tok": ("q(token)", "q(词元)"),
    "fig.heat.p_tok": ("p(token)", "p(词元)"),
    "fig.heat.dtv_bar": ("D_TV<br>disagreement", "D_TV<br>分歧"),
    "fig.heat.defer": ("rule", "规则"),
    "fig.heat.kept": ("kept", "保留"),
    "fig.heat.deferred": ("deferred", "推迟"),
    "fig.heat.no_rule": ("no rule here", "此处无规则"),
    "fig.heat.xaxis": ("generated tokens (one label per {k})", "生成的词元（每 {k} 个标注一个）"),
    "fig.heat.xaxis_all": ("generated tokens", "生成的词元"),
    "fig.heat.empty": ("No tokens to show yet", "还没有可显示的词元"),
    "fig.prob": ("probability", "概率"),
    # -- inspector --------------------------------------------------------------------------
    "fig.insp.q": ("drafter q", "起草模型 q"),
    "fig.insp.p": ("verifier p", "验证模型 p"),
    "fig.insp.pi": ("target π", "目标 π"),
    "fig.insp.keeps": ("{rule} keeps (α = {alpha})", "{rule} 保留（α = {alpha}）"),
    "fig.insp.accepted_set": (
        "{n} of {m} shown tokens in {rule}'s accepted set",
        "图中 {m} 个词元里有 {n} 个在 {rule} 的接受集合中",
    ),
    "fig.insp.drafted": ("drafted", "草稿"),
    "fig.insp.xaxis": ("token [id]", "词元 [编号]"),
    # -- timeline ---------------------------------------------------------------------------
    "fig.tl.calls_title": ("Model calls over time", "模型调用时间线"),
    "fig.tl.rounds_title": ("Drafted vs kept tokens per round", "每轮起草与保留的词元数"),
    "fig.tl.drafter": ("drafter", "起草模型"),
    "fig.tl.verifier": ("verifier", "验证模型"),
    "fig.tl.drafter_calls": ("drafter calls", "起草模型调用"),
    "fig.tl.verifier_calls": ("verifier calls", "验证模型调用"),
    "fig.tl.call_hover": (
        "round {i}: {calls} call(s), {ms} ms",
        "第 {i} 轮：{calls} 次调用，{ms} 毫秒",
    ),
    "fig.tl.drafted": ("drafted", "起草"),
    "fig.tl.kept": ("kept", "保留"),
    "fig.tl.emitted": ("emitted", "输出"),
    "fig.tl.ms": ("ms since start", "自开始起的毫秒数"),
    "fig.tl.round": ("round", "轮次"),
    "fig.tl.tokens": ("tokens", "词元数"),
    # -- stats table ------------------------------------------------------------------------
    "fig.stats.metric": ("metric", "指标"),
    "fig.stats.value": ("value", "数值"),
    "fig.stats.wall": ("wall time (s)", "总耗时（秒）"),
    "fig.stats.tokens": ("tokens", "词元数"),
    "fig.stats.tps": ("tokens / s", "词元/秒"),
    "fig.stats.speedup": ("measured speed-up vs verifier", "相对仅验证模型的实测加速比"),
    "fig.stats.vcalls": ("verifier calls / token", "每词元验证模型调用次数"),
    "fig.stats.calls": ("drafter calls / verifier calls", "起草模型调用 / 验证模型调用"),
    "fig.stats.acceptance": ("acceptance rate", "接受率"),
    "fig.stats.mean_kept": ("mean kept per round", "每轮平均保留数"),
    "fig.stats.cost": ("drafter/verifier cost per call", "单次调用耗时比（起草/验证）"),
    "fig.stats.ideal": ("ideal speed-up (docs/method.md)", "理想加速比（docs/method.md）"),
    "fig.stats.stop": ("stop reason", "停止原因"),
    "fig.stop.eos": ("end of text", "文本结束"),
    "fig.stop.stop_string": ("stop string", "遇到停止字符串"),
    "fig.stop.context": ("context full", "上下文已满"),
    "fig.stop.max_new_tokens": ("token limit reached", "达到词元数上限"),
    "fig.stop.cancelled": ("stopped by the user", "已被用户停止"),
    # -- compare: speed vs quality ----------------------------------------------------------
    "fig.sq.title": ("Speed vs quality, one point per method", "速度与质量：每种方法一个点"),
    "fig.sq.x": (
        "speed-up over the verifier alone (×, log scale)",
        "相对仅验证模型的加速比（×，对数刻度）",
    ),
    "fig.sq.y_facts": ("key facts stated (share)", "答出的关键事实比例"),
    "fig.sq.y_agree": (
        "agreement with the verifier's answer (ROUGE-L)",
        "与验证模型答案的一致度（ROUGE-L）",
    ),
    "fig.sq.baseline": ("verifier (1×)", "验证模型（1×）"),
    "fig.sq.wrong": ("{name} (wrong)", "{name}（答错）"),
    "fig.sq.good_facts": ("faster and right", "更快且正确"),
    "fig.sq.good_agree": ("faster, same answer", "更快且答案一致"),
    "fig.sq.ok": ("states every key fact", "答出全部关键事实"),
    "fig.sq.bad": ("misses a key fact (wrong)", "漏掉关键事实（答错）"),
    "fig.sq.method": ("method", "方法"),
    "fig.sq.speedup": ("speed-up {v}×", "加速比 {v}×"),
    "fig.sq.wall": ("wall time {v} s", "耗时 {v} 秒"),
    "fig.sq.vcalls": ("verifier calls / token {v}", "每词元验证模型调用 {v} 次"),
    "fig.sq.empty": ("No comparison yet", "还没有对比结果"),
    # -- alpha sweep: quality vs cost -------------------------------------------------------
    "fig.ql.title": ("Quality vs cost over α", "不同 α 下的质量与成本"),
    "fig.ql.quality": ("quality (ROUGE-L)", "质量（ROUGE-L）"),
    "fig.ql.quality_short": ("quality", "质量"),
    "fig.ql.x.relative_latency": ("latency relative to the verifier alone", "相对仅验证模型的延迟"),
    "fig.ql.x.verifier_calls_per_token": ("verifier calls per token", "每词元验证模型调用次数"),
    "fig.ql.current": ("current setting", "当前设置"),
    "fig.ql.frontier": ("{name}: best trade-offs", "{name}：最优权衡"),
    # -- cost projector (project.py, viz_project.py) ---------------------------------------
    "fig.proj.title": ("Projected latency — {profile}", "预测延迟——{profile}"),
    "fig.proj.note": (
        "A projection from the run's recorded model calls, not a measurement",
        "由运行记录的模型调用次数推算的预测值，并非实测",
    ),
    "fig.proj.profile.measured": ("this machine, measured", "本机实测"),
    "fig.proj.profile.roofline": ("{gpu} roofline, {dtype}", "{gpu} 屋顶线模型，{dtype}"),
    "fig.proj.profile.custom": ("custom numbers", "自定义数值"),
    "fig.proj.method": ("method", "方法"),
    "fig.proj.tokens": ("tokens", "词元数"),
    "fig.proj.calls": ("drafter / verifier calls", "起草 / 验证模型调用次数"),
    "fig.proj.projected": ("projected (s)", "预测耗时（秒）"),
    "fig.proj.measured": ("measured in the run (s)", "运行实测（秒）"),
    "fig.proj.verifier_alone": ("verifier alone, projected (s)", "仅验证模型的预测耗时（秒）"),
    "fig.proj.speedup": ("projected speed-up", "预测加速比"),
    "fig.proj.basis": ("basis", "依据"),
    "fig.proj.basis.recorded": ("the run's recorded calls", "运行记录的调用"),
    "fig.proj.basis.exact": ("exact re-simulation", "精确重放"),
    "fig.proj.basis.estimate": ("estimate", "估计"),
    "fig.proj.reason.temperature": (
        "sampled run (temperature above 0): estimated from the acceptance rate",
        "采样运行（温度大于 0）：按接受率估计",
    ),
    "fig.proj.reason.unrecorded": (
        "a window drafts where the run never tested a draft: estimated from the acceptance rate",
        "新窗口需要原运行未检验过的位置：按接受率估计",
    ),
    "fig.proj.reason.final_round": (
        "only the last round is uncertain (drafts past the end of the text)",
        "仅最后一轮不确定（草稿超出了文本结尾）",
    ),
    "fig.proj.x": ("seconds (projected)", "秒（预测）"),
    "fig.proj.measured_mark": ("measured in the run", "运行实测"),
    "fig.proj.baseline": ("verifier alone (projected)", "仅验证模型（预测）"),
    "fig.proj.empty": ("No runs to project yet", "还没有可预测的运行"),
    "fig.proj.prefill": (
        "The verifier's first call also reads the prompt: it is priced as one forward over the "
        "prompt and the drafted tokens.",
        "验证模型的第一次调用还要读入提示：按一次覆盖提示和草稿词元的前向计算计价。",
    ),
    "fig.proj.gamma.title": (
        "Projected speed-up by draft window γ — {profile}",
        "不同草稿窗口 γ 的预测加速比——{profile}",
    ),
    "fig.proj.gamma.x": ("draft window γ", "草稿窗口 γ"),
    "fig.proj.gamma.y": (
        "projected speed-up over the verifier alone (×)",
        "相对仅验证模型的预测加速比（×）",
    ),
    "fig.proj.gamma.best": ("best γ = {g}", "最佳 γ = {g}"),
    "fig.proj.best.recorded_gamma": ("γ of the run", "运行时的 γ"),
    "fig.proj.best.recorded_speedup": ("projected speed-up at that γ", "该 γ 下的预测加速比"),
    "fig.proj.best.best_gamma": ("best γ", "最佳 γ"),
    "fig.proj.best.speedup": ("projected speed-up at the best γ", "最佳 γ 下的预测加速比"),
    "fig.proj.best.acceptance": ("acceptance per tested draft", "每个受检草稿的接受率"),
    "fig.proj.best.breakeven": (
        "break-even acceptance at the best γ",
        "最佳 γ 下的盈亏平衡接受率",
    ),
    "fig.proj.never": ("never pays", "始终不划算"),
    "fig.proj.assume.measured": (
        "forward times of {pair} measured on this machine ({device}, {threads} threads) "
        "after a {prompt}-token prompt, at least {repeats} repeats each",
        "{pair} 的前向计算耗时在本机测得（{device}，{threads} 个线程），先读入 {prompt} "
        "个词元的提示，每项至少重复 {repeats} 次",
    ),
    "fig.proj.assume.table": (
        "each forward priced from measured times over 1 to {n} new tokens and over the "
        "prompt, linear between the points and beyond them",
        "每次前向计算按实测表计价（1 到 {n} 个新词元以及整段提示），点与点之间及两端之外按线性推算",
    ),
    "fig.proj.assume.overhead_measured": (
        "host work outside the forwards, measured from real runs: {round_ms} ms per round "
        "+ {draft_ms} ms per drafted token",
        "前向计算之外的主机开销，由实际运行测得：每轮 {round_ms} 毫秒，每个草稿词元另加 "
        "{draft_ms} 毫秒",
    ),
    "fig.proj.assume.overhead": (
        "host work outside the forwards: {round_ms} ms per round + {draft_ms} ms per drafted token",
        "前向计算之外的主机开销：每轮 {round_ms} 毫秒，每个草稿词元另加 {draft_ms} 毫秒",
    ),
    "fig.proj.assume.memory_bound": (
        "decoding is memory-bound: a forward reads every weight once, {bytes} bytes per "
        "parameter ({dtype}), at {bw} TB/s ({gpu})",
        "解码受显存带宽限制：每次前向计算把全部权重读一遍，每个参数 {bytes} 字节（{dtype}），"
        "带宽 {bw} TB/s（{gpu}）",
    ),
    "fig.proj.assume.params": (
        "drafter {d} parameters, verifier {v} parameters",
        "起草模型 {d} 个参数，验证模型 {v} 个参数",
    ),
    "fig.proj.assume.compute": (
        "each token scored in the same pass adds 2 operations per parameter at {tflops} "
        "trillion per second, on top of the weight read (an upper bound)",
        "同一次前向中每多评分一个词元，每个参数另加 2 次运算，按每秒 {tflops} 万亿次计，"
        "与读权重的时间相加（上界）",
    ),
    "fig.proj.assume.launch": (
        "{ms} ms fixed per forward (kernel launches, framework)",
        "每次前向计算固定 {ms} 毫秒（内核启动与框架开销）",
    ),
    "fig.proj.assume.ignored": (
        "not counted: reading the KV cache and activations (short contexts, one request)",
        "未计入：读取键值缓存与激活值（上下文短，单个请求）",
    ),
    "fig.proj.assume.custom": ("numbers entered by the user", "用户输入的数值"),
}

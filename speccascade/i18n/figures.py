"""i18n strings of the figures and token HTML (speccascade.views): key -> (English, Chinese).

Keys start with `fig.`, except the token sources' legend labels, `source.<name>` (one per
`trace.SOURCES`). `{fields}` are filled by `t(key, lang, **values)`. Formula-only text (q(x) =
…, max p = …, D_TV = …) is the same in both languages and is written in the views directly."""

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
    "fig.legend.cut": (
        "… cut short (token limit, full context or Stop)",
        "… 被截断（词元上限、上下文已满或停止）",
    ),
    "fig.legend.empty": (
        "part of a character (shown whole on the next token)",
        "字符的一部分（完整显示在下一个词元上）",
    ),  # fmt: skip
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
    "fig.insp.accepted_set_whatif": (
        "{n} of {m} shown in {rule}'s accepted set at α = {alpha} (the run's: {run})",
        "α = {alpha}（运行时 {run}）：{m} 个里 {n} 个在 {rule} 的接受集合中",
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
    "fig.stats.window": ("mean draft window", "平均草稿窗口"),
    "fig.stats.wasted": (
        "drafter forwards on drafts not in the answer (rejected, or past its end)",
        "花在未进入回答的草稿上的起草前向次数（被拒绝，或在回答结束之后）",
    ),
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
    "fig.stats.ideal": ("ideal speed-up (see the Learn tab)", "理想加速比（见“原理”页）"),
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
    "fig.ql.x.relative_latency": (
        "time ÷ the verifier alone's (one run each)",
        "耗时 ÷ 仅验证模型的耗时（各运行一次）",
    ),
    "fig.ql.x.verifier_calls_per_token": ("verifier calls per token", "每词元验证模型调用次数"),
    "fig.ql.current": ("current setting", "当前设置"),
    "fig.ql.run": ("this run (α = {alpha})", "本次运行（α = {alpha}）"),
    "fig.ql.frontier": ("{name}: best trade-offs", "{name}：最优权衡"),
    # -- drafting panel (draft policies) ---------------------------------------------------
    "fig.dp.by_position_title": (
        "Kept rate by position in the draft window",
        "草稿窗口中各位置的保留率",
    ),
    "fig.dp.windows_title": ("Draft window per round", "每轮草稿窗口长度"),
    "fig.dp.position": ("position in the window", "窗口中的位置"),
    "fig.dp.kept_rate": ("kept rate", "保留率"),
    "fig.dp.planned": ("planned window", "计划窗口"),
    "fig.dp.drafted": ("drafted", "实际起草"),
    "fig.dp.kept": ("kept", "保留"),
    "fig.dp.rate_hover": (
        "position {j}: {kept} of {reached} kept",
        "位置 {j}：{reached} 个中保留 {kept} 个",
    ),
    "fig.dp.summary": (
        "{policy}: mean window {window}, {wasted} drafter forwards spent on drafts not in the "
        "answer",
        "{policy}：平均窗口 {window}，{wasted} 次起草模型前向花在未进入回答的草稿上",
    ),
    "fig.dp.none": ("This method does not draft.", "该方法不起草。"),
    # -- decision plane (analysis.plane, views.plane) ------------------------------------------
    # -- the rule zoo at matched deferral rates (views.zoo) ---------------------------------
    "fig.zoo.title": (
        "Every acceptance rule at matched deferral rates ({n} questions)",
        "各接受规则在相同推迟率下的比较（{n} 个问题）",
    ),
    "fig.zoo.x": (
        "deferral rate: drafts the verifier replaced",
        "推迟率：被验证模型替换的草稿比例",
    ),
    "fig.zoo.y": ("key-fact accuracy", "关键事实准确率"),
    "fig.zoo.hover": (
        "{param} = {value}, {calls} verifier calls per token",
        "{param} = {value}，每词元验证调用 {calls} 次",
    ),
    "fig.zoo.col.rule": ("rule", "规则"),
    "fig.zoo.col.target": ("target deferral rate", "目标推迟率"),
    "fig.zoo.col.param": ("parameter", "参数"),
    "fig.zoo.col.rate": ("deferral rate", "推迟率"),
    "fig.zoo.col.accuracy": ("key-fact accuracy", "关键事实准确率"),
    "fig.zoo.col.calls": ("verifier calls / token", "验证调用 / 词元"),
    "fig.zoo.col.time": ("time (s)", "时间（秒）"),
    "fig.zoo.col.met": ("target reached", "达到目标"),
    "fig.zoo.target": ("target {rate}: reached", "目标 {rate}：已达到"),
    "fig.zoo.target_missed": ("target {rate}: not reached", "目标 {rate}：未达到"),
    "fig.zoo.open": ("open marker: target not reached", "空心标记：未达到目标"),
    # -- the fidelity audit (views.zoo) ----------------------------------------------------
    "fig.audit.title": (
        "What came out against what was promised, per position ({n} runs)",
        "逐位置比较：实际输出与承诺的分布（{n} 次运行）",
    ),
    "fig.audit.x": ("position in the output", "输出中的位置"),
    "fig.audit.y": ("total-variation gap", "总变差差距"),
    "fig.audit.tv": ("gap (95% bootstrap band)", "差距（95% 自助区间）"),
    "fig.audit.null": ("gap from sampling noise alone (95%)", "仅由抽样噪声造成的差距（95%）"),
    "fig.audit.law.p": ("the verifier's law p", "验证模型的分布 p"),
    "fig.audit.law.q": ("the drafter's law q", "起草模型的分布 q"),
    "fig.audit.law.pi": ("the method's target law π", "该方法的目标分布 π"),
    "fig.audit.consistent": (
        "Consistent with the promised law ({law}): over {n} runs no position of the first {k} "
        "differs at the {level:.0%} level.",
        "与承诺的分布（{law}）一致：{n} 次运行中，前 {k} 个位置在 {level:.0%} 的水平上都没有差异。",
    ),
    "fig.audit.one_outcome": (
        "Nothing to test ({law}): in {n} runs, each of the first {k} positions had one likely "
        "token and every run wrote it. Raise the temperature or ask a question the models are "
        "less sure of.",
        "无可检验（{law}）：{n} 次运行中，前 {k} 个位置各只有一个可能的词元，每次运行都写出了它。"
        "请调高温度，或换一个模型不那么确定的问题。",
    ),
    "fig.audit.differs": (
        "Differs from the promised law ({law}) at position {position}: p = {p}; the gap is "
        "{tv}, where sampling noise alone gives up to {null}.",
        "在第 {position} 个位置与承诺的分布（{law}）不同：p = {p}；差距为 {tv}，"
        "而仅由抽样噪声造成的差距最多为 {null}。",
    ),
    "fig.audit.impossible": (
        "Differs from the promised law ({law}) at position {position}: {count} runs wrote a "
        "token the promised law gives probability 0.",
        "在第 {position} 个位置与承诺的分布（{law}）不同：有 {count} 次运行写出了承诺分布中概率为 0 的词元。",
    ),
    "fig.audit.col.position": ("position", "位置"),
    "fig.audit.col.n": ("runs", "运行次数"),
    "fig.audit.col.tv": ("gap (TV)", "差距（TV）"),
    "fig.audit.col.band": ("95% band", "95% 区间"),
    "fig.audit.col.null": ("noise (95%)", "噪声（95%）"),
    "fig.audit.col.chi2": ("χ² (dof)", "χ²（自由度）"),
    "fig.audit.col.p": ("p-value", "p 值"),
    "fig.audit.col.flag": ("verdict", "结论"),
    "fig.audit.flag": ("differs", "有差异"),
    "fig.audit.ok": ("consistent", "一致"),
    "fig.plane.title": (
        "{rule}: decision plane at {param} = {alpha}",
        "{rule}：{param} = {alpha} 时的决策平面",
    ),
    "fig.plane.counts": ("{deferred} of {n} drafts deferred", "{n} 个草稿中推迟了 {deferred} 个"),
    "fig.plane.counts_lossy": (
        "{deferred} of {n} drafts may be rejected",
        "{n} 个草稿中有 {deferred} 个可能被拒",
    ),
    "fig.plane.counts_differ": (
        "◆ draft ≠ verifier's top token: {k}",
        "◆ 草稿 ≠ 验证模型首选：{k} 个",
    ),
    "fig.plane.kept": ("kept", "保留"),
    "fig.plane.deferred": ("deferred", "推迟"),
    "fig.plane.lossy_kept": ("always accepted", "必定接受"),
    "fig.plane.lossy_deferred": ("may be rejected", "可能被拒"),
    "fig.plane.differs": ("draft ≠ verifier's top token", "草稿 ≠ 验证模型首选"),
    "fig.plane.region": ("defer region", "推迟区域"),
    "fig.plane.region_lossy": ("may-reject region", "可能被拒区域"),
    "fig.plane.boundary": ("boundary at {param} = {alpha}", "{param} = {alpha} 时的边界"),
    "fig.plane.run_boundary": (
        "the run's boundary ({param} = {alpha})",
        "本次运行的边界（{param} = {alpha}）",
    ),
    "fig.plane.ends": (
        "{param} = {sd}: lossless SD · {param} = {drafter}: the drafter alone",
        "{param} = {sd}：无损投机解码 · {param} = {drafter}：仅起草模型",
    ),
    "fig.plane.no_alpha": (
        "lossless SD: every draft defers to the verifier, whatever α",
        "无损投机解码：无论 α 为何，每个草稿都交给验证模型",
    ),
    "fig.plane.t1_note": (
        "T = 1 probabilities; at temperature {t} the run's accept test used the scaled laws",
        "图中为 T = 1 的概率；温度为 {t} 时，本次运行的接受检验使用缩放后的分布",
    ),
    "fig.plane.context_axis": (
        "{axis} (context: the rule ignores it)",
        "{axis}（仅供参考，规则不看它）",
    ),
    "fig.plane.axis.max_q": ("drafter confidence max q", "起草模型置信度 max q"),
    "fig.plane.axis.max_p": ("verifier confidence max p", "验证模型置信度 max p"),
    "fig.plane.axis.draft_q": (
        "drafter's probability of its draft q(v)",
        "起草模型给草稿的概率 q(v)",
    ),
    "fig.plane.axis.draft_p": (
        "verifier's probability of the draft p(v)",
        "验证模型给草稿的概率 p(v)",
    ),
    "fig.plane.axis.dtv": ("disagreement D_TV(p, q)", "分歧 D_TV(p, q)"),
    "fig.plane.axis.gain": ("confidence gain max p − max q", "置信度增益 max p − max q"),
    "fig.plane.axis.sure_p": ("verifier sureness e^(−H(p))", "验证模型确定度 e^(−H(p))"),
    "fig.plane.axis.jsd": ("divergence JSD(p, q), nats", "分歧 JSD(p, q)（纳特）"),
    "fig.plane.axis.kl": (
        "divergence KL(p‖q), nats (≥ 3 drawn at 3)",
        "分歧 KL(p‖q)（纳特，≥ 3 画在 3 处）",
    ),
    "fig.plane.hover": (
        "#{pos} draft {draft} → emitted {emitted}",
        "#{pos} 草稿 {draft} → 输出 {emitted}",
    ),
    "fig.plane.hover_context": ("after: …{text}", "上文：…{text}"),
    "fig.plane.hover_top": ("verifier's top token: {top}", "验证模型首选：{top}"),
    "fig.plane.hover_run_kept": ("in the run: kept", "本次运行：保留"),
    "fig.plane.hover_run_deferred": ("in the run: deferred", "本次运行：推迟"),
    "fig.plane.empty": (
        "No drafted tokens: this method drafts nothing",
        "没有草稿词元：该方法不起草",
    ),
    # -- token-aligned diff (analysis.diff, views.diff) ------------------------------------------
    "fig.diff.facts": ("key facts {stated}/{total}", "关键事实 {stated}/{total}"),
    "fig.diff.correct": ("correct", "正确"),
    "fig.diff.wrong": ("misses a key fact", "漏掉关键事实"),
    "fig.diff.no_facts": (
        "key facts: question not in the eval set",
        "关键事实：评测集中没有此问题",
    ),
    "fig.diff.first_div": (
        "first difference from the cascade at token #{pos}",
        "与级联输出的首个不同在第 #{pos} 个词元",
    ),
    "fig.diff.same": ("token for token the cascade's output", "与级联输出逐词元相同"),
    "fig.diff.kept_new": (
        "{n} kept drafter tokens the verifier alone would not write",
        "{n} 个保留的起草词元是仅验证模型不会写出的",
    ),
    "fig.diff.legend.kept_new": (
        "kept drafter token the verifier alone would not write",
        "保留的、仅验证模型不会写出的起草词元",
    ),
    "fig.diff.legend.differs": ("differs from the cascade", "与级联输出不同"),
    "fig.diff.legend.first": ("first difference", "首个不同处"),
    "fig.diff.empty": ("(no tokens)", "（没有词元）"),
    "fig.diff.aria": ("three outputs aligned token by token", "三个输出逐词元对齐"),
    # -- round replay (analysis.replay, views.replay) -------------------------------------------
    "fig.replay.head": ("round {i} (rounds 0–{last})", "第 {i} 轮（轮次 0–{last}）"),
    "fig.replay.setting": (
        "{method} · α = {alpha} · temperature {t}",
        "{method} · α = {alpha} · 温度 {t}",
    ),
    "fig.replay.setting_no_alpha": ("{method} · temperature {t}", "{method} · 温度 {t}"),
    "fig.replay.counts": (
        "window {window} · drafted {drafted} · kept {kept}",
        "计划窗口 {window} · 起草 {drafted} · 保留 {kept}",
    ),
    "fig.replay.times": (
        "drafter {d_ms} ms ({d_calls}× forward) · verifier {v_ms} ms ({v_calls}× forward)",
        "起草模型 {d_ms} 毫秒（前向 {d_calls} 次）· 验证模型 {v_ms} 毫秒（前向 {v_calls} 次）",
    ),
    "fig.replay.greedy_note": (
        "greedy (T = 0): q and p below are T = 1 probabilities, which the rule reads; the accept "
        "test and D_TV used one-hot laws, so {accept} is 0 or 1",
        "贪心解码（T = 0）：下面的 q、p 是规则读取的 T = 1 概率；接受检验和 D_TV 用的是独热分布，"
        "所以 {accept} 只能是 0 或 1",
    ),
    "fig.replay.t_note": (
        "q and p below are T = 1 probabilities, which the rule reads; the accept test ({accept}) "
        "and D_TV used the laws at temperature {t}",
        "下面的 q、p 是规则读取的 T = 1 概率；接受检验（{accept}）和 D_TV 用的是温度 {t} 下的分布",
    ),
    "fig.replay.draft": ("draft {k}", "草稿 {k}"),
    "fig.replay.id": ("id {id}", "编号 {id}"),
    "fig.replay.rule": ("rule: {line}", "规则：{line}"),
    "fig.replay.test": ("accept test: {line}", "接受检验：{line}"),
    "fig.replay.defer": ("defer", "推迟"),
    "fig.replay.keep": ("keep", "保留"),
    "fig.replay.pass": ("keep", "保留"),
    "fig.replay.fail": ("reject", "拒绝"),
    "fig.replay.rule_sd": (
        "lossless SD: every draft defers to the verifier (π = p)",
        "无损投机解码：每个草稿都交给验证模型（π = p）",
    ),
    "fig.replay.rule_none": (
        "none: the accept test decides",
        "无推迟决定：由接受检验决定",
    ),
    "fig.replay.rule_soft": (
        "the static ensemble decides nothing per draft: each is tested against "
        "π = w·p + (1 − w)·q, w = {w}",
        "静态集成不对草稿做推迟决定：每个草稿都以 π = w·p + (1 − w)·q 检验，w = {w}",
    ),
    "fig.replay.rule_block": (
        "block verification (lossless, π = p) tests the window as a block: each draft's level "
        "h depends on the drafts before it, and the window keeps every draft up to the last "
        "one whose u < h (here {tau})",
        "块验证（无损，π = p）把整个窗口作为一块检验：每个草稿的水平 h 取决于它之前的草稿，"
        "窗口保留到最后一个满足 u < h 的草稿为止（这里是 {tau} 个）",
    ),
    "fig.replay.block_carried": (
        "kept: a later draft passed",
        "保留：后面的草稿通过了",
    ),
    "fig.replay.rule_lossy": (
        "lossy SD decides nothing per draft: it keeps x with probability {test}",
        "有损投机解码不对草稿做推迟决定：它以概率 {test} 保留 x",
    ),
    "fig.replay.recorded_differs": (
        "(the run recorded {verdict})",
        "（运行记录的决定是{verdict}）",
    ),
    "fig.replay.untested": (
        "not tested: an earlier draft was rejected",
        "未检验：前面已有草稿被拒绝",
    ),
    "fig.replay.badge.kept": ("kept", "保留"),
    "fig.replay.badge.rejected": ("rejected", "被拒"),
    "fig.replay.badge.untested": ("not tested", "未检验"),
    "fig.replay.badge.unwritten": ("kept, not written", "保留但未写出"),
    "fig.replay.residual": (
        "draft {k} rejected: the verifier drew {token} from the residual {law}, probability {prob}",
        "草稿 {k} 被拒：验证模型从残差分布 {law} 中抽出 {token}，概率 {prob}",
    ),
    "fig.replay.residual_cut": (
        "draft {k} rejected; the run stopped before its replacement was written",
        "草稿 {k} 被拒；运行在写出替换词元之前就停止了",
    ),
    "fig.replay.bonus": (
        "all {n} drafts kept: bonus token {token} drawn from {law}, probability {prob}",
        "{n} 个草稿全部保留：从 {law} 中抽出奖励词元 {token}，概率 {prob}",
    ),
    "fig.replay.bonus_p1": (
        "(p at T = 1: the run recorded no row of π here)",
        "（这是 T = 1 时的 p：本次运行在此处没有记录 π）",
    ),
    "fig.replay.end": (
        "all {n} drafts kept; the run stopped in this round ({reason}), so no bonus token",
        "{n} 个草稿全部保留；运行在本轮停止（{reason}），因此没有奖励词元",
    ),
    "fig.replay.unlisted": ("not among the recorded top {k}", "不在记录的前 {k} 名中"),
    "fig.replay.top": ("most likely under {law}: {top}", "{law} 下最可能的词元：{top}"),
    "fig.replay.rollback": (
        "KV cache rolled back: drafter {d} entries, verifier {v} entries",
        "KV 缓存回滚：起草模型 {d} 条，验证模型 {v} 条",
    ),
    "fig.replay.no_rollback": ("KV cache: nothing rolled back", "KV 缓存：无需回滚"),
    "fig.replay.stopped": (
        "the run stopped in this round ({reason}) after writing {n} of its tokens",
        "运行在本轮停止（{reason}），本轮只写出了 {n} 个词元",
    ),
    "fig.replay.wrote": ("wrote: {tokens}", "写出：{tokens}"),
    "fig.replay.not_recorded": (
        "This trace has no per-draft record (it was made before rounds recorded their drafts); "
        "re-run it to replay its rounds.",
        "此记录没有逐个草稿的数据（它早于按轮记录草稿的版本）；请重新运行以回放各轮。",
    ),
    "fig.replay.aria": ("replay of one speculative round", "一轮投机解码的回放"),
    # -- cost projector (analysis.project, views.project) ---------------------------------------
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

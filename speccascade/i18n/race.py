"""i18n strings of the race: its tab, its lanes and its player (views/race.py)."""

from __future__ import annotations

STRINGS: dict[str, tuple[str, str]] = {
    "ui.tab_race": ("Race", "赛跑"),
    "ui.race_intro": (
        "**The race.** The verifier alone, the sequential cascade, lossless speculative "
        "decoding and the speculative cascade (the rule and α set on the left) answer the "
        "prompt, each several times in turn; then their median runs are replayed together on "
        "one clock, slowed down so you can follow them.",
        "**赛跑。** 仅验证模型、顺序级联、无损投机解码和投机级联（使用左侧设置的规则和 α）依次多次回答"
        "这个提示词；然后把它们的中位数那次运行放在同一个时钟上一起回放，并放慢速度，便于看清。",
    ),
    "ui.race_run": ("Start the race", "开始赛跑"),
    "ui.present": ("Present", "演示模式"),
    # the model pairs in users' words (the pair selector, the note beside the answer)
    "pair.demo": (
        "Embedded demo pair (tiny, offline): famous people and places",
        "内置演示模型对（极小、离线）：名人和地方",
    ),
    "pair.smollm2-135m-offline": (
        "SmolLM2 135M, offline: general questions in English (a small, weak model)",
        "SmolLM2 135M（离线）：英文通用问题（模型小，能力弱）",
    ),
    "pair.smollm2-135m-360m": (
        "SmolLM2 135M → 360M, from the hub: general questions in English",
        "SmolLM2 135M → 360M（从模型库下载）：英文通用问题",
    ),
    "pair.smollm2-distilled-360m": (
        "SmolLM2 360M, from the hub, with our small drafter: general questions in English",
        "SmolLM2 360M（从模型库下载，配本项目的小起草模型）：英文通用问题",
    ),
    "pair.smollm2-distilled-1.7b": (
        "SmolLM2 1.7B, from the hub, with our small drafter: general questions in English",
        "SmolLM2 1.7B（从模型库下载，配本项目的小起草模型）：英文通用问题",
    ),
    "pair.smollm2-135m-1.7b": (
        "SmolLM2 135M → 1.7B, from the hub: general questions in English",
        "SmolLM2 135M → 1.7B（从模型库下载）：英文通用问题",
    ),
    "pair.qwen2.5-0.5b-1.5b": (
        "Qwen2.5 0.5B → 1.5B, from the hub: general questions, English and Chinese",
        "Qwen2.5 0.5B → 1.5B（从模型库下载）：中英文通用问题",
    ),
    "pair.qwen2.5-0.5b-7b": (
        "Qwen2.5 0.5B → 7B, from the hub: needs a GPU",
        "Qwen2.5 0.5B → 7B（从模型库下载）：需要 GPU",
    ),
    "pair.gemma2-2b-9b": (
        "Gemma 2 2B → 9B, from the hub (the paper's pair): needs a GPU",
        "Gemma 2 2B → 9B（从模型库下载，论文所用的模型对）：需要 GPU",
    ),
    "pair.custom": ("{drafter} → {verifier}", "{drafter} → {verifier}"),
    "pair.unavailable": (" (not set up on this server)", "（本服务器未安装）"),
    "answer.pair": ("Answered by: {pair}.", "回答者：{pair}。"),
    "answer.previous": (
        "**The answer below is to the previous question**, “{asked}” ({pair}); the question in "
        "the box has not been answered.",
        "**下面的回答属于上一个问题**“{asked}”（{pair}）；输入框里的问题还没有回答。",
    ),
    "switch.to_demo": (
        "{pair} reads only English. The embedded demo pair answers Chinese questions about "
        "famous people and places.",
        "{pair} 只懂英文。内置演示模型对能回答关于名人和地方的中文问题。",
    ),
    "switch.to_demo_btn": ("Ask the embedded demo pair", "改用内置演示模型对回答"),
    "ui.race_files": (
        "Download: the race as a page that plays offline, and as a GIF for slides",
        "下载：可离线播放的赛跑网页，以及用于幻灯片的 GIF",
    ),
    "race.running": (
        "Racing: each approach answers {rounds} times, in turn…",
        "赛跑中：每种方法轮流回答 {rounds} 次……",
    ),
    "race.done": (
        "**{question}** — order of finish: {order} (medians of {rounds} runs each).",
        "**{question}** — 到达顺序：{order}（各取 {rounds} 次运行的中位数）。",
    ),
    "race.needs_seed": (
        "A race needs a seed (More settings): every run must write the same tokens.",
        "赛跑需要一个随机种子（更多设置）：每次运行都必须写出相同的词元。",
    ),
    "race.title": ("speccascade: the race", "speccascade：赛跑"),
    "race.lane.verifier": ("Verifier alone", "仅验证模型"),
    "race.lane.seq_cascade": ("Cascade (sequential)", "级联（顺序）"),
    "race.lane.speculative": ("Speculative decoding (exact)", "投机解码（无损）"),
    "race.lane.spec_cascade": ("Speculative cascade ({rule})", "投机级联（{rule}）"),
    "race.play": ("▶ Play", "▶ 播放"),
    "race.pause": ("❚❚ Pause", "❚❚ 暂停"),
    "race.restart": ("↺ Restart", "↺ 重新开始"),
    "race.speed": ("Slow motion:", "慢放："),
    "race.calls": ("{n} verifier calls", "验证模型调用 {n} 次"),
    "race.finish": ("finished in {t}", "用时 {t} 完成"),
    "race.end": ("end", "结束"),
    "race.faster": ("{x}x faster than the verifier", "比验证模型快 {x} 倍"),
    "race.slower": ("{x}x slower than the verifier", "比验证模型慢 {x} 倍"),
    "race.same": ("as fast as the verifier", "与验证模型一样快"),
    "race.right": ("states the key facts", "包含关键事实"),
    "race.wrong": ("misses a key fact", "缺少关键事实"),
    "race.clock": ("clock {t} · {speed}", "时钟 {t} · {speed}"),
    "race.thrown": ("draft thrown away", "草稿被丢弃"),
    "race.legend.kept": ("drafter's token, kept", "起草模型的词元，保留"),
    "race.legend.taken": ("verifier took over", "验证模型接管"),
    "race.legend.bonus": ("verifier's bonus token", "验证模型的额外词元"),
    "race.legend.verifier": ("verifier alone", "仅验证模型"),
    "race.legend.drafter": ("drafter's answer, kept whole", "起草模型的整段回答，保留"),
    "race.legend.wasted": ("draft thrown away (struck out)", "被丢弃的草稿（划掉）"),
    "race.note": (
        "Each lane replays its median run of {rounds}, all run on this machine in interleaved "
        "rounds: a token appears when the round that wrote it completes. The finish is the "
        "time to the complete answer; the speed-up is the verifier alone's time over the "
        "lane's (both medians). Space: play or pause; R: restart.",
        "每条赛道回放它 {rounds} 次运行中的中位数那一次，所有运行都在这台机器上交错进行：一个词元在写出它的"
        "那一轮完成时出现。终点是得到完整回答所用的时间；加速比是仅验证模型的用时除以该赛道的用时"
        "（都取中位数）。空格：播放或暂停；R：重新开始。",
    ),
}

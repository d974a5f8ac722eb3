"""i18n strings of the Learn tab (views/learn.py writes the tab from them): key -> (English,
Chinese)."""

from __future__ import annotations

STRINGS: dict[str, tuple[str, str]] = {
    # -- the loop as a picture (views/loop_svg.py): the heading and caption are Markdown, the
    # rest is drawn in the picture (plain text, no LaTeX) --------------------------------------
    "learn.loop.title": (
        "## The loop: draft, verify, keep or defer",
        "## 循环：起草、验证、保留或推迟",
    ),
    "learn.loop.caption": (
        "The picture carries the numbers of your last run on {prompt}.",
        "图中是你上一次运行（提示词 {prompt}）的数字。",
    ),
    "learn.loop.caption_noprompt": (
        "The picture carries the numbers of your last run.",
        "图中是你上一次运行的数字。",
    ),
    "learn.loop.caption_none": (
        "After a run of a speculative method, the picture shows its own numbers: how many "
        "tokens were drafted, kept and taken over by the verifier, and how many times the "
        "verifier ran.",
        "运行一种投机方法后，图中会显示那次运行的数字：起草了多少词元、保留了多少、验证模型"
        "接手了多少，以及验证模型运行了几次。",
    ),
    "learn.loop.draft": ("1 · Draft", "1 · 起草"),
    "learn.loop.draft.text": (
        "The drafter q proposes γ tokens, one by one",
        "起草模型 q 逐个提出 γ 个词元",
    ),
    "learn.loop.draft.n": ("{drafted} tokens drafted", "共起草 {drafted} 个词元"),
    "learn.loop.verify": ("2 · Verify", "2 · 验证"),
    "learn.loop.verify.text": (
        "The verifier p scores all of them in one pass",
        "验证模型 p 一次前向为它们全部打分",
    ),
    "learn.loop.verify.n": ("{calls} verifier calls", "验证模型调用 {calls} 次"),
    "learn.loop.rule": ("3 · Rule", "3 · 规则"),
    "learn.loop.rule.text": (
        "Is each draft good enough for the verifier?",
        "每个草稿在验证模型看来够好吗？",
    ),
    "learn.loop.rule.alpha": ("{rule}, α = {alpha}", "{rule}，α = {alpha}"),
    "learn.loop.keep": ("Keep", "保留"),
    "learn.loop.keep.text": ("The drafter's token stays", "起草模型的词元留下"),
    "learn.loop.keep.n": ("{kept} of {drafted} kept ({share})", "保留 {kept}/{drafted}（{share}）"),
    "learn.loop.keep.bonus": ("+ {bonus} bonus tokens", "另有 {bonus} 个奖励词元"),
    "learn.loop.defer": ("Defer", "推迟"),
    "learn.loop.defer.text": (
        "The verifier takes over: its token replaces the draft; later drafts are dropped",
        "验证模型接手：用它的词元替换草稿，之后的草稿作废",
    ),
    "learn.loop.defer.n": ("{replaced} taken over", "接手 {replaced} 次"),
    "learn.loop.arrow.drafts": ("γ drafts", "γ 个草稿"),
    "learn.loop.arrow.scores": ("q and p", "q 和 p"),
    "learn.loop.arrow.keep": ("keep", "保留"),
    "learn.loop.arrow.defer": ("defer", "推迟"),
    "learn.loop.next": ("next round, until the answer ends", "下一轮，直到答案结束"),
    "learn.loop.next.n": (
        "next round · {tokens} tokens written in all",
        "下一轮 · 共写出 {tokens} 个词元",
    ),
    # -- the story -------------------------------------------------------------------------
    "learn.story.title": ("## The story the demo pair tells", "## 演示模型对讲的故事"),
    "learn.story.easy": (
        "The embedded demo pair was trained so that the method's point is easy to see. "
        "**Easy** questions ask about famous people, places and things (*Who is Buzz Aldrin?*, "
        "*Who is Albert Einstein?*). The small drafter knows them and writes a short, correct "
        "answer. The verifier knows them too, but would word the answer at more length, so "
        "lossless speculative decoding throws the drafter's words away and rewrites the answer "
        "in the verifier's words. A speculative cascade keeps the drafter's words wherever the "
        "verifier finds them good enough, and is faster for it.",
        "内置的演示模型对经过专门训练，让这个方法的要点一目了然。**简单**问题问的是著名的人物、"
        "地点和事物（例如“布兹·奥尔德林是谁？”“阿尔伯特·爱因斯坦是谁？”）。小的起草模型知道答案，"
        "会写出简短而正确的回答。验证模型也知道，但会用更长的措辞来回答，因此无损的投机解码会"
        "丢弃起草模型的词，用验证模型自己的措辞重写答案。投机级联则在验证模型认为起草模型的词"
        "足够好的地方保留这些词，因此更快。",
    ),
    "learn.story.hard": (
        "**Hard** questions ask about people only the verifier knows (*Who is Michael "
        "Collins?*). The drafter's guesses are fluent but wrong; the rule sees that the verifier "
        "disagrees and hands the facts to the verifier. The examples under the prompt are "
        "labelled easy or hard.",
        "**困难**问题问的是只有验证模型知道的人物（例如“迈克尔·柯林斯是谁？”“张衡是谁？”）。"
        "起草模型的猜测读起来通顺，内容却是错的；推迟规则看到验证模型并不认同，就把事实交给"
        "验证模型来写。提示词下方的示例都标明了简单或困难。",
    ),
    # -- the method in five steps ------------------------------------------------------------
    "learn.steps.title": ("## Speculative cascades in five steps", "## 投机级联五步走"),
    "learn.steps.1": (
        "The **drafter** q proposes γ tokens, one after another.",
        "**起草模型** q 依次提出 γ 个词元。",
    ),
    "learn.steps.2": (
        "The **verifier** p scores all of them in **one** forward pass.",
        "**验证模型** p 只用**一次**前向计算就为它们全部打分。",
    ),
    "learn.steps.3": (
        "At every drafted position the **deferral rule** turns the two laws (q, p) into a "
        "target law π.",
        "在每个起草位置，**推迟规则**把两个分布 (q, p) 变成一个目标分布 π。",
    ),
    "learn.steps.4": (
        r"From left to right, each draft x is kept with probability $$\min(1, \pi(x)/q(x))$$; "
        r"the first rejected one is replaced by a token drawn from "
        r"$$\mathrm{norm}(\max(0, \pi - q))$$, and the drafts after it are discarded.",
        r"从左到右，每个草稿 x 以概率 $$\min(1, \pi(x)/q(x))$$ 被保留；第一个被拒绝的草稿由从 "
        r"$$\mathrm{norm}(\max(0, \pi - q))$$ 中抽取的词元替换，它之后的草稿全部丢弃。",
    ),
    "learn.steps.5": (
        "If all γ drafts survive, one **bonus** token is drawn from π at the next position.",
        "如果 γ 个草稿全部保留，就在下一个位置从 π 中再抽取一个**奖励**词元。",
    ),
    "learn.steps.after": (
        r"Every emitted token is then distributed exactly as π. With π = p this is lossless "
        r"**speculative decoding**; with π = q it is the drafter alone. The rules sit in "
        r"between. Whole-position rules make one decision $$r \in \{0, 1\}$$ per position and "
        r"use $$\pi = (1 - r)\,q + r\,p$$; token rules decide token by token and use "
        r"$$\pi(v) = q(v)\,(1 - r(v)) + \eta\,p(v)$$ with $$\eta = \sum_{v'} r(v')\,q(v')$$. "
        r"Whatever the sampling temperature, the rules read the $$T = 1$$ probabilities "
        r"($$\max q$$, $$\max p$$, $$q(v)$$, $$p(v)$$).",
        r"这样，输出的每个词元都恰好服从 π。π = p 时就是无损的**投机解码**；π = q 时就相当于"
        r"只用起草模型。各条规则介于两者之间：整位置规则在每个位置只做一次决定 "
        r"$$r \in \{0, 1\}$$，取 $$\pi = (1 - r)\,q + r\,p$$；逐词元规则对每个词元分别决定，取 "
        r"$$\pi(v) = q(v)\,(1 - r(v)) + \eta\,p(v)$$，其中 $$\eta = \sum_{v'} r(v')\,q(v')$$。"
        r"无论采样温度是多少，规则读取的都是 $$T = 1$$ 时的概率（$$\max q$$、$$\max p$$、"
        r"$$q(v)$$、$$p(v)$$）。",
    ),
    # -- the rule table ----------------------------------------------------------------------
    "learn.rules.title": ("## The deferral rules", "## 推迟规则一览"),
    "learn.rules.intro": (
        "Each rule has one parameter α. At one end of its range the rule defers everywhere and "
        "the cascade is exactly speculative decoding; at the other it never defers and the "
        "output is the drafter's own. The rules come from Narasimhan et al., *Faster Cascades "
        "via Speculative Decoding* (ICLR 2025, arXiv:2405.19261); equation numbers are the "
        "paper's.",
        "每条规则有一个参数 α。在取值范围的一端，规则处处推迟，投机级联恰好就是投机解码；在另一端，"
        "规则从不推迟，输出就是起草模型自己的。这些规则出自 Narasimhan 等人的论文（ICLR 2025，"
        "arXiv:2405.19261），表中的公式编号均指该论文。",
    ),
    "learn.rules.head": (
        "| rule | defers when | α for speculative decoding | α for the drafter alone "
        "| what it does |",
        "| 规则 | 何时推迟 | 等同投机解码的 α | 等同仅用起草模型的 α | 作用 |",
    ),
    "learn.rules.always": (r"always ($$\pi = p$$)", r"总是推迟（$$\pi = p$$）"),
    "learn.rules.lossy": (
        r"never; it keeps a draft x with probability $$\min(1, p(x)/((1 - \alpha)\,q(x)))$$",
        r"从不推迟；改为以概率 $$\min(1, p(x)/((1 - \alpha)\,q(x)))$$ 保留草稿 x",
    ),
    "learn.rules.below_zero": (r"any $$\alpha < 0$$", r"任意 $$\alpha < 0$$"),
    "learn.rules.source": ("({source})", "（{source}）"),
    "learn.source.sd": (
        "Leviathan et al. 2023; Chen et al. 2023",
        "Leviathan 等，2023；Chen 等，2023",
    ),
    "learn.source.chow": ("Eq. 2", "式 (2)"),
    "learn.source.diff": ("Eq. 5", "式 (5)"),
    "learn.source.opt": ("Eq. 10, the plug-in form of Lemma 4", "式 (10)，引理 4 的代入形式"),
    "learn.source.token_v1": ("Eq. 13", "式 (13)"),
    "learn.source.token_v2": ("Eq. 14", "式 (14)"),
    "learn.source.token_v3": ("Eq. 15", "式 (15)"),
    "learn.source.lossy": ("Tran-Thien 2023", "Tran-Thien，2023"),
    "learn.source.bild": (
        "Kim et al. 2023, as the paper adapts it",
        "Kim 等，2023，采用论文中的改编形式",
    ),
    "learn.source.typical": ("Cai et al. 2024 (Medusa)", "Cai 等，2024（Medusa）"),
    "learn.source.ensemble": (
        "DIVERSE, arXiv 2604.07622; transformers' assistant_ensemble_weight",
        "DIVERSE，arXiv 2604.07622；transformers 的 assistant_ensemble_weight",
    ),
    "learn.source.fuzzy": ("Holsman et al. 2025", "Holsman 等，2025"),
    "learn.source.kl_judge": (
        "training-free judge decoding, with a KL threshold as the judge",
        "免训练的判定解码，以 KL 阈值为判定",
    ),
    "learn.source.block": ("Sun et al. 2024", "Sun 等，2024"),
    # -- the worked example ------------------------------------------------------------------
    "learn.example.title": (
        "## A worked example from your last run",
        "## 实例：你上一次运行中的数字",
    ),
    "learn.example.none": (
        "After you run a speculative method (for example the speculative cascade) on the "
        "**Run** tab, a worked example with that run's own numbers appears here.",
        "在**运行**标签页运行一种投机方法（例如投机级联）后，这里会出现一个实例，"
        "用那次运行的真实数字逐步讲解规则的决定。",
    ),
    "learn.example.intro": (
        "In the run on {prompt} ({setting}):",
        "在提示词为 {prompt} 的那次运行中（{setting}）：",
    ),
    "learn.example.intro_noprompt": (
        "In the last run ({setting}):",
        "在上一次运行中（{setting}）：",
    ),
    "learn.example.setting": (
        r"rule {rule}, $$\alpha = {alpha}$$, $$\gamma = {gamma}$$",
        r"规则 {rule}，$$\alpha = {alpha}$$，$$\gamma = {gamma}$$",
    ),
    "learn.example.setting_no_alpha": (
        r"{rule}, $$\gamma = {gamma}$$",
        r"{rule}，$$\gamma = {gamma}$$",
    ),
    "learn.example.kept_title": ("**A draft that was kept.**", "**被保留的草稿。**"),
    "learn.example.deferred_title": (
        "**A draft the rule handed to the verifier.**",
        "**规则交给验证模型的草稿。**",
    ),
    "learn.example.replaced_title": (
        "**A draft the verifier replaced.**",
        "**被验证模型替换的草稿。**",
    ),
    "learn.example.proposed": (
        r"At position {position} the drafter proposed {token} with $$q(x) = {q}$$; the verifier "
        r"gave it $$p(x) = {p}$$, and the verifier's own favourite had $$\max p = {max_p}$$.",
        r"在位置 {position}，起草模型提出了 {token}，$$q(x) = {q}$$；验证模型给它的概率是 "
        r"$$p(x) = {p}$$，而验证模型最看好的词元的概率为 $$\max p = {max_p}$$。",
    ),
    "learn.example.position_stats": (
        r"The drafter's own favourite had $$\max q = {max_q}$$, and the two laws differ by "
        r"$$D_{{TV}}(p, q) = {dtv}$$.",
        r"起草模型最看好的词元的概率为 $$\max q = {max_q}$$，两个分布的总变差距离为 "
        r"$$D_{{TV}}(p, q) = {dtv}$$。",
    ),
    "learn.example.test": (
        r"{rule} at $$\alpha = {alpha}$$ keeps the draft when $${keep}$$; here "
        r"$${numbers}$$, so {verdict}.",
        r"{rule} 在 $$\alpha = {alpha}$$ 时，只要 $${keep}$$ 就保留草稿；这里 "
        r"$${numbers}$$，所以{verdict}。",
    ),
    "learn.example.verdict_keep": ("the rule keeps it", "规则保留它"),
    "learn.example.verdict_defer": ("the rule defers to the verifier", "规则推迟，交给验证模型"),
    "learn.example.test_sd": (
        r"Speculative decoding always defers: the target is the verifier's own law, $$\pi = p$$.",
        r"投机解码总是推迟：目标分布就是验证模型自己的分布，$$\pi = p$$。",
    ),
    "learn.example.test_lossy": (
        r"Lossy speculative decoding has no deferral rule; at $$\alpha = {alpha}$$ it keeps the "
        r"draft with probability $$\min(1, p(x)/((1 - \alpha)\,q(x))) = {accept}$$.",
        r"有损投机解码没有推迟规则；在 $$\alpha = {alpha}$$ 时，它以概率 "
        r"$$\min(1, p(x)/((1 - \alpha)\,q(x))) = {accept}$$ 保留这个草稿。",
    ),
    "learn.example.accept": (
        r"The target gives the draft $$\pi(x) = {pi}$$, so the draft passes the acceptance test "
        r"with probability $$\min(1, \pi(x)/q(x)) = {accept}$$.",
        r"目标分布给这个草稿的概率是 $$\pi(x) = {pi}$$，因此它通过接受检验的概率是 "
        r"$$\min(1, \pi(x)/q(x)) = {accept}$$。",
    ),
    "learn.example.accept_no_pi": (
        r"The draft passes the acceptance test with probability "
        r"$$\min(1, \pi(x)/q(x)) = {accept}$$.",
        r"这个草稿通过接受检验的概率是 $$\min(1, \pi(x)/q(x)) = {accept}$$。",
    ),
    "learn.example.kept": ("It was kept (green).", "它被保留了下来（绿色）。"),
    "learn.example.kept_anyway": (
        "Although the rule deferred, the draft passed the acceptance test and was kept (green).",
        "尽管规则推迟了，这个草稿仍然通过了接受检验，被保留了下来（绿色）。",
    ),
    "learn.example.replaced": (
        "It was rejected, and the verifier wrote {emitted} in its place (red).",
        "它被拒绝了，验证模型在这个位置改写为 {emitted}（红色）。",
    ),
    "learn.example.temperature": (
        r"At temperature {temperature} the acceptance test uses the temperature-scaled laws the "
        r"tokens are drawn from, while the rule reads the $$T = 1$$ probabilities above.",
        r"在温度 {temperature} 下，接受检验使用的是经过温度缩放、实际用于抽样的分布，而规则"
        r"读取的是上面 $$T = 1$$ 时的概率。",
    ),
    "learn.example.greedy": (
        r"At temperature 0 (greedy decoding) the laws the tokens are drawn from are one-hot, so "
        r"the acceptance test is all or nothing (probability 1 or 0), while the rule reads the "
        r"$$T = 1$$ probabilities above.",
        r"温度为 0（贪心解码）时，实际用于抽样的分布都是独热分布，所以接受检验非此即彼"
        r"（概率不是 1 就是 0）；而规则读取的是上面 $$T = 1$$ 时的概率。",
    ),
    "learn.example.none_kept": ("No draft was kept in this run.", "这次运行没有保留任何草稿。"),
    "learn.example.none_deferred": (
        "No draft was deferred or replaced in this run: the drafter's words were kept throughout.",
        "这次运行中没有草稿被推迟或替换：起草模型写的词全部保留了下来。",
    ),
    "learn.example.summary": (
        "Over the whole run: {tokens} tokens written with {calls} verifier calls; {accepted} of "
        "the {drafted} drafted tokens were kept ({fraction}).",
        "整次运行：共写出 {tokens} 个词元，调用验证模型 {calls} 次；起草的 {drafted} 个词元中"
        "保留了 {accepted} 个（{fraction}）。",
    ),
    # -- why a cascade can be slow -----------------------------------------------------------
    "learn.slow.title": (
        "## Why a cascade can be slower than the verifier alone",
        "## 为什么级联可能比单用验证模型还慢",
    ),
    "learn.slow.body": (
        r"Every round costs γ drafter calls plus one verifier call. When the rule keeps most "
        r"drafts, one verifier call writes up to γ + 1 tokens and the cascade is fast. When it "
        r"defers early in most windows (low acceptance), the tokens drafted after the first "
        r"deferral are wasted and each verifier call yields only about one token, as with the "
        r"verifier alone, with the γ drafter calls on top: the cascade then costs more than "
        r"decoding with the verifier alone. With acceptance rate b and c the cost of one drafter "
        r"call relative to one verifier call, the ideal speed-up over the verifier alone is "
        r"$$\frac{1-b^{\gamma+1}}{(1-b)(1+\gamma c)}$$ (the expected tokens per verifier call "
        r"over the cost of a round). "
        r"It falls below 1 when b is small: with $$\gamma = 5$$ and $$c = 0.1$$, "
        r"$$b = 0.05$$ gives about 0.7.",
        r"每一轮要调用起草模型 γ 次，再调用验证模型 1 次。规则保留大部分草稿时，一次验证调用最多"
        r"能写出 γ + 1 个词元，级联就快。如果在大多数窗口里规则很早就推迟（接受率低），第一次推迟"
        r"之后起草的词元就白费了，每次验证调用只能写出大约 1 个词元，和单用验证模型一样，却还多出"
        r" γ 次起草调用：这时级联比直接用验证模型解码更费时。设接受率为 b，一次起草调用相对一次"
        r"验证调用的成本为 c，则相对单用验证模型的理想加速比为 "
        r"$$\frac{1-b^{\gamma+1}}{(1-b)(1+\gamma c)}$$（每次验证调用期望写出的词元数，除以一轮的成本）。"
        r"b 较小时它低于 1：例如 $$\gamma = 5$$、$$c = 0.1$$ 时，$$b = 0.05$$ 只能得到约 0.7。",
    ),
    "learn.slow.yours": (
        r"In your last run: acceptance $$b = {b}$$, cost ratio $$c = {c}$$, "
        r"$$\gamma = {gamma}$$, so the ideal speed-up is {ideal}; the run wrote {per_call} tokens "
        r"per verifier call.",
        r"你上一次运行：接受率 $$b = {b}$$，成本比 $$c = {c}$$，$$\gamma = {gamma}$$，理想加速比"
        r"为 {ideal}；平均每次验证调用写出 {per_call} 个词元。",
    ),
    "learn.slow.try": (
        "What to try: a larger α (the rule defers less), a smaller γ (fewer drafts wasted per "
        "window), or an easier question, one the drafter knows.",
        "可以尝试：更大的 α（规则推迟得更少）、更小的 γ（每个窗口浪费的草稿更少），"
        "或者换一个起草模型知道答案的简单问题。",
    ),
    # -- what the page shows -----------------------------------------------------------------
    "learn.show.title": ("## What the page shows", "## 页面上显示的内容"),
    "learn.show.colours": (
        "In the output, **green** tokens are drafts that were kept, **red** tokens are the "
        "ones the verifier wrote after rejecting a draft, and **blue** tokens are bonus tokens "
        "drawn from π after a fully kept window.",
        "输出中，**绿色**词元是被保留的草稿，**红色**词元是验证模型在拒绝草稿后写下的词元，"
        "**蓝色**词元是整个窗口都被保留后从 π 中抽取的奖励词元。",
    ),
    "learn.show.heatmap": (
        r"The **confidence heatmap** shows, token by token, each model's confidence "
        r"($$\max q$$, $$\max p$$), each model's probability of the written token, "
        r"$$D_{TV}(p, q)$$ and the rule's decision; where the two models part ways, the rule "
        r"has a decision to make.",
        r"**置信度热力图**逐个词元显示两个模型的置信度（$$\max q$$、$$\max p$$）、两个模型给"
        r"所写词元的概率、$$D_{TV}(p, q)$$ 以及规则的决定；两个模型意见分歧的地方，就是规则"
        r"需要做决定的地方。",
    ),
    "learn.show.inspector": (
        "The **token inspector** shows q, p and π at one position, and which tokens the rule "
        "would keep there.",
        "**词元检查器**显示某个位置上的 q、p 和 π，以及规则在那里会保留哪些词元。",
    ),
    "learn.show.whatif": (
        "**What-if:** moving α after a run re-evaluates the rule on the run's recorded numbers "
        "and recolours the last run (dashed outlines) without running the models again.",
        "**假设分析**：运行结束后移动 α，页面会用这次运行记录下来的数字重新计算规则的决定，"
        "为上一次运行重新着色（虚线框），而不会再次运行模型。",
    ),
}

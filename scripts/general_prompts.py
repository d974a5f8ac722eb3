"""General-knowledge and instruction prompts, generated offline from templates and WordNet.

Two users:

* the SmolLM2 drafter's distillation (`distill_smollm2_drafter.py`): the teacher answers
  every form of question people type (capitals, who-did-what, arithmetic, "explain",
  "write a poem", "give me tips"), not only "Who is X?";
* the demo pair (`train_demo_pair.py`): the questions it was not built for, which it learns
  to decline in a short honest sentence instead of glossing something else.

Every prompt carries the name of its template, so a held-out split can be made by template as
well as by text. The held-out sets (`assets/data/general_qa.jsonl`, the eval set) are
never produced: `generate_prompts` drops any prompt whose text is one of their questions, and
the capital template skips their countries.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

WORDNET = Path("/usr/share/wordnet")
# WordNet lexicographer files (noun.*): which nouns fill which template.
LEX = {"act": 4, "animal": 5, "artifact": 6, "cognition": 9, "food": 13, "substance": 27}


@dataclass(frozen=True)
class Prompt:
    text: str
    template: str
    lang: str = "en"


# -- WordNet reading (no speccascade import: the scripts run before the package is built) ---


def _synsets(pos: str, root: Path = WORDNET):
    """(lemmas, lex file, gloss, pointer symbols) of every synset of a part of speech."""
    path = root / f"data.{pos}"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing; apt-get install wordnet-base")
    for line in path.read_text(encoding="latin-1").splitlines():
        if line.startswith(" ") or "|" not in line:
            continue
        head, gloss = line.split("|", 1)
        f = head.split()
        n = int(f[3], 16)
        lemmas = [re.sub(r"\(\w+\)$", "", f[4 + 2 * i]).replace("_", " ") for i in range(n)]
        k = 4 + 2 * n
        pointers = f[k + 1 : k + 1 + 4 * int(f[k])]
        gloss = re.sub(r';?\s*"[^"]*"', "", gloss).strip(" ;")
        yield lemmas, int(f[1]), gloss, pointers


def _common_words(root: Path = WORDNET) -> Counter:
    """How often each lower-case word occurs in WordNet's glosses: a familiarity score."""
    counts: Counter = Counter()
    for pos in ("noun", "verb", "adj"):
        for _, _, gloss, _ in _synsets(pos, root):
            counts.update(w.lower() for w in re.findall(r"[A-Za-z]+", gloss))
    return counts


def _plural(noun: str) -> str:
    if noun.endswith(("s", "sh", "ch", "x", "z")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _article(noun: str) -> str:
    return "an" if noun[:1] in "aeiou" else "a"


def _nouns_by_lex(counts: Counter, min_count: int, root: Path = WORDNET) -> dict[str, list[str]]:
    """Familiar single-word common nouns per lexicographer file."""
    out: dict[str, set[str]] = {k: set() for k in LEX}
    want = {v: k for k, v in LEX.items()}
    for lemmas, lex, _, _ in _synsets("noun", root):
        if lex not in want:
            continue
        for w in lemmas:
            if w.isalpha() and w.islower() and len(w) > 2 and counts[w] >= min_count:
                out[want[lex]].add(w)
    return {k: sorted(v) for k, v in out.items()}


def _capitals(root: Path = WORDNET) -> list[tuple[str, str]]:
    """(city, country) from glosses such as "the capital and largest city of France"."""
    pairs = []
    for lemmas, lex, gloss, _ in _synsets("noun", root):
        m = re.match(
            r"(?:the )?capital(?: and (?:largest|chief) city)? of ([A-Z][A-Za-z ]+)", gloss
        )
        if lex == 15 and m:
            city = max((w for w in lemmas if w[:1].isupper()), key=len, default=lemmas[0])
            pairs.append((city, m.group(1).strip()))
    return sorted(set(pairs))


_DEEDS = re.compile(
    r"\bwho (discovered|invented|developed|wrote|composed|painted|founded|designed|proposed|"
    r"formulated|built|led) ([a-z][a-z -]{3,40}?)(?=[;,(]| and | in | at | for | with |$)"
)


def _deeds(root: Path = WORDNET) -> list[tuple[str, str]]:
    """(verb, object) pairs from people's glosses: "who discovered penicillin"."""
    out = []
    for _, lex, gloss, pointers in _synsets("noun", root):
        if lex == 18 and "@i" in pointers[::4]:
            out += [(m.group(1), m.group(2).strip()) for m in _DEEDS.finditer(gloss)]
    return sorted(set(out))


def _antonyms(counts: Counter, min_count: int, root: Path = WORDNET) -> list[str]:
    """Familiar adjectives that have a direct antonym in WordNet."""
    out = set()
    for lemmas, _, _, pointers in _synsets("adj", root):
        w = lemmas[0]
        if "!" in pointers[::4] and w.isalpha() and counts[w] >= min_count:
            out.add(w)
    return sorted(out)


def _people(root: Path = WORDNET) -> list[str]:
    """WordNet's named people (instance nouns of noun.person), full names."""
    out = []
    for lemmas, lex, _, pointers in _synsets("noun", root):
        if lex == 18 and "@i" in pointers[::4]:
            named = [w for w in lemmas if w[:1].isupper()]
            if named:
                out.append(max(named, key=lambda w: (w.count(" "), len(w))))
    return sorted(set(out))


# -- templates ------------------------------------------------------------------------------

ACTIVITIES = (
    "learning a new language",
    "running a marathon",
    "saving money",
    "sleeping better",
    "studying for an exam",
    "cooking rice",
    "writing an essay",
    "public speaking",
    "starting a garden",
    "learning to swim",
    "taking good photos",
    "staying focused",
    "making friends",
    "travelling on a budget",
    "learning to code",
    "baking bread",
    "keeping a houseplant alive",
    "preparing for a job interview",
    "reading more books",
    "learning the guitar",
    "drawing faces",
    "staying healthy",
    "managing stress",
    "writing a poem",
    "organising a party",
    "cleaning a kitchen",
    "painting a room",
)
SUBJECTS = (
    "mathematics",
    "physics",
    "chemistry",
    "biology",
    "history",
    "geography",
    "economics",
    "music",
    "astronomy",
    "geology",
    "philosophy",
    "psychology",
    "linguistics",
    "medicine",
    "engineering",
    "architecture",
    "statistics",
    "ecology",
    "genetics",
    "computer science",
)
CONCEPTS = (
    "gravity",
    "photosynthesis",
    "evolution",
    "democracy",
    "inflation",
    "electricity",
    "magnetism",
    "the water cycle",
    "climate change",
    "the immune system",
    "supply and demand",
    "relativity",
    "plate tectonics",
    "the internet",
    "machine learning",
    "vaccination",
    "compound interest",
    "the greenhouse effect",
    "nuclear fusion",
    "the Big Bang",
    "black holes",
    "DNA",
    "the French Revolution",
    "the Renaissance",
    "the Industrial Revolution",
    "osmosis",
    "erosion",
    "friction",
    "recycling",
    "blockchain",
    "encryption",
    "the tides",
    "rainbows",
    "earthquakes",
    "volcanoes",
    "the seasons",
    "the Moon's phases",
    "sound waves",
)
LANGUAGES = ("French", "Spanish", "German", "Italian", "Portuguese", "Japanese", "Chinese")
WORDS_TO_TRANSLATE = (
    "hello",
    "thank you",
    "good morning",
    "water",
    "friend",
    "house",
    "cat",
    "book",
    "love",
    "goodbye",
    "apple",
    "school",
    "please",
    "the sky is blue",
    "I am hungry",
    "where is the station",
)
CHAT = (
    "Hi!",
    "Hello",
    "Hello, how are you?",
    "Good morning!",
    "What can you do?",
    "Who are you?",
    "Thank you!",
    "Thanks, that was helpful.",
    "Can you help me?",
    "Tell me a joke.",
    "What is your name?",
    "Are you a robot?",
    "What time is it?",
    "What is today's date?",
    "What's the weather like today?",
    "I feel sad today.",
    "Do you like music?",
    "What should I eat for dinner?",
    "Recommend a good book.",
    "Recommend a movie for tonight.",
)
CODE = (
    "Write a Python function that reverses a string.",
    "Write a Python function that checks whether a number is prime.",
    "How do I read a file in Python?",
    "What does the len function do in Python?",
    "Write a SQL query that counts the rows of a table.",
    "What is a for loop?",
    "How do I sort a list in Python?",
    "Explain recursion with an example.",
    "What is the difference between a list and a tuple in Python?",
    "Write a JavaScript function that adds two numbers.",
    "What is an API?",
    "How do I make a website?",
)
# Questions in other languages: the demo pair answers them in English with its honest line.
FOREIGN = (
    "Qui est {name} ?",
    "Quelle est la capitale de la France ?",
    "Comment vas-tu ?",
    "¿Quién es {name}?",
    "¿Cuál es la capital de España?",
    "¿Cómo estás?",
    "Wer ist {name}?",
    "Was ist die Hauptstadt von Deutschland?",
    "Wie geht es dir?",
    "Chi è {name}?",
    "Quem é {name}?",
    "{name}とは誰ですか？",
    "東京は何ですか？",
    "{name}은 누구입니까?",
    "Кто такой {name}?",
)
# Chinese questions outside the demo pair's "X是谁 / X是什么 / 介绍一下X" forms.
ZH_GENERAL = (
    "{country}的首都是哪里？",
    "为什么天空是蓝色的？",
    "怎么学习编程？",
    "写一首关于{thing}的诗。",
    "{a}加{b}等于多少？",
    "{a}乘以{b}等于多少？",
    "你好",
    "你好吗？",
    "你是谁？",
    "谢谢你！",
    "今天天气怎么样？",
    "怎么做{food}？",
    "给我讲个笑话。",
    "推荐一本好书。",
    "如何保持健康？",
    "{thing}有什么用？",
    "为什么{thing}很重要？",
    "解释一下{concept}。",
    "一年有多少天？",
    "地球上有几个大洲？",
    "谁发明了{invention}？",
    "世界上最高的山是哪座？",
    "帮我写一封邮件。",
    "把“{word}”翻译成英文。",
    "怎样才能睡得更好？",
    "什么时候去{place}旅游最好？",
)
ZH_FILL = {
    "country": (
        "法国",
        "日本",
        "德国",
        "意大利",
        "英国",
        "俄罗斯",
        "埃及",
        "加拿大",
        "巴西",
        "印度",
    ),
    "thing": ("月亮", "大海", "春天", "猫", "书", "音乐", "友谊", "雨", "树", "城市", "电脑", "水"),
    "food": ("饺子", "米饭", "面条", "蛋糕", "红烧肉", "包子"),
    "concept": ("光合作用", "万有引力", "通货膨胀", "民主", "进化论", "相对论", "电"),
    "invention": ("电话", "电灯", "印刷术", "飞机", "互联网", "指南针"),
    "word": ("你好", "谢谢", "朋友", "学校", "苹果", "我爱你"),
    "place": ("北京", "上海", "西安", "杭州", "成都", "桂林"),
}


def generate_prompts(
    seed: int = 0,
    per_template: int = 60,
    exclude: set[str] = frozenset(),
    exclude_terms: set[str] = frozenset(),
    root: Path = WORDNET,
    more: bool = False,
) -> list[Prompt]:
    """About `per_template` prompts from each template (fewer where the fill-ins run out),
    seeded. `exclude`: question texts never produced (held-out sets); `exclude_terms`: fill-ins
    (countries, people) never used; `more` adds the general-knowledge forms (superlatives,
    colours, counts, languages, populations, leaders, chemical symbols) the embedded pair
    learns to decline (the drafter's distillation was made without them)."""
    rng = random.Random(seed)
    counts = _common_words(root)
    nouns = _nouns_by_lex(counts, min_count=8, root=root)
    capitals = [(c, k) for c, k in _capitals(root) if k not in exclude_terms]
    deeds = _deeds(root)
    adjectives = _antonyms(counts, min_count=20, root=root)
    people = [p for p in _people(root) if p not in exclude_terms]
    out: list[Prompt] = []

    def add(template: str, texts, lang: str = "en") -> None:
        texts = list(dict.fromkeys(texts))
        rng.shuffle(texts)
        out.extend(Prompt(t, template, lang) for t in texts[:per_template])

    def some(xs, k: int) -> list:
        return rng.sample(list(xs), min(k, len(xs)))

    n = per_template * 3  # candidates drawn per template before de-duplication
    add("capital", [f"What is the capital of {k}?" for _, k in capitals])
    add("capital_of", [f"Which country has {c} as its capital?" for c, _ in capitals])
    add("deed", [f"Who {v} {o}?" for v, o in deeds])
    add("born", [f"When was {p} born?" for p in some(people, n)])
    add("famous_for", [f"Why is {p} famous?" for p in some(people, n)])
    add("plus", [f"What is {a} plus {b}?" for a, b in _pairs(rng, n, 2, 99)])
    add("times", [f"What is {a} multiplied by {b}?" for a, b in _pairs(rng, n, 2, 15)])
    add("minus", [f"What is {a} minus {b}?" for b, a in _pairs(rng, n, 1, 60)])
    add("sqrt", [f"What is the square root of {k * k}?" for k in range(2, 40) if k != 9])
    add("prime", [f"Is {k} a prime number?" for k in rng.sample(range(2, 200), 100)])
    add("explain", [f"Explain {c}." for c in CONCEPTS])
    add("explain_simple", [f"Explain {c} in simple terms." for c in CONCEPTS])
    add("explain_child", [f"Explain {c} to a child." for c in CONCEPTS])
    add("how_work", [f"How does {_article(w)} {w} work?" for w in some(nouns["artifact"], n)])
    add("how_made", [f"How is {w} made?" for w in some(nouns["food"] + nouns["substance"], n)])
    add("what_eat", [f"What do {_plural(w)} eat?" for w in some(nouns["animal"], n)])
    add("where_live", [f"Where do {_plural(w)} live?" for w in some(nouns["animal"], n)])
    add("why_important", [f"Why is {w} important?" for w in some(nouns["cognition"], n)])
    add("facts", [f"Give me three facts about {_plural(w)}." for w in some(nouns["animal"], n)])
    add("poem", [f"Write a short poem about {_plural(w)}." for w in some(nouns["animal"], n)])
    add("haiku", [f"Write a haiku about {w}." for w in some(nouns["food"] + nouns["act"], n)])
    add(
        "story",
        [f"Tell me a short story about {_article(w)} {w}." for w in some(nouns["artifact"], n)],
    )
    add("tips", [f"Give me some tips for {a}." for a in ACTIVITIES])
    add("how_to", [f"How do I get better at {a}?" for a in ACTIVITIES])
    add("learn", [f"How can I learn {s}?" for s in SUBJECTS])
    add("what_study", [f"What does {s} study?" for s in SUBJECTS])
    add("opposite", [f"What is the opposite of {w}?" for w in adjectives])
    add("synonym", [f"What is another word for {w}?" for w in adjectives])
    add("sentence", [f"Write a sentence using the word {w}." for w in some(adjectives, n)])
    add(
        "difference",
        [
            f"What is the difference between {_article(a)} {a} and {_article(b)} {b}?"
            for a, b in (some(nouns["animal"], 2) for _ in range(n))
        ],
    )
    add(
        "translate",
        [f"Translate '{w}' into {lang}." for w in WORDS_TO_TRANSLATE for lang in LANGUAGES],
    )
    add("chat", list(CHAT))
    add("code", list(CODE))
    names = some(people, 40)
    for i, t in enumerate(FOREIGN):  # one template per form, so forms can be held out
        add(f"foreign_{i}", [t.format(name=rng.choice(names)) for _ in range(3)], "xx")
    for i, t in enumerate(ZH_GENERAL):
        add(f"zh_{i}", [_zh(t, rng) for _ in range(4)], "zh")
    if more:  # after every other template, so the draws above stay the same without them
        superlatives = ("largest", "smallest", "oldest", "fastest", "tallest", "longest")
        things = some(nouns["animal"] + nouns["artifact"], n)
        add(
            "superlative",
            [f"What is the {rng.choice(superlatives)} {w} in the world?" for w in things],
        )
        add("colour", [f"What color is {_article(w)} {w}?" for w in some(nouns["food"], n)])
        add("how_many", [f"How many {_plural(w)} are there?" for w in some(nouns["animal"], n)])
        add("language_of", [f"What language do people speak in {k}?" for _, k in capitals])
        add("population", [f"What is the population of {k}?" for _, k in capitals])
        add("where_is", [f"Where is {c}?" for c, _ in capitals])
        add("leader", [f"Who is the president of {k}?" for _, k in capitals])
        add(
            "symbol", [f"What is the chemical symbol for {w}?" for w in some(nouns["substance"], n)]
        )
    return [p for p in out if p.text not in exclude]


def _pairs(rng: random.Random, n: int, lo: int, hi: int) -> list[tuple[int, int]]:
    return [tuple(sorted((rng.randint(lo, hi), rng.randint(lo, hi)))) for _ in range(n)]


def _zh(template: str, rng: random.Random) -> str:
    fill = {k: rng.choice(v) for k, v in ZH_FILL.items()}
    return template.format(**fill, a=rng.randint(2, 20), b=rng.randint(2, 20))


def split_by_template(prompts: list[Prompt], held_templates: set[str]) -> tuple[list, list]:
    """(train, held out): the held-out templates are never trained on."""
    train = [p for p in prompts if p.template not in held_templates]
    held = [p for p in prompts if p.template in held_templates]
    return train, held


if __name__ == "__main__":
    ps = generate_prompts()
    by = Counter(p.template for p in ps)
    print(len(ps), dict(by))
    rng = random.Random(1)
    for p in rng.sample(ps, 30):
        print(f"  [{p.template}] {p.text}")

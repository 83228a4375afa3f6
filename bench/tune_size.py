"""How many labelled prompts `semproxy tune` needs before its picks can be trusted.

    PYTHONPATH=src python bench/tune_size.py ../shared/data/clinc150_train_val.json

The CLINC150 route of the docs (k=16 examples per domain, seed 0). `tune`
(--count 50, 5 folds) runs on growing stratified samples of the val split; each
result is judged on 3,000 train prompts that are not examples (nothing was
chosen on them), as in-scope top-1 accuracy (tune's own measure). Arms: every
greedy pick (what `--write` added before), and only the picks cross-validation
supports (what it adds now).
"""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

import numpy as np

from semproxy.config.loader import load_file
from semproxy.embeddings.factory import EmbedderPool
from semproxy.transport.http import AiohttpTransport
from semproxy.quality.clinc150 import convert, load_dataset
from semproxy.quality.labelled import LabelledPrompt, load_jsonl
from semproxy.quality.rate import Rate
from semproxy.quality.tune import _top1, propose_examples, scoring_of

PER_DOMAIN = (10, 20, 40, 80, 160, 300)


def sample(items: list[LabelledPrompt], per_domain: int, seed: int = 0) -> list[LabelledPrompt]:
    rng = random.Random(seed)
    by: dict[str | None, list[LabelledPrompt]] = {}
    for item in items:
        by.setdefault(item.instance, []).append(item)
    out: list[LabelledPrompt] = []
    for label, group in sorted(by.items(), key=lambda kv: kv[0] or ""):
        take = per_domain if label is not None else max(1, per_domain // 3)
        out += rng.sample(group, min(take, len(group)))
    return out


async def main(source: str) -> None:
    out = Path("build/tune_size")
    config_path, val_path = convert(source, out, 16, 0)
    config = load_file(config_path)
    route = config.routes[0]
    assert route.semantic is not None
    val = load_jsonl(val_path)
    used = {t for i in route.instances for t in i.examples}
    dataset = load_dataset(source)
    judge = [(text, domain) for text, _, domain in dataset["splits"]["train"] if text not in used]
    judge = random.Random(1).sample(judge, 3000)
    clients = AiohttpTransport()
    embedder = EmbedderPool(clients).get(route.semantic.embeddings)
    holders = [i for i in route.instances if i.examples]
    names = [h.name for h in holders]
    examples = [await embedder.embed(list(h.examples)) for h in holders]
    prompts = await embedder.embed([t for t, _ in judge])
    labels = np.array([names.index(d) for _, d in judge], dtype=np.intp)
    how = scoring_of(route)
    before = _top1(examples, prompts, labels, how)
    right = Rate(int(before.sum()), len(judge))
    print(f"judged on {len(judge)} train prompts; before: {right.text()}")
    for per_domain in PER_DOMAIN:
        items = sample(val, per_domain)
        found = await propose_examples(route, embedder, items, 50, 5)
        picked = await embedder.embed(list(found.texts)) if found.texts else None
        line = [f"{len(items):>5} labelled ({per_domain}/domain): {len(found.picks)} picks, "
                f"{found.written} supported"]
        for arm, count in (("all picks", len(found.picks)), ("supported", found.written)):
            after = before
            if count and picked is not None:
                added = [np.vstack([e, *(picked[j][None, :] for j, p in
                                         enumerate(found.picks[:count]) if p.instance == i)])
                         for i, e in enumerate(examples)]
                after = _top1(added, prompts, labels, how)
            gain = (int(after.sum()) - int(before.sum())) / len(judge)
            line.append(f"{arm} {Rate(int(after.sum()), len(judge)).text()} "
                        f"({100 * gain:+.1f} points)")
        print("\n    ".join(line))
    await clients.aclose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))

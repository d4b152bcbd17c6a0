"""ZoFia's shared prompt layout: what every prompt of a check opens with.

With ``prompt_layout: shared`` (the default) the analysts' prompts (linguist, expert,
claim extraction) open with the system note and the news (`_news.j2`), and the debaters'
and the judge's prompts with the same note, the same news and then the analysts'
material (`_material.j2`, which begins with `_news.j2`): the news is a prefix every call
of the check shares. The one data notice names every tag these prompts fence (`TAGS`),
so the system message is the same for all of them.
"""

from __future__ import annotations

from veracity.methods.zofia.config import ZoFiaConfig
from veracity.prompt_layout import SharedPrefix
from veracity.prompting import render

PROMPTS = "veracity.methods.zofia"
TAGS = ("news", "background", "analysis", "debate")


def news_prefix(config: ZoFiaConfig, news: str) -> SharedPrefix | None:
    """The news, opening the analysts' prompts (None: the paper's layout)."""
    if config.prompt_layout != "shared":
        return None
    return SharedPrefix.of(render(PROMPTS, "_news.j2", news=news), TAGS)


def material_prefix(config: ZoFiaConfig, news: str, pool: str) -> SharedPrefix | None:
    """The news and the analysts' material, opening the debate's prompts."""
    if config.prompt_layout != "shared":
        return None
    return SharedPrefix.of(render(PROMPTS, "_material.j2", news=news, pool=pool), TAGS)

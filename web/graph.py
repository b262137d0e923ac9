"""The links between articles as a graph on the wiki page: server-rendered SVG, each
article a node a person can click to open it, each link an edge, no script.

Nodes sit on a circle, grouped by type (each type its own colour class) and by title
within a type, so the drawing is the same from one visit to the next. A wiki larger than
MAX_NODES shows its most linked articles only, and says so.
"""

from __future__ import annotations

import math
from typing import Any

from web.render import article_url
from wiki import KnowledgeBase, list_articles, read_articles
from wiki.linkcheck import LinkResolver, body_links

MAX_NODES = 120
SIZE = 640  # the square's side, in SVG units
RADIUS = 250
LABEL_CHARS = 28


def link_graph(kb: KnowledgeBase) -> dict[str, Any]:
    """Nodes (path, title, type, url, x, y) and edges (x1, y1, x2, y2, the two titles)
    of the articles and the links between them; ``shown`` of ``total`` articles."""
    articles = list(read_articles(kb, list_articles(kb)))
    resolver = LinkResolver((a.path, a.title) for a in articles)
    links: set[tuple[str, str]] = set()
    for a in articles:
        for link in body_links(a.body, a.path):
            target = resolver.find(link.target) if link.kind == "wikilink" else link.target
            if target and target != a.path and target.startswith("wiki/"):
                links.add((a.path, target))
    known = {a.path for a in articles}
    links = {(s, t) for s, t in links if t in known}
    degree: dict[str, int] = {}
    for s, t in links:
        degree[s] = degree.get(s, 0) + 1
        degree[t] = degree.get(t, 0) + 1
    kept = articles
    if len(articles) > MAX_NODES:
        kept = sorted(articles, key=lambda a: (-degree.get(a.path, 0), a.path))[:MAX_NODES]
    kept = sorted(kept, key=lambda a: (a.type, a.title.casefold()))
    types = sorted({a.type for a in kept})
    centre = SIZE / 2
    nodes: dict[str, dict[str, Any]] = {}
    for i, a in enumerate(kept):
        angle = 2 * math.pi * i / max(len(kept), 1) - math.pi / 2
        x, y = centre + RADIUS * math.cos(angle), centre + RADIUS * math.sin(angle)
        label = a.title if len(a.title) <= LABEL_CHARS else a.title[: LABEL_CHARS - 1] + "…"
        nodes[a.path] = {
            "path": a.path,
            "title": a.title,
            "label": label,
            "type": a.type,
            "colour": types.index(a.type) % 8,
            "url": article_url(a.path),
            "x": round(x, 1),
            "y": round(y, 1),
            "anchor": "start" if x >= centre else "end",
            "links": degree.get(a.path, 0),
        }
    edges = [
        {
            "x1": nodes[s]["x"],
            "y1": nodes[s]["y"],
            "x2": nodes[t]["x"],
            "y2": nodes[t]["y"],
            "source": nodes[s]["title"],
            "target": nodes[t]["title"],
        }  # fmt: skip
        for s, t in sorted(links)
        if s in nodes and t in nodes
    ]
    return {
        "nodes": list(nodes.values()),
        "edges": edges,
        "types": types,
        "shown": len(nodes),
        "total": len(articles),
        "size": SIZE,
    }

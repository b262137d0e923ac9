"""What the wiki's search and the agents' prompt hook must agree on, in one place: the
stop words, the CJK letters, the columns of the search index and their bm25 weights,
and how a list of terms becomes an FTS5 query that ranks articles.

The search (wiki/search.py, wiki/words.py) and the prompt hook (kb_ai/hooks/hint.py,
and the hint file kb_ai/hooks/hintfile.py writes for the shell hook) both read this
module. It imports nothing at all, so the hook, which must not import the wiki package
(some 200 ms of imports), loads it for free.
"""

from __future__ import annotations

# Hiragana, katakana (not the middle dot), CJK ideographs and their extensions,
# compatibility ideographs, Hangul syllables and jamo.
CJK_CLASS = (
    "\u1100-\u11ff\u3040-\u309f\u30a0-\u30fa\u30fc-\u30ff\u3130-\u318f\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f"
)

# The words that say nothing of a subject: function words, and the words of a question
# or a request ("explain", "list", "wiki", "page"). One list for every part of kb-ai.
_STOP_WORDS_TEXT = """
    a about above after again against all also am an and any anything are as at be because
    been before being below between both but by can could did do does doing done down
    during each either else ever every few for from further get gets got had has have
    having he her here hers herself him himself his how however i if in into is it its
    itself just know let like me more most much must my myself no nor not now of off on
    once one only or other our ours ourselves out over own please really same say says
    she should so some such tell than thank thanks that the their theirs them themselves
    then there these they thing things this those through to too under until up us use
    used using very want was way we well were what whats when where whether which while
    who whom whose why will with would yes yet you your yours yourself yourselves
    explain describe give find list mean means meant happen happened
    wiki page pages question answer
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())

# The search index's columns; the head table holds all but the body.
COLUMNS = ("title", "keys", "summary", "tags", "body")
HEAD_COLUMNS = COLUMNS[:-1]
# bm25 column weights, in column order: what an article is named and keyed by counts
# more than what it says in passing. bm25 divides by the length of the whole row, so a
# long body would drown its own title: the head fields are also indexed on their own
# (search_head) and that score is added, which keeps a title hit above a body mention.
# Tuned on data, not guessed (bench/ask/recall_musique.py, recall@50 of gold pages): on
# MuSiQue-50 (1,890 paragraphs) and HotpotQA-100 (994 passages), each paragraph one
# article, titles and bodies from the data, summary its first sentence. The earlier
# (10, 10, 4, 4, 1) + (1, 1, 0.4, 0.4) gave 0.788 / 0.970; these give 0.798 / 0.970
# (all-gold@50 on MuSiQue 0.52 -> 0.54), with title weights from 1 to 10 within 0.03:
# the body's rare words now outweigh common words shared with a title.
WEIGHTS = (3.0, 3.0, 2.0, 1.0, 1.0)
HEAD_WEIGHTS = (0.5, 0.5, 0.2, 0.2)
# FTS5's own bm25 constants (sqlite's fts5_aux.c): the hint file computes the same score
BM25_K1 = 1.2
BM25_B = 0.75
TOKENIZER = "porter unicode61 remove_diacritics 2"
# beside a database (state.db-search): touched whenever its search index changes
CHANGED_SUFFIX = "-search"


def quote(term: str) -> str:
    """``term`` as one FTS5 phrase: operators and punctuation in it are plain text."""
    return '"' + term.replace('"', '""') + '"'


def any_of(terms: list[str]) -> str:
    """The FTS5 expression matching an article that has any of ``terms``."""
    return " OR ".join(quote(t) for t in terms)


def ranked_sql(*, whole: bool = True) -> str:
    """The query ranking articles by a ``:q`` expression, best first, at most ``:limit``,
    giving (path, score), the lower score the better: bm25 over whole articles plus
    bm25 over their heads (``whole``), or over the heads alone."""
    weights = ", ".join(str(w) for w in WEIGHTS)
    head_weights = ", ".join(str(w) for w in HEAD_WEIGHTS)
    head = (
        f"SELECT rowid AS id, bm25(search_head, {head_weights}) AS score FROM search_head"
        f" WHERE search_head MATCH :q"
    )
    if whole:
        ranked = (
            f"SELECT id, sum(score) AS score FROM ("
            f"  SELECT rowid AS id, bm25(search_fts, {weights}) AS score FROM search_fts"
            f"  WHERE search_fts MATCH :q UNION ALL {head}"
            f") GROUP BY id"
        )
    else:
        ranked = head
    return (
        f"SELECT d.path, m.score FROM ({ranked} ORDER BY score LIMIT :limit) AS m"
        f" JOIN search_docs AS d ON d.id = m.id ORDER BY m.score, d.path"
    )

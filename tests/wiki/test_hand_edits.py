"""Finding a person's change to an article: against kb-ai's own last version, told apart
by kb-ai's commit trailer, or by its subjects in a history from before the trailer."""

from wiki import commit_all, git
from wiki.hand_edits import blob_id, find_hand_edit, keep_base, merge_texts

PAGE = "wiki/topic/cache.md"
KB_AI = "---\ntitle: Cache\n---\n\nRedis holds the sessions.\n\nThe TTL is 30 minutes.\n"


def put(kb, text):
    file = kb.resolve(PAGE)
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text, encoding="utf-8")


def by_ann(kb, message="Ann's note"):
    ann = ("-c", "user.name=Ann", "-c", "user.email=ann@example.com")
    git(kb, *ann, "commit", "-q", "-am", message)


def test_an_article_as_kb_ai_committed_it_holds_no_hand_edit(kb):
    put(kb, KB_AI)
    commit_all(kb, "compile: 1 source(s), 1 created")
    assert find_hand_edit(kb, PAGE) is None


def test_a_persons_commit_is_a_hand_edit_against_kb_ais_last_version(kb):
    put(kb, KB_AI)
    commit_all(kb, "compile: 1 source(s), 1 created")
    put(kb, KB_AI + "\nAsk Priya first.\n")
    by_ann(kb)
    hand = find_hand_edit(kb, PAGE)
    assert hand is not None and hand.base == KB_AI and hand.current.endswith("Ask Priya first.\n")
    assert [e.author for e in hand.edits] == ["Ann"] and hand.by().endswith("by Ann")
    # a remembered blob id of kb-ai's text does not hide the person's change
    assert find_hand_edit(kb, PAGE, known=blob_id(KB_AI)) is not None


def test_kb_ai_commits_from_before_the_trailer_are_known_by_their_subjects(kb):
    put(kb, KB_AI)
    git(kb, "add", "-A")
    git(kb, "commit", "-q", "-m", "compile: 1 source(s), 1 created")  # no trailer
    put(kb, KB_AI + "\nAsk Priya first.\n")
    by_ann(kb)
    hand = find_hand_edit(kb, PAGE)
    assert hand is not None and hand.base == KB_AI


def test_a_merged_article_is_merged_again_against_the_kept_base(kb):
    put(kb, KB_AI + "\nAsk Priya first.\n")
    keep_base(kb, PAGE, KB_AI)
    commit_all(kb, "compile: 1 source(s), 1 updated")  # kb-ai committed the merge
    hand = find_hand_edit(kb, PAGE)
    assert hand is not None and hand.base == KB_AI  # the person's line is still theirs


def test_the_merge_keeps_lines_apart_and_marks_overlaps(kb):
    base = "one\n\ntwo\n\nthree\n\nfour\n"
    mine = "one\n\ntwo\n\nthree\n\nfour\n\nmine\n"
    clean = merge_texts(kb, base, mine, base.replace("one", "ONE"))
    assert clean.conflicts == 0 and clean.text == "ONE\n\ntwo\n\nthree\n\nfour\n\nmine\n"
    clash = merge_texts(kb, base, base.replace("two", "mine"), base.replace("two", "TWO"))
    assert clash.conflicts == 1 and "<<<<<<< hand edit" in clash.text
    assert clash.proposal == base.replace("two", "TWO")


def test_lines_added_next_to_lines_rewritten_are_merged_not_marked(kb):
    base = "one\n\ntwo\n"
    after = merge_texts(kb, base, base + "\nmine\n", base.replace("two", "TWO"))
    assert after.conflicts == 0 and after.text == "one\n\nTWO\n\nmine\n"
    before = merge_texts(kb, base, "one\n\nmine\ntwo\n", base.replace("two", "TWO"))
    assert before.conflicts == 0 and before.text == "one\n\nmine\nTWO\n"
    kb_ai_adds = merge_texts(kb, base, base.replace("two", "mine"), base + "three\n")
    assert kb_ai_adds.conflicts == 0 and kb_ai_adds.text == "one\n\nmine\nthree\n"
    # next to lines kb-ai deleted, what the person added may be about them: a conflict
    gone = merge_texts(kb, base, base + "about two\n", "one\n")
    assert gone.conflicts == 1 and gone.proposal == "one\n"
    # a line of '=' (a Markdown heading's underline) is text, not a marker
    heading = "Title\n" + "=" * 70 + "\n\ntwo\n"
    both = merge_texts(kb, heading, heading.replace("two", "mine"), heading.replace("two", "TWO"))
    assert both.conflicts == 1 and both.proposal == heading.replace("two", "TWO")
    assert both.text.count("=" * 70 + "\n") == 1 and "<<<<<<< hand edit\nmine\n" in both.text

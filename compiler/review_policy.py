"""Which compile runs wait for a reviewer: the ``review_policy`` setting, decided once a
run's articles are written and before its commit reaches anyone.

- ``none``: no run waits (kb-ai's updates of hand-edited articles that overlap a person's
  lines still do: compiler/hand_edits.py);
- ``contributors``: runs a person submitted whose role is contributor (a person a sign-on
  proxy names who is not in `kb-ai users` has the ``default_role``); a reviewer's or an
  admin's runs, the CLI user's, the worker's and the agents' do not;
- ``hand-edited``: runs that merged kb-ai's update into an article a person edited;
- ``all``: every run (the older ``review = true``).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import closing

from kb_ai.settings import Settings
from wiki import KnowledgeBase, open_state
from wiki.people import PeopleStore, allows


def hold_reason(kb: KnowledgeBase, settings: Settings, hand_merged: Sequence[str]) -> str:
    """Why the run ``kb``'s actor made waits for a reviewer ("" when it does not);
    ``hand_merged``: the articles whose update was merged into a person's edit."""
    policy = settings.review_policy
    if policy == "all":
        return "review_policy is all"
    if policy == "hand-edited" and hand_merged:
        return (
            f"it updates {len(hand_merged)} hand-edited article(s) (review_policy is hand-edited)"
        )
    if policy == "contributors" and (role := _contributor(kb, settings.default_role)):
        return f"{kb.actor.name} is a {role} (review_policy is contributors)"
    return ""


def _contributor(kb: KnowledgeBase, default_role: str) -> str:
    """The submitter's role when it is below reviewer ("" for everyone else)."""
    actor = kb.actor
    if actor is None or actor.kind != "person":
        return ""
    with closing(open_state(kb)) as conn:
        person = PeopleStore(conn).find(actor.name)
    role = person.role if person is not None else default_role  # (a proxy's person)
    return "" if allows(role, "reviewer") else role

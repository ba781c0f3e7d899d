"""What a Zotero sync fetched, and the plan it makes of it (pure: no Redis, no network).

``stage_records`` turns one page of Zotero items into what the stage keeps: per item, its
record in the library's mirror (the paper it is, its collections) or why it is skipped; the
papers are matched (and new ones added as the reader's pending papers) here, as a library
file's are (``library.resolve_entries``). ``make_plan`` merges the fetched changes into the
mirror and compares the result, filtered by the collections the reader includes, with the
reader's state as read: the ``SyncPlan`` that ``zotero_apply`` runs in one step.
"""

from __future__ import annotations

import json
import re
import secrets
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from recommender.core.errors import InvalidInput
from recommender.corpus.store import CorpusStore
from recommender.corpus.zotero_api import item_entry
from recommender.feedback.collections import MAX_COLLECTIONS, MAX_NAME_LENGTH, collection_name
from recommender.feedback.library import resolve_entries
from recommender.feedback.upload_quota import UploadQuota
from recommender.feedback.zotero_apply import SyncPlan

OBJECT_KEY = re.compile(r"^[A-Za-z0-9]{1,32}$")
MAX_DEPTH = 20  # collections nested deeper are named from their 20 nearest ancestors
MAX_ZOTERO_NAME = 200


@dataclass
class Fetched:
    """The changes one sync read: item records as staged, collections, deletions."""

    version: int | None  # the library version they bring; None: no fetch (a re-plan)
    records: list[list[Any]] = field(default_factory=list)  # [key, record | "", reason, new]
    collections: list[Any] = field(default_factory=list)  # collection envelopes
    deleted_items: list[str] = field(default_factory=list)
    deleted_collections: list[str] = field(default_factory=list)
    unchanged: bool = False  # Zotero answered 304: the library is as synced

    @classmethod
    def nothing(cls, version: int | None = None, unchanged: bool = False) -> Fetched:
        return cls(version, unchanged=unchanged)

    @classmethod
    def from_stage(cls, stage: dict[str, str], deleted: dict[str, list[str]],
                   version: int) -> Fetched:
        records = [r for name in sorted(k for k in stage if k.startswith("items:"))
                   for r in json.loads(stage[name])]
        return cls(version, records, json.loads(stage.get("collections", "[]")),
                   deleted.get("items", []), deleted.get("collections", []))


@dataclass
class PlanCounts:
    added: int = 0
    matched: int = 0
    updated: int = 0
    removed: int = 0
    created: int = 0
    renamed: int = 0
    skipped: Counter[str] = field(default_factory=Counter)


def stage_records(objects: list[Any], user_id: str, *, corpus: CorpusStore,
                  quota: UploadQuota, now: float, first_index: int) -> list[list[Any]]:
    """One page of item envelopes as staged records: [key, mirror record (JSON) or "" (out
    of the mirror), why skipped or "", 1 when the paper was added to the corpus now]."""
    records: list[list[Any]] = []
    entries = []
    for index, envelope in enumerate(objects, first_index + 1):
        data = envelope.get("data") if isinstance(envelope, dict) else None
        if not isinstance(data, dict):
            continue  # not an item envelope: nothing to keep or take back
        key = data.get("key")
        if not isinstance(key, str) or not OBJECT_KEY.fullmatch(key):
            continue
        if data.get("deleted"):  # in the trash: no longer a like
            records.append([key, "", "", 0])
            continue
        entry = item_entry(data, index)
        if isinstance(entry, str):
            records.append([key, "", entry, 0])
            continue
        entry.label = key
        entries.append((entry, _collection_keys(data.get("collections"))))
    resolved = resolve_entries([e for e, _ in entries], user_id, corpus=corpus,
                               quota=quota, now=now)
    paper_of = {id(entry): paper_id for entry, paper_id in resolved.found}
    for entry, collections in entries:
        paper_id = paper_of.get(id(entry))
        if paper_id is None:
            records.append([entry.label, json.dumps({"p": None, "c": collections,
                                                     "s": "over quota"}), "over quota", 0])
            continue
        records.append([entry.label, json.dumps({"p": paper_id, "c": collections}), "",
                        1 if paper_id in resolved.added else 0])
    return records


def collection_paths(colls: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Each collection's path of names ("Training / Distributed"), from its ancestors."""
    paths = {}
    for zkey in colls:
        names: list[str] = []
        at, seen = zkey, set()
        while at in colls and at not in seen and len(names) < MAX_DEPTH:
            seen.add(at)
            names.append(str(colls[at].get("name") or at))
            at = colls[at].get("parent") or ""
        paths[zkey] = " / ".join(reversed(names))
    return paths


def make_plan(fetched: Fetched, record: dict[str, str], items: dict[str, str],
              colls_raw: dict[str, str], owned: dict[str, str], feedback: dict[str, str],
              mine_raw: dict[str, str], *, now: float, user_id: str, corpus: CorpusStore,
              quota: UploadQuota) -> tuple[SyncPlan, PlanCounts]:
    counts = PlanCounts()
    since = int(record.get("version") or 0)
    plan = SyncPlan(since, fetched.version if fetched.version is not None else since,
                    f"like:{now:.3f}", max_collections=MAX_COLLECTIONS)
    mirror = {key: json.loads(value) for key, value in items.items()}
    old_keys, changed, uploaded = set(mirror), set(), set()
    for key, rec, reason, new in fetched.records:
        changed.add(key)
        if reason:
            counts.skipped[reason] += 1
        if rec:
            if key in old_keys:
                counts.updated += 1
            mirror[key] = json.loads(rec)
            if new:
                uploaded.add(mirror[key]["p"])
        else:
            mirror.pop(key, None)
    for key in fetched.deleted_items:
        changed.add(key)
        mirror.pop(key, None)
    plan.items_set = {key: json.dumps(mirror[key]) for key in sorted(changed) if key in mirror}
    plan.items_del = sorted(key for key in changed if key not in mirror and key in old_keys)

    old_colls = {zkey: json.loads(value) for zkey, value in colls_raw.items()}
    colls = {zkey: dict(value) for zkey, value in old_colls.items()}
    for envelope in fetched.collections:
        data = envelope.get("data") if isinstance(envelope, dict) else None
        if not isinstance(data, dict):
            continue
        zkey = data.get("key")
        if not isinstance(zkey, str) or not OBJECT_KEY.fullmatch(zkey):
            continue
        if data.get("deleted"):
            colls.pop(zkey, None)
            continue
        parent = data.get("parentCollection")
        colls[zkey] = {**colls.get(zkey, {}), "name": str(data.get("name") or "")[
            :MAX_ZOTERO_NAME], "parent": parent if isinstance(parent, str) else ""}
    for zkey in fetched.deleted_collections:
        colls.pop(zkey, None)
    included_raw = record.get("included")
    included = set(json.loads(included_raw)) if included_raw else None
    mapped = _plan_collections(plan, counts, old_colls, colls, included, mine_raw, now)
    plan.colls = {zkey: json.dumps(value) for zkey, value in colls.items()}
    plan.mapped = sorted(set(mapped.values()))

    def wanted(rec: dict[str, Any]) -> bool:
        return bool(rec.get("p")) and (included is None or bool(set(rec["c"]) & included))

    likes = {rec["p"] for rec in mirror.values() if wanted(rec)}
    plan.like = sorted(p for p in likes if p not in owned and p not in feedback)
    plan.unlike = sorted(p for p in owned if p not in likes)
    counts.removed = sum(1 for p in plan.unlike if feedback.get(p) == owned[p])
    counts.added = sum(1 for p in plan.like if p in uploaded)
    counts.matched = len(plan.like) - counts.added
    members: dict[str, set[str]] = {p: set() for p in plan.unlike}
    for rec in mirror.values():
        if rec.get("p"):
            into = members.setdefault(rec["p"], set())
            if wanted(rec):
                into.update(mapped[z] for z in rec["c"] if z in mapped)
    plan.members = {p: sorted(ids) for p, ids in members.items()}
    return plan, counts


def _plan_collections(plan: SyncPlan, counts: PlanCounts, old: dict[str, dict[str, Any]],
                      colls: dict[str, dict[str, Any]], included: set[str] | None,
                      mine_raw: dict[str, str], now: float) -> dict[str, str]:
    """Fill the plan's collection changes; Zotero key -> paperrec id of each one mapped."""
    mine = {cid: json.loads(value) for cid, value in mine_raw.items()}
    taken = {value["key"]: cid for cid, value in mine.items()}
    paths = collection_paths(colls)
    mapped: dict[str, str] = {}
    for zkey, value in old.items():  # gone from Zotero: deleted here when the sync made it
        if zkey not in colls and value.get("own") and value.get("id") in mine:
            plan.delete.append(value["id"])
    for zkey in sorted(colls, key=lambda z: (paths[z].lower(), z)):
        value = colls[zkey]
        cid = value.get("id") or ""
        if included is not None and zkey not in included:
            if cid and value.get("own") and cid in mine:
                plan.delete.append(cid)
            value.update(id="", own=False, path="")
            continue
        shown, name_key = _name(paths[zkey], zkey)
        if cid and cid in mine:
            if value.get("path") != shown:
                if taken.get(name_key, cid) == cid:
                    plan.rename.append((cid, name_key, shown))
                    taken = {k: v for k, v in taken.items() if v != cid} | {name_key: cid}
                    value["path"] = shown
                    counts.renamed += 1
                else:
                    counts.skipped["collection name taken"] += 1
            mapped[zkey] = cid
            continue
        for suffix in ("", *(f" ({n})" for n in range(2, 10))):
            candidate, candidate_key = _name(shown[:MAX_NAME_LENGTH - len(suffix)] + suffix,
                                             zkey)
            if candidate_key not in taken or taken[candidate_key] not in mapped.values():
                break
        if candidate_key in taken and taken[candidate_key] not in mapped.values():
            cid, own = taken[candidate_key], False  # the reader's collection of that name
        elif len(mine) + len(plan.create) - len(plan.delete) >= MAX_COLLECTIONS:
            counts.skipped["over the collection limit"] += 1
            value.update(id="", own=False, path="")
            continue
        else:
            cid = secrets.token_hex(4)
            while cid in mine:
                cid = secrets.token_hex(4)
            plan.create.append((cid, json.dumps({"name": candidate, "key": candidate_key,
                                                 "created_at": round(now, 3)}), candidate_key))
            taken[candidate_key] = cid
            own = True
            counts.created += 1
        value.update(id=cid, own=own, path=shown)
        mapped[zkey] = cid
    return mapped


def _name(path: str, zkey: str) -> tuple[str, str]:
    """A collection name from a path (its end kept when too long), or one from the key."""
    if len(path) > MAX_NAME_LENGTH:
        path = "…" + path[-(MAX_NAME_LENGTH - 1):]
    try:
        return collection_name(path)
    except InvalidInput:
        return collection_name(f"Zotero {zkey}")


def _collection_keys(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return sorted({k for k in value[:500] if isinstance(k, str) and OBJECT_KEY.fullmatch(k)})

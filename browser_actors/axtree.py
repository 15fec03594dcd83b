"""The accessibility-tree observation (WebArena style): `[id] role 'name' properties` lines from CDP.

Source: `Accessibility.getFullAXTree` for the main frame and for every same-process child frame (spliced under
its `Iframe` node). Ids are the `data-wa-id` stamps of dom.js, read from one `DOM.getDocument(pierce)` call, so the
same element has the same id in both observation modes and every printed id can be acted on; nodes whose element
carries no stamp (text runs, rows, wrappers) are printed without an id.

Pruning follows WebArena's: ignored and inline-text nodes are dropped (their children kept), empty generic-like
nodes are dropped, a handful of noisy properties are left out, and a StaticText line whose text is already contained in the
name of one of the three lines above is dropped (WebArena compares whole lines, so a price "0" vanished because a
URL above held a zero; we compare names only). Unlike WebArena we do not fetch a bounding box per node (its 3-5 s per step):
the whole page is shown, and the token budget bounds the size.
"""

from __future__ import annotations

import asyncio
from typing import Any

IGNORED_PROPERTIES = {"focusable", "editable", "readonly", "level", "settable", "multiline", "invalid"}
EMPTY_PRUNED_ROLES = {
    "generic",
    "img",
    "list",
    "strong",
    "paragraph",
    "banner",
    "navigation",
    "Section",
    "LabelText",
    "Legend",
    "listitem",
}
SKIPPED_ROLES = {"InlineTextBox", "none", "LineBreak", "ListMarker"}
_MAX_DEPTH = 300


def _dom_index(root: dict[str, Any]) -> tuple[dict[int, str], dict[int, str]]:
    """backendNodeId -> data-wa-id, and iframe backendNodeId -> child frame id, over the pierced DOM tree."""
    ids: dict[int, str] = {}
    frames: dict[int, str] = {}
    stack: list[tuple[dict[str, Any], str | None]] = [(root, None)]
    while stack:
        node, parent_id = stack.pop()
        own = None
        attrs = node.get("attributes") or []
        for i in range(0, len(attrs) - 1, 2):
            if attrs[i] == "data-wa-id":
                own = ids[node["backendNodeId"]] = attrs[i + 1]
                break
        if node.get("nodeType") == 3 and parent_id:  # a text run acts through the stamped element holding it
            ids[node["backendNodeId"]] = parent_id
        if node.get("frameId") and node.get("nodeName") in ("IFRAME", "FRAME"):
            frames[node["backendNodeId"]] = node["frameId"]
        stack.extend((c, own) for c in node.get("children") or [])
        stack.extend((c, None) for c in node.get("shadowRoots") or [])
        if node.get("contentDocument"):
            stack.append((node["contentDocument"], None))
    return ids, frames


def _props(node: dict[str, Any]) -> list[str]:
    out = []
    for p in node.get("properties") or []:
        value = (p.get("value") or {}).get("value")
        if p.get("name") in IGNORED_PROPERTIES or value is None:
            continue
        out.append(f"{p['name']}: {value}")
    return out


class _Printer:
    def __init__(self, ids: dict[int, str], frames: dict[int, str], frame_trees: dict[str, list[dict]]):
        self.ids, self.frames, self.frame_trees = ids, frames, frame_trees
        self.lines: list[str] = []
        self.names: list[str] = []  # the quoted name of each printed line (StaticText de-duplication)

    def tree(self, nodes: list[dict[str, Any]], depth: int) -> None:
        if not nodes:
            return
        by_id = {n["nodeId"]: n for n in nodes}
        roots = [n for n in nodes if not n.get("parentId") or n["parentId"] not in by_id]
        for r in roots[:1]:
            self.node(r, by_id, depth)

    def node(self, node: dict[str, Any], by_id: dict[str, dict], depth: int) -> None:
        if depth > _MAX_DEPTH:
            return
        shown = self._line(node, depth)
        child_depth = depth + 1 if shown else depth
        backend = node.get("backendDOMNodeId")
        if backend in self.frames and self.frames[backend] in self.frame_trees:
            self.tree(self.frame_trees.pop(self.frames[backend]), child_depth)
        for cid in node.get("childIds") or []:
            child = by_id.get(cid)
            if child is not None:
                self.node(child, by_id, child_depth)

    def _line(self, node: dict[str, Any], depth: int) -> bool:
        if node.get("ignored"):
            return False
        role = str((node.get("role") or {}).get("value", ""))
        name = str((node.get("name") or {}).get("value", "") or "")
        if not role or role in SKIPPED_ROLES:
            return False
        props = _props(node)
        if not name.strip() and (role in EMPTY_PRUNED_ROLES and not props or role == "listitem"):
            return False
        if role == "StaticText":
            if not name.strip() or any(name in prev for prev in self.names[-3:]):
                return False
        wa_id = self.ids.get(node.get("backendDOMNodeId", -1))
        text = f"{role} {name!r}" + (" " + " ".join(props) if props else "")
        self.lines.append("\t" * depth + (f"[{wa_id}] " if wa_id else "") + text)
        self.names.append(name)
        return True


async def axtree_text(cdp: Any) -> str:
    """The pruned accessibility tree of the page behind `cdp` (a CDPSession), ids from the data-wa-id stamps."""
    # both read the page as it is; asked together, the second does not wait for the first's answer
    doc, main = await asyncio.gather(
        cdp.send("DOM.getDocument", {"depth": -1, "pierce": True}), cdp.send("Accessibility.getFullAXTree")
    )
    ids, frames = _dom_index(doc["root"])
    frame_trees: dict[str, list[dict]] = {}
    for fid in frames.values():
        try:
            frame_trees[fid] = (await cdp.send("Accessibility.getFullAXTree", {"frameId": fid}))["nodes"]
        except Exception:  # noqa: BLE001 - an out-of-process (cross-site) frame is not reachable from this session
            continue
    try:
        await cdp.send("DOM.disable")  # stop DOM change events flowing to us between observations
    except Exception:  # noqa: BLE001 - disabling is an optimisation only
        pass
    printer = _Printer(ids, frames, frame_trees)
    printer.tree(main["nodes"], 0)
    return "\n".join(printer.lines)

"""Task suites of the bundled shop sites: configs validate (also through the CLIs), splits are deterministic,
disjoint and big enough, held-out templates exist, every WebArena-Lite eval type is used, reference answers match
what the pages serve, and the expert's observation reader finds elements the way the scripts need."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import httpx
import pytest

from common.records import Click, Goto, Observation, Stop
from common.tasks import Task
from sites import tasks as T
from sites.tasks.steps import AllPages, Answer, ClickOrGo, ExpertError, M, Script, Until, find, parse_elements

SHOP_SITES = ["shopping", "shopping_admin"]
WEBARENA_KEYS = {
    "sites",
    "task_id",
    "require_login",
    "storage_state",
    "start_url",
    "geolocation",
    "intent_template",
    "instantiation_dict",
    "intent",
    "require_reset",
    "eval",
    "intent_template_id",
}


@pytest.fixture(scope="module")
def configs() -> dict[str, list[dict]]:
    return {s: T.split_configs(s, sites=SHOP_SITES) for s in T.SPLITS}


def test_sizes_kinds_and_held_out_templates(configs):
    shop = T.templates(SHOP_SITES)
    assert len(shop) >= 30
    assert len(configs["train"]) >= 300 and len(configs["test"]) >= 75
    held = {t.id for t in shop if t.held_out}
    assert held, "some templates must be held out entirely"
    train_tids = {c["intent_template_id"] for c in configs["train"]}
    test_tids = {c["intent_template_id"] for c in configs["test"]}
    assert not held & train_tids and held <= test_tids
    assert {t.id for t in shop} - held <= train_tids & test_tids  # held-out instantiations of train templates
    kinds = Counter(t.kind for t, _, _ in T.suite(sites=SHOP_SITES))
    assert 0.35 <= kinds["info"] / sum(kinds.values()) <= 0.65, kinds


def test_splits_are_deterministic_and_disjoint(configs):
    T._suite_cached.cache_clear()
    again = {s: T.split_configs(s, sites=SHOP_SITES) for s in T.SPLITS}
    assert json.dumps(again, sort_keys=True) == json.dumps(configs, sort_keys=True)
    ids = {s: [c["task_id"] for c in configs[s]] for s in T.SPLITS}
    assert len(set(ids["train"])) == len(ids["train"]) and len(set(ids["test"])) == len(ids["test"])
    assert not set(ids["train"]) & set(ids["test"])
    intents = {s: {c["intent"] for c in configs[s]} for s in T.SPLITS}
    assert not intents["train"] & intents["test"]


def test_configs_have_webarena_shape(configs):
    for c in configs["train"] + configs["test"]:
        assert set(c) == WEBARENA_KEYS
        site = c["sites"][0]
        assert c["start_url"].startswith("__SHOPPING_ADMIN__" if site == "shopping_admin" else "__SHOPPING__")
        assert c["storage_state"] == f"./.auth/{site}_state.json" and c["require_login"] is True
        assert c["geolocation"] is None and c["require_reset"] is False
        assert Task.model_validate(c).intent == c["intent"]
        assert "{{" not in c["intent"]


def test_every_eval_type_of_webarena_lite_is_used(configs):
    evs = [c["eval"] for c in configs["train"] + configs["test"]]
    answers = Counter(k for e in evs if e.get("reference_answers") for k in e["reference_answers"])
    assert (
        answers["exact_match"] and answers["must_include"] and 0 < answers["fuzzy_match"] <= 0.05 * len(evs)
    )
    types = Counter(tuple(e["eval_types"]) for e in evs)
    assert types[("url_match",)] and types[("program_html",)] and types[("url_match", "program_html")]
    targets = [t for e in evs for t in e["program_html"]]
    assert any(t["url"].startswith("func:shopping_get_latest_order_url") for t in targets)
    assert any(t["locator"].startswith("func:shopping_get_sku_latest_review_author(") for t in targets)
    assert any(t["locator"].startswith("func:shopping_get_sku_latest_review_rating(") for t in targets)
    assert any(t["locator"].startswith("document.querySelector") for t in targets)
    assert any(t["locator"].startswith("[...document.querySelectorAll") for t in targets)
    assert any(t.get("prep_actions") for t in targets)
    assert any("must_exclude" in t["required_contents"] for t in targets)
    assert any(t["url"] == "last" for t in targets)


def test_cli_writes_files_that_validate(tmp_path):
    for split in T.SPLITS:
        out = tmp_path / f"{split}.json"
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "sites",
                "tasks",
                "--split",
                split,
                "--sites",
                ",".join(SHOP_SITES),
                "--out",
                str(out),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == 0, r.stderr
        v = subprocess.run(
            [sys.executable, "-m", "common.tasks", "validate", str(out)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert v.returncode == 0 and f"{len(json.loads(out.read_text()))} tasks OK" in v.stdout, v.stderr


def test_load_split_errors_and_lookup():
    with pytest.raises(ValueError, match="unknown split"):
        T.load_split("dev")
    tasks = T.load_split("test", sites=SHOP_SITES)
    t, i = T.find_instance(tasks[0].task_id)
    assert t.build(i)["intent"] == tasks[0].intent
    with pytest.raises(KeyError):
        T.find_instance(999_999_999)


def _client(srv, site: str) -> httpx.Client:
    state = json.loads(srv.storage_state_path(site).read_text())
    return httpx.Client(
        base_url=srv.urls[site], cookies={c["name"]: c["value"] for c in state["cookies"]}, timeout=30
    )


def test_reference_answers_agree_with_the_pages(tmp_path_factory):
    """A sample of templates whose answer page is known: the reference text is on the page the site serves."""
    from sites.server import SiteServer

    pages = {  # template id -> page that shows the answer
        101: lambda i, c: c.get("/catalogsearch/result/", params={"q": i.values["product"]}).text,
        204: lambda i, c: c.get("/admin/catalog/product/", params={"search": i.values["product"]}).text,
        205: lambda i, c: c.get("/admin/customer/index/", params={"search": i.values["name"]}).text,
        203: lambda i, c: (
            c.get(
                "/admin/reports/report_sales/sales/",
                params={
                    "filter": "1",
                    "period_type": "month",
                    "from": i.data["month"]["from"],
                    "to": i.data["month"]["to"],
                },
            ).text
        ),
        201: lambda i, c: (
            c.get(
                "/admin/sales/order/",
                params={
                    "status": i.values["status"],
                    "from": i.data["month"]["from"],
                    "to": i.data["month"]["to"],
                },
            ).text
        ),
    }
    with SiteServer(base_port=0, data_dir=tmp_path_factory.mktemp("tasks_sites"), sites=SHOP_SITES) as srv:
        clients = {s: _client(srv, s) for s in SHOP_SITES}
        checked = 0
        for t, inst, _ in T.suite(sites=SHOP_SITES):
            if t.id not in pages or inst.index > 3:
                continue
            html = pages[t.id](inst, clients[t.site])
            ref = t.build(inst)["eval"]["reference_answers"]
            expected = ref.get("must_include") or [ref["exact_match"]]
            if t.id == 201:
                expected = [f"{ref['exact_match']} records found"]
            if t.id == 204:
                expected = [f"{int(ref['exact_match']):.4f}"]  # the grid prints quantities as Magento does
            for e in expected:
                assert e in html, (t.id, inst.values, e)
            checked += 1
        assert checked == 4 * len(pages)


# -- the observation reader and scripts -------------------------------------------------------------------------
OBS_TEXT = """URL: http://h/x
Tabs: [0] Orders (active)
----
<a id="1" href="/"> Home &amp; Kitchen </a>
<table>
<td id="4"> 000000012 </td> <a id="5" href="/v/12"> View Order </a>
<td id="6"> 000000013 </td> <a id="7" href="/v/13"> View Order </a>
</table>
<input id="8" name="product[price]" value="12.00">
<select id="9" name="dir"> <option selected value="asc">Ascending</option> </select>
<a id="10" href="?p=2"> Next </a>"""


def _obs(text: str = OBS_TEXT) -> Observation:
    return Observation(text=text, url="http://h/x")


def test_parse_elements_reads_ids_text_and_attributes():
    els = parse_elements(OBS_TEXT)
    assert [e.id for e in els] == ["1", "4", "5", "6", "7", "8", "9", "10"]
    assert els[0].text == "Home & Kitchen"
    assert find(els, M("input", **{"name": "product[price]"})).attrs["value"] == "12.00"
    assert find(els, M("a", "View Order"), after=M("td", "000000013")).id == "7"
    assert find(els, M("a", "View Order"), after=M("td", "000000099")) is None
    assert find(els, M("select", name="dir")).text.startswith("Ascending")


def test_parse_elements_reads_ids_written_after_the_text():
    """browser.html_ids=after_text: `[n]` before the closing tag is the id; markers never join an element's text,
    an id-less tag whose content ends with no marker is not an element, and a page's own '[' (&#91;) is text."""
    after = (
        "<div> <h1> Home &amp; Kitchen [1]</h1>\n<table>\n<tr> <td> note &#91;3] [6]</td> <a> View Order [7]</a>"
        '</tr>\n</table>\n<input id="8" value="12.00">\n<button> <b>Go</b> [9]</button> [2]</div>'
    )
    els = parse_elements(after)
    assert [(e.id, e.tag, e.text) for e in els] == [
        ("2", "div", "Home & Kitchen note [3] View Order Go"),
        ("1", "h1", "Home & Kitchen"),
        ("6", "td", "note [3]"),
        ("7", "a", "View Order"),
        ("8", "input", ""),
        ("9", "button", "Go"),
    ]
    assert [e.id_after for e in els] == [True, True, True, True, False, True]
    assert find(els, M("a", "View Order"), after=M("td", "note [3]")).id == "7"
    assert parse_elements("<p> only text [5] </p>")[0].id == "5"  # the layout's trailing space is allowed
    assert parse_elements("<p> no marker here </p> <ul> x </ul>") == []


def test_script_steps_and_failures():
    script = Script(
        [Until(M("td", "000000013"), M("a", "Next")), AllPages(M("a", "Next"), limit=1), Answer("2")],
        "http://h",
    )
    assert script.next_action(_obs()) == (Click(element_id="10"), "read this page, then the next one")
    action, _ = script.next_action(_obs(OBS_TEXT.replace('<a id="10" href="?p=2"> Next </a>', "")))
    assert action == Stop(answer="2")
    lost = Script([Until(M("td", "000000099"), M("a", "Next"), limit=1)], "http://h")
    lost.next_action(_obs())
    with pytest.raises(ExpertError, match="not found after 1 pages"):
        lost.next_action(_obs())
    with pytest.raises(ExpertError, match="not found"):
        Script([Until(M("td", "x"), M("a", "Previous"))], "http://h").next_action(_obs())
    failed = Script([Answer("a"), Answer("b")], "http://h")
    failed.next_action(_obs())
    with pytest.raises(ExpertError, match="previous action failed"):
        failed.next_action(_obs().model_copy(update={"last_action_error": "element 99 not found"}))


def test_click_or_go_clicks_a_shown_link_and_otherwise_opens_its_path():
    assert Script([ClickOrGo(M("a", "Home & Kitchen"), "/home-kitchen.html")], "http://h").next_action(
        _obs()
    )[0] == Click(element_id="1")
    action, why = Script(
        [ClickOrGo(M("a", "Bedding"), "/home-kitchen/bedding.html")], "http://h"
    ).next_action(_obs())
    assert action == Goto(url="http://h/home-kitchen/bedding.html") and "not shown" in why

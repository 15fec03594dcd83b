"""Action grammars: WebArena's and WebRL's surface forms, the thinking format, round trips, adversarial input, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.actions import (
    ACTION_TYPES,
    GRAMMARS,
    ActionParseError,
    Click,
    CloseTab,
    GoBack,
    GoForward,
    Goto,
    Hover,
    NewTab,
    Press,
    Scroll,
    Select,
    Stop,
    TabFocus,
    Type,
    action_space_text,
    parse_action,
    render_action,
    try_parse,
)

REPO = Path(__file__).resolve().parents[2]

WEBARENA_CASES = [
    ("In summary, the next action I will perform is ```click [1234]```", Click(element_id="1234")),
    ("click [12]", Click(element_id="12")),
    ("click[12]", Click(element_id="12")),
    ("Click [ 12 ]", Click(element_id="12")),
    ("type [12] [hello world] [0]", Type(element_id="12", text="hello world", press_enter=False)),
    ("type [12] [hello world] [1]", Type(element_id="12", text="hello world", press_enter=True)),
    (
        "type [12] [hello world]",
        Type(element_id="12", text="hello world", press_enter=True),
    ),  # WebArena default
    ("type [12] [a [b] c] [1]", Type(element_id="12", text="a [b] c", press_enter=True)),
    ("type [12] [a [b] c]", Type(element_id="12", text="a [b] c", press_enter=True)),
    ("type [7] [x] [press_enter_after=0]", Type(element_id="7", text="x", press_enter=False)),
    ("type [3] [line one\nline two] [0]", Type(element_id="3", text="line one\nline two", press_enter=False)),
    ("type [3] [] [0]", Type(element_id="3", text="", press_enter=False)),
    ("hover [5]", Hover(element_id="5")),
    ("press [Enter]", Press(key="Enter")),
    ("press [Meta+a]", Press(key="Meta+a")),
    ("press [Control+Shift+K]", Press(key="Control+Shift+K")),
    ("press [Control + a]", Press(key="Control+a")),
    ("scroll [up]", Scroll(direction="up")),
    ("scroll [down]", Scroll(direction="down")),
    ("scroll [direction=down]", Scroll(direction="down")),
    ("scroll [Down]", Scroll(direction="down")),
    ("goto [http://localhost:7770/catalog?q=a[1]]", Goto(url="http://localhost:7770/catalog?q=a[1]")),
    ("go_back", GoBack()),
    ("go_forward", GoForward()),
    ("new_tab", NewTab()),
    ("tab_focus [2]", TabFocus(tab_index=2)),
    ("close_tab", CloseTab()),
    ("stop [$25.99]", Stop(answer="$25.99")),
    ("stop [N/A]", Stop(answer="N/A")),
    ("stop []", Stop(answer="")),
    ("stop", Stop(answer="")),
    ("stop [the [bracketed] answer]", Stop(answer="the [bracketed] answer")),
    ("select [9] [Last Month]", Select(element_id="9", text="Last Month")),
    # where the action is found
    (
        "Let's think step-by-step. I see a search box.\n```\ntype [5] [mug] [1]\n```",
        Type(element_id="5", text="mug"),
    ),
    (
        "Example: ```click [1]```. In summary, the next action I will perform is ```click [2]```",
        Click(element_id="2"),
    ),
    ("Reasoning first.\n```python\nhover [8]\n```", Hover(element_id="8")),
    ("The page is wrong, so I will go back.\ngo_back", GoBack()),
    (
        "I will type.\ntype [3] [first\nsecond] [0]",
        Type(element_id="3", text="first\nsecond", press_enter=False),
    ),
    ("click [4]\nThis opens the order page.", Click(element_id="4")),
]


@pytest.mark.parametrize("text,expected", WEBARENA_CASES)
def test_webarena_grammar(text: str, expected: object) -> None:
    assert parse_action(text, "webarena") == expected


WEBRL_CASES = [
    ('do(action="Click", element="12")', Click(element_id="12")),
    ("do(action='Click', element=12)", Click(element_id="12")),
    ('# Element: the search box\ndo(action="Type", argument="mug", element="5")', Type(element_id="5", text="mug", press_enter=False)),
    ('do(action="Search", argument="q", element="3")', Type(element_id="3", text="q", press_enter=True)),
    ('do(action="Type", argument="a) b \\"c\\"", element="5")', Type(element_id="5", text='a) b "c"', press_enter=False)),
    ('do(action="Hover", element="4")', Hover(element_id="4")),
    ('do(action="Scroll Up")', Scroll(direction="up")),
    ('do(action="Scroll Down")', Scroll(direction="down")),
    ('do(action="Press Enter")', Press(key="Enter")),
    ('do(action="Press", argument="Control+a")', Press(key="Control+a")),
    ('do(action="Select Dropdown Option", argument="Month", element="7")', Select(element_id="7", text="Month")),
    ('do(action="Go Back")', GoBack()),
    ('do(action="Go Forward")', GoForward()),
    ('do(action="New Tab")', NewTab()),
    ('do(action="Close Tab")', CloseTab()),
    ('do(action="Switch Tab", argument="1")', TabFocus(tab_index=1)),
    ('do(action="Switch Tab", argument=2)', TabFocus(tab_index=2)),
    ('do(action="Goto", argument="http://localhost:7780/admin")', Goto(url="http://localhost:7780/admin")),
    ("go_backward()", GoBack()),
    ("go_forward()", GoForward()),
    ('exit(message="The answer is 42.")', Stop(answer="The answer is 42.")),
    ("exit()", Stop(answer="")),
    ('do("Click", None, "9")', Click(element_id="9")),
    # the last call wins; prose and comments around it are ignored
    ('I could do(action="Scroll Down") but instead:\n```\ndo(action="Click", element="3")\n```', Click(element_id="3")),
    ('Plan: go_backward() later.\n# Note: price is $5\nexit(message="$5")', Stop(answer="$5")),
]  # fmt: skip


@pytest.mark.parametrize("text,expected", WEBRL_CASES)
def test_webrl_grammar(text: str, expected: object) -> None:
    assert parse_action(text, "webrl") == expected


ERROR_CASES = [
    ("webarena", "", "no action found"),
    ("webarena", "I am not sure what to do.", "no action found"),
    ("webarena", "jump [3]", "no action found"),
    ("webarena", "```jump [3]```", "unknown action 'jump'"),
    ("webarena", "click [abc def]", "malformed click"),
    ("webarena", "click [12] to open it", "malformed click"),
    ("webarena", "type [12]", "malformed type"),
    ("webarena", "scroll [left]", "malformed scroll"),
    ("webarena", "goto [http://a b]", "URL without spaces"),
    ("webarena", "press [Control a]", "one key combination"),
    ("webarena", "tab_focus [first]", "malformed tab_focus"),
    ("webrl", "", "no action call found"),
    ("webrl", 'do(action="Click")', 'needs element="<id>"'),
    ("webrl", 'do(action="Type", element="3")', 'needs argument="..."'),
    ("webrl", 'do(action="Fly", element="3")', 'unknown action "Fly"'),
    ("webrl", 'do(action="Right Click", element="3")', "not supported"),
    ("webrl", 'do(action="Wait")', "not supported"),
    ("webrl", 'do(action="Click", element="3", color="red")', "unknown argument 'color'"),
    ("webrl", 'do(action="Click", element="3", element="4")', "twice"),
    ("webrl", 'do(action="Click", element="a b")', "element id"),
    ("webrl", 'do(action="Click", element=3.5)', "literal strings or numbers"),
    ("webrl", 'do(action="Click", element=True)', "literal strings or numbers"),
    ("webrl", 'do(action="Click", **{"element": "3"})', "**kwargs"),
    ("webrl", 'do(*["Click"])', "*args"),
    ("webrl", 'do(action="Click", element="3"', "unbalanced"),
    ("webrl", 'do(action="Click, element="3")', "no well-formed action call"),
    ("webrl", "go_backward(1)", "at most 0 arguments"),
    ("webrl", 'do(action="Switch Tab", argument="first")', "tab index"),
]


@pytest.mark.parametrize("grammar,text,why", ERROR_CASES)
def test_parse_errors_say_why(grammar: str, text: str, why: str) -> None:
    with pytest.raises(ActionParseError) as err:
        parse_action(text, grammar)
    assert why in str(err.value)
    action, msg = try_parse(text, grammar)
    assert action is None and msg == str(err.value)


def test_webrl_never_evaluates(tmp_path: Path) -> None:
    """Calls, attributes and names inside arguments are refused, not run."""
    target = tmp_path / "pwned"
    payloads = [
        f'do(action=open("{target}", "w").write("x"), element="1")',
        f'do(action="Click", element=__import__("pathlib").Path("{target}").touch())',
        'do(action="Click", element=element)',
        'do(action="Click" + "", element="1")',
        f'exit(message=open("{target}", "w"))',
    ]
    for p in payloads:
        action, why = try_parse(p, "webrl")
        assert action is None and why, p
    assert not target.exists()


def test_unknown_grammar_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown grammar"):
        parse_action("click [1]", "seeact")


# ---------------------------------------------------------------- thinking format


@pytest.mark.parametrize("grammar", GRAMMARS)
def test_thinking_format_reads_the_answer(grammar: str) -> None:
    decoy = render_action(Click(element_id="1"), grammar)
    real = render_action(Type(element_id="2", text="hi", press_enter=True), grammar)
    text = f"<think>Maybe {decoy}? No, the field comes first.</think>\n<answer>{real}</answer>"
    assert parse_action(text, grammar, thinking=True) == Type(element_id="2", text="hi", press_enter=True)
    assert parse_action(text, grammar, thinking=False) == Type(element_id="2", text="hi", press_enter=True)
    # an answer cut off by the length limit still counts
    assert parse_action(f"<think>x</think><answer>{real}", grammar, thinking=True).type == "type"


@pytest.mark.parametrize("grammar", GRAMMARS)
def test_thinking_required_but_no_answer(grammar: str) -> None:
    text = f"<think>I will {render_action(Click(element_id='1'), grammar)}</think>"
    with pytest.raises(ActionParseError, match="no <answer>"):
        parse_action(text, grammar, thinking=True)
    # without the requirement, the bare action is still found
    assert (
        parse_action(text.replace("</think>", "\n") + render_action(GoBack(), grammar), grammar) == GoBack()
    )


# ---------------------------------------------------------------- properties

_ids = st.from_regex(r"[A-Za-z0-9_.:\-]{1,8}", fullmatch=True)
_keys = st.one_of(
    st.just("Enter"), st.from_regex(r"[A-Za-z0-9]{1,6}(\+[A-Za-z0-9]{1,6}){0,2}", fullmatch=True)
)
_urls = st.from_regex(
    r"https?://[a-z0-9.\-]{1,12}(:[0-9]{2,5})?(/[A-Za-z0-9_\-.~%?=&\[\]]{0,10}){0,3}", fullmatch=True
)
_text = st.text(max_size=40)

ACTIONS = st.one_of(
    st.builds(Click, element_id=_ids),
    st.builds(Type, element_id=_ids, text=_text, press_enter=st.booleans()),
    st.builds(Hover, element_id=_ids),
    st.builds(Press, key=_keys),
    st.builds(Scroll, direction=st.sampled_from(["up", "down"])),
    st.builds(Goto, url=_urls),
    st.builds(GoBack),
    st.builds(GoForward),
    st.builds(NewTab),
    st.builds(TabFocus, tab_index=st.integers(0, 999_999)),
    st.builds(CloseTab),
    st.builds(Select, element_id=_ids, text=_text),
    st.builds(Stop, answer=_text),
)


def test_strategy_covers_every_action_type() -> None:
    assert {a.model_fields["type"].default for a in (Click, Type, Hover, Press, Scroll, Goto, GoBack, GoForward,
                                                   NewTab, TabFocus, CloseTab, Select, Stop)} == set(ACTION_TYPES)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(action=ACTIONS, grammar=st.sampled_from(GRAMMARS))
def test_round_trip(action: object, grammar: str) -> None:
    assert parse_action(render_action(action, grammar), grammar) == action  # type: ignore[arg-type]


_plain = st.text(
    alphabet=st.characters(blacklist_characters="`<>", blacklist_categories=("Cs",)), max_size=30
)
PLAIN_ACTIONS = st.one_of(
    ACTIONS.filter(lambda a: a.type not in ("type", "select", "stop")),
    st.builds(Type, element_id=_ids, text=_plain, press_enter=st.booleans()),
    st.builds(Stop, answer=_plain),
)


@settings(max_examples=150, deadline=None)
@given(action=PLAIN_ACTIONS, grammar=st.sampled_from(GRAMMARS), noise=st.text(alphabet="abc ,.", max_size=30))
def test_round_trip_inside_reasoning(action: object, grammar: str, noise: str) -> None:
    """The same action inside a fenced summary and inside the thinking format."""
    rendered = render_action(action, grammar)  # type: ignore[arg-type]
    fenced = f"Let's think. {noise}\nIn summary, the next action I will perform is ```{rendered}```"
    assert parse_action(fenced, grammar) == action
    thought = f"<think>{noise}</think><answer>{rendered}</answer>"
    assert parse_action(thought, grammar, thinking=True) == action


_FRAGMENTS = [
    "click", "type", "stop", "press", "scroll", "goto", "tab_focus", "select", "go_back", "[", "]", "[1]", "[12]",
    "```", "\n", " ", "do(", "exit(", "go_backward()", ")", "action=", "element=", "argument=", "message=", '"', "'",
    "\\", "Click", "Type", "Search", "<think>", "</think>", "<answer>", "</answer>", "=", ",", "0", "1", "(", "**",
    "__import__", "[direction=down]", "Scroll Down", "*", "\x00",
]  # fmt: skip
_ADVERSARIAL = st.one_of(
    st.text(),
    st.lists(st.one_of(st.sampled_from(_FRAGMENTS), st.text(max_size=4)), max_size=30).map("".join),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_ADVERSARIAL, grammar=st.sampled_from(GRAMMARS), thinking=st.booleans())
def test_any_string_gives_an_action_or_a_parse_error(text: str, grammar: str, thinking: bool) -> None:
    try:
        action = parse_action(text, grammar, thinking)
    except ActionParseError as e:
        assert str(e)
    else:
        assert action.type in ACTION_TYPES
        # whatever was parsed can be written back and read again
        try:
            rendered = render_action(action, grammar)
        except ValueError:
            return  # e.g. an element id the other direction cannot spell; parse never produces these
        assert parse_action(rendered, grammar) == action


def test_huge_adversarial_inputs_stay_bounded() -> None:
    texts = [
        "do(" * 5000,
        ")" * 5000 + "do(action='Click'",
        "click [1\n" * 5000,
        "```" * 3001,
        "(" * 300 + ")" * 300,
    ]
    for t in texts:
        for g in GRAMMARS:
            action, why = try_parse(t, g)
            assert action is not None or why


@pytest.mark.parametrize("grammar", GRAMMARS)
def test_action_space_mentions_every_action(grammar: str) -> None:
    space = action_space_text(grammar)
    examples = {
        "webarena": ["click [", "type [", "hover [", "press [", "scroll [", "goto [", "go_back", "go_forward",
                     "new_tab", "tab_focus [", "close_tab", "stop [", "select ["],
        "webrl": ["Click", "Type", "Search", "Hover", "Scroll Up", "Scroll Down", "Press Enter", "Select Dropdown",
                  "Goto", "Go Back", "New Tab", "Close Tab", "Switch Tab", "exit(", "go_backward()", "go_forward()"],
    }[grammar]  # fmt: skip
    for word in examples:
        assert word in space, word
    if grammar == "webrl":  # every example call in the description is itself valid
        calls = [ln for ln in space.splitlines() if ln.startswith(("do(action=", "exit(message="))]
        assert len(calls) >= 4
        for ln in calls:
            parse_action(ln, grammar)


# ---------------------------------------------------------------- command line


def _cli(args: list[str], lines: list[str]) -> list[dict]:
    out = subprocess.run(
        [sys.executable, "-m", "common.actions", *args],
        input="".join(line + "\n" for line in lines),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=True,
    )
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_cli_parse_one_line_per_input() -> None:
    lines = [
        json.dumps({"text": "In summary, the next action I will perform is ```type [5] [mug] [0]```"}),
        "this is not json",
        json.dumps({"text": "no action here"}),
        json.dumps({"txt": "click [1]"}),
        json.dumps([1, 2]),
        json.dumps({"text": "stop [N/A]"}),
    ]
    out = _cli(["parse", "--format", "webarena"], lines)
    assert len(out) == len(lines)
    assert out[0] == {"type": "type", "element_id": "5", "text": "mug", "press_enter": False}
    assert "not JSON" in out[1]["error"] and "line 2" in out[1]["error"]
    assert "no action found" in out[2]["error"]
    assert "text" in out[3]["error"] and "array" not in out[3]
    assert "JSON object" in out[4]["error"]
    assert out[5] == {"type": "stop", "answer": "N/A"}


def test_cli_parse_webrl_thinking_and_render() -> None:
    lines = [
        json.dumps(
            {"text": '<think>ok</think><answer>do(action="Search", argument="q", element="3")</answer>'}
        ),
        json.dumps({"text": 'do(action="Search", argument="q", element="3")'}),  # no answer part: an error
    ]
    out = _cli(["parse", "--format", "webrl", "--thinking"], lines)
    assert out[0] == {"type": "type", "element_id": "3", "text": "q", "press_enter": True}
    assert "no <answer>" in out[1]["error"]
    rendered = _cli(["render", "--format", "webrl"], [json.dumps(out[0]), json.dumps({"type": "click"})])
    assert rendered[0] == {"text": 'do(action="Search", argument="q", element="3")'}
    assert "element_id" in rendered[1]["error"]

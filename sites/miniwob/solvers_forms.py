"""Experts of the MiniWoB++ multi-step tasks: feedback loops (guess, generate), forms, tickets, search, terminal."""

from __future__ import annotations

import re

from common import records as R
from sites.miniwob.expert_kit import View, between, click, fill, ordinal, quoted, solves, submit
from sites.tasks.steps import ExpertError

MAX_TRIES = 12  # feedback loops that have not finished by then are not converging


@solves("guess-number")
def _guess_number(instr: str, view: View):
    lo, hi = 0, 9
    for _ in range(MAX_TRIES):
        guess = (lo + hi) // 2
        yield fill(view.need("input", type="number"), str(guess), f"bisect {lo}..{hi}: guess {guess}")
        yield submit(view)
        m = re.search(r"The number is (lower|higher) than (\d+)", view.text)
        if not m:
            raise ExpertError("no higher / lower feedback after a wrong guess")
        if m.group(1) == "lower":
            hi = guess - 1
        else:
            lo = guess + 1
    raise ExpertError(f"no number found in {MAX_TRIES} guesses")


def _fits(instr: str, n: int) -> bool:
    if m := re.search(r"less than (\d+)", instr):
        return n < int(m.group(1))
    if m := re.search(r"greater than (\d+)", instr):
        return n > int(m.group(1))
    if "an odd number" in instr:
        return n % 2 == 1
    if "an even number" in instr:
        return n % 2 == 0
    raise ExpertError(f"unknown condition in {instr!r}")


@solves("generate-number")
def _generate_number(instr: str, view: View):
    for _ in range(MAX_TRIES):
        generate = view.need("button", "Generate")
        shown = [e for e in view.els if e.tag == "div" and e.pos < generate.pos]
        value = shown[-1].text if shown else ""
        if re.fullmatch(r"-?\d+", value) and _fits(instr, int(value)):
            yield click(view.need("button", "Submit"), f"{value} fits: submit it")
            return
        yield click(generate, f"{value or 'nothing'} does not fit: generate another number")
    raise ExpertError(f"no fitting number in {MAX_TRIES} draws")


@solves("odd-or-even")
def _odd_or_even(instr: str, view: View):
    els = view.els
    for k, e in enumerate(els):
        if e.tag == "div" and re.fullmatch(r"-?\d+", e.text) and 0 < k < len(els) - 1:
            odd, even = els[k - 1], els[k + 1]
            if (odd.text, even.text) != ("Odd", "Even"):
                raise ExpertError(f"the number {e.text} is not between an Odd and an Even button")
            pick = odd if int(e.text) % 2 else even
            yield click(pick, f"{e.text} is {pick.text.lower()}")
    yield submit(view)


def _minutes(text: str) -> int:
    m = re.fullmatch(r"(\d+)h (\d+)m", text.strip())
    if not m:
        raise ExpertError(f"not a duration: {text!r}")
    return int(m.group(1)) * 60 + int(m.group(2))


@solves("buy-ticket")
def _buy_ticket(instr: str, view: View):
    els = view.els
    offers = []  # (price, minutes, button)
    for k, e in enumerate(els):
        if e.tag == "button" and (m := re.fullmatch(r"Book for \$(\d+)", e.text)):
            offers.append((int(m.group(1)), _minutes(els[k - 1].text), e))
    if not offers:
        raise ExpertError("no tickets on the page")
    goal = between(instr, "ticket with the ", ".")
    key = {
        "cheapest cost": lambda o: o[0],
        "most expensive cost": lambda o: -o[0],
        "shortest duration": lambda o: o[1],
        "longest duration": lambda o: -o[1],
    }.get(goal)
    if key is None:
        raise ExpertError(f"unknown ticket goal {goal!r}")
    best = min(offers, key=key)
    yield click(best[2], f"the ticket with the {goal}: ${best[0]}, {best[1]} min")


@solves("terminal")
def _terminal(instr: str, view: View):
    term = view.need(text="terminal")
    yield R.Type(element_id=term.id, text="ls", press_enter=True), "list the files"
    m = re.search(r"user\$ ls\n(.*)\n", view.text)
    if not m:
        raise ExpertError("ls printed nothing")
    files = m.group(1).split()
    if "no file extension" in instr:
        hits = [f for f in files if "." not in f]
    else:
        ext = "." + instr.rsplit("extension", 1)[-1].strip().lstrip(".")
        hits = [f for f in files if f.endswith(ext)]
    if not hits:
        raise ExpertError(f"no file to delete among {files}")
    yield (
        R.Type(element_id=view.need(text="terminal").id, text=f"rm {hits[0]}", press_enter=True),
        f"delete {hits[0]}",
    )


@solves("search-engine")
def _search_engine(instr: str, view: View):
    term, n = quoted(instr), ordinal(instr)
    yield fill(view.need("input"), term, f"search for {term!r}")
    yield click(view.need("button", "Search"), "run the search")
    page, index = (n - 1) // 3 + 1, (n - 1) % 3  # three results a page
    if page > 1:
        yield click(view.need("a", str(page)), f"result {n} is on page {page}")
    results = [e for e in view.all("a") if not re.fullmatch(r"\d+|[<>]|Prev|Next", e.text)]
    if len(results) <= index:
        raise ExpertError(f"page {page} shows {len(results)} results, not result {n}")
    yield click(results[index], f"result {n}: {results[index].text!r}")


@solves("form-sequence-2")
def _form_sequence_2(instr: str, view: View):
    radio_n = ordinal(instr)
    number = quoted(instr)
    box_n = int(re.search(r"into the (\d+)(?:st|nd|rd|th) textbox", instr).group(1))
    radios = view.all("input", type="radio")
    boxes = [e for e in view.all("input") if "type" not in e.attrs]
    if len(radios) < radio_n or len(boxes) < box_n:
        raise ExpertError("fewer radio buttons or text boxes than the instruction names")
    yield click(radios[radio_n - 1], f"radio button #{radio_n}")
    yield fill(boxes[box_n - 1], number, f"{number} into text box #{box_n}")
    yield submit(view)


@solves("form-sequence-3")
def _form_sequence_3(instr: str, view: View):
    choice = between(instr, "Choose ", " from the dropdown")
    label = quoted(instr)
    yield R.Select(element_id=view.need("select").id, text=choice), f"choose {choice!r}"
    yield click(view.need("button", label), f"the button labeled {label!r}")

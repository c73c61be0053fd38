"""Inline citation markers that open their source card.

An answer's `[n]` is drawn as a Markdown link to `#source-<turn>-<n>` (`marker`). Streamlit draws a
link that starts with `#` as a plain in-page anchor, and an anchor cannot open an expander; `listen`
mounts a small component (no iframe: `st.components.v2`) that catches a click on such a link, tells
the page which source was asked for (the page opens its card, as the buttons under the answer do),
and scrolls the card into view once the rerun has opened it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import streamlit as st

PREFIX = "source-"
_HREF = re.compile(rf"^#?{PREFIX}([0-9A-Za-z]+)-([0-9]+)$")

# The card is found by the class Streamlit gives a keyed element (`st-key-<key>`); `card_key` names it.
_JS = r"""
export default function (component) {
  const { data, setTriggerValue } = component;
  const state = (window.__ragCiteLinks = window.__ragCiteLinks || {});
  state.setTriggerValue = setTriggerValue;
  state.cardKey = data && data.card_key ? data.card_key : "";
  if (state.onClick) {
    return () => {};
  }
  // The card is scrolled to once it is there, again once it is open, and kept with its head in view while what
  // the rerun adds (its page image, loaded after the rerun ends) grows the page: Streamlit keeps the chat's end in
  // view, which put the card's head above the screen. The keeping lasts until the card's images have loaded and the
  // page has not changed for 2.5 s: a fixed 4 s after the card opened left the head 818 px above the screen when
  // the image came later (tests/e2e/test_chat_stream.py delays it by 6 s). A wheel, touch or key of the user's own
  // ends the keeping, as does the next citation clicked.
  const scrollTo = (selector) => {
    const until = Date.now() + 60000;
    const turn = (state.scrolls = (state.scrolls || 0) + 1);
    let scrolled = false;
    let keepUntil = 0;
    let stopped = false;
    let size = "";
    const stop = () => {
      stopped = true;
    };
    for (const kind of ["wheel", "touchmove", "keydown"]) {
      window.addEventListener(kind, stop, { once: true, passive: true });
    }
    const step = () => {
      if (stopped || state.scrolls !== turn) {
        return;
      }
      const card = document.querySelector(selector);
      if (card) {
        const details = card.matches("details") ? card : card.querySelector("details");
        const open = !details || details.open;
        const now = Date.now();
        const sizeNow = card.offsetHeight + "/" + document.documentElement.scrollHeight;
        const loading = Array.from(card.querySelectorAll("img")).some((img) => !img.complete);
        if (open && (sizeNow !== size || loading)) {
          size = sizeNow;
          keepUntil = now + 2500;
        }
        if (!scrolled) {
          card.scrollIntoView({ block: "start" });
          scrolled = true;
        } else if (keepUntil) {
          const top = card.getBoundingClientRect().top;
          if (top < -2 || top > window.innerHeight / 2) {
            card.scrollIntoView({ block: "start" });
          }
          if (now > keepUntil) {
            return;
          }
        }
      }
      if (Date.now() < until) {
        window.setTimeout(step, 150);
      }
    };
    step();
  };
  state.onClick = (event) => {
    const link = event.target && event.target.closest ? event.target.closest('a[href^="#PREFIX"]') : null;
    if (!link || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) {
      return;
    }
    const match = /^#PREFIX([0-9A-Za-z]+)-([0-9]+)$/.exec(link.getAttribute("href") || "");
    if (!match) {
      return;
    }
    event.preventDefault();
    event.stopPropagation();
    state.setTriggerValue("open", match[1] + "-" + match[2]);
    if (state.cardKey) {
      scrollTo(".st-key-" + state.cardKey.replace("{turn}", match[1]).replace("{n}", match[2]));
    }
  };
  document.addEventListener("click", state.onClick, true);
  return () => {};
}
""".replace("PREFIX", PREFIX)

_CSS = ":host { display: none; }"

_mount: Callable[..., Any] | None = None


def href(turn_id: str, n: int) -> str:
    """The in-page link of source `n` of turn `turn_id`."""
    return f"#{PREFIX}{turn_id}-{n}"


def marker(text: str, turn_id: str, n: int) -> str:
    """Markdown: `text` (a marker as drawn, e.g. a badge) as a link that opens source `n`'s card."""
    return f"[{text}]({href(turn_id, n)})"


def parse(value: object) -> tuple[str, int] | None:
    """The (turn id, source number) a clicked link named, or None for anything else."""
    if not isinstance(value, str):
        return None
    match = _HREF.match(value) or _HREF.match(f"{PREFIX}{value}")
    return (match.group(1), int(match.group(2))) if match else None


def listen(key: str, card_key: str) -> tuple[str, int] | None:
    """Mount the listener (once per run, anywhere on the page); the source whose marker was clicked
    since the last run, if any. `card_key` is the cards' widget key with `{turn}` and `{n}` in it."""
    global _mount
    if _mount is None:
        _mount = st.components.v2.component("rag_cite_links", js=_JS, css=_CSS)
    result = _mount(key=key, data={"card_key": card_key}, height=0, on_open_change=lambda: None)
    return parse(getattr(result, "open", None))

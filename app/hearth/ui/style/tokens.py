"""Design tokens: the colours of each theme, and the spacing, radius and type scales.

Every colour the app paints comes from a ``Tokens`` value: the widgets' QPalette, the
app-wide stylesheet (``qss.py``), the transcript's markdown CSS and char formats
(``md_render.py``) and the code highlighter's palette. Two themes, LIGHT and DARK, are
complete sets; the contrast test checks their text/background pairs as the renderer
actually emits them. Plain Python, no Qt, so the values can be checked anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Syntax:
    """Code-highlighting colours (on ``Tokens.code_bg``)."""

    keyword: str
    builtin: str
    string: str
    comment: str
    number: str
    function: str

    def as_dict(self) -> dict[str, str]:
        return {
            "keyword": self.keyword,
            "builtin": self.builtin,
            "string": self.string,
            "comment": self.comment,
            "number": self.number,
            "function": self.function,
        }


@dataclass(frozen=True)
class Tokens:
    name: str  # "light" or "dark"
    window: str  # the app's background behind panels
    surface: str  # panels, the transcript, inputs
    surface_alt: str  # alternating rows, hovered items
    rail: str  # the left navigation rail
    border: str  # panels, cards, dividers: quiet lines
    # input frames (line edits, spin and combo boxes): WCAG non-text 3:1 on window,
    # surface and surface_alt, so a field reads as a field outside a card too
    control_border: str
    text: str
    text_muted: str  # secondary text: captions, notes, the stats footer
    accent: str  # links and focus rings (readable as text on surface)
    accent_fill: str  # primary buttons and the selected rail item
    on_accent: str  # text on accent_fill
    selection: str
    on_selection: str
    code_bg: str
    code_text: str
    code_header: str  # the language label above a code block
    inline_code_bg: str
    table_header_bg: str
    quote_text: str
    quote_bar: str
    danger: str  # error text
    danger_bg: str
    danger_border: str
    warn: str  # text on warn_bg: amber chips ("fits partly"), notices
    warn_bg: str  # notices that need action but are not errors (e.g. no GPU offload)
    warn_border: str
    good: str  # text on good_bg: green chips ("fits")
    good_bg: str
    good_border: str
    disabled_text: str
    syntax: Syntax

    @property
    def dark(self) -> bool:
        return self.name == "dark"


LIGHT = Tokens(
    name="light",
    window="#f4f5f7",
    surface="#ffffff",
    surface_alt="#eef0f3",
    rail="#e9ebef",
    border="#d5d8de",
    control_border="#82868f",
    text="#1b1d22",
    text_muted="#565b66",
    accent="#1f5bc6",
    accent_fill="#2458c8",
    on_accent="#ffffff",
    selection="#2458c8",
    on_selection="#ffffff",
    code_bg="#f3f4f6",
    code_text="#1b1d22",
    code_header="#565b66",
    inline_code_bg="#eceef2",
    table_header_bg="#e8ebf0",
    quote_text="#474c56",
    quote_bar="#c5c9d1",
    danger="#b3261e",
    danger_bg="#fdecea",
    danger_border="#f3c1bd",
    warn="#7a4f00",
    warn_bg="#fff3d6",
    warn_border="#ecd39a",
    good="#1b6b34",
    good_bg="#e3f4e8",
    good_border="#b5dfc1",
    disabled_text="#8a8f99",
    syntax=Syntax(
        keyword="#7a2fc4",
        builtin="#1b5bb0",
        string="#0b6e2e",
        comment="#5f646d",
        number="#9a4500",
        function="#0e5a93",
    ),
)

DARK = Tokens(
    name="dark",
    window="#1c1d21",
    surface="#24262b",
    surface_alt="#2d3036",
    rail="#16171a",
    border="#3b3e45",
    control_border="#767a83",
    text="#e7e8eb",
    text_muted="#a7abb4",
    accent="#8ab4ff",
    accent_fill="#3566d6",
    on_accent="#ffffff",
    selection="#3566d6",
    on_selection="#ffffff",
    code_bg="#17181b",
    code_text="#e2e4e8",
    code_header="#a7abb4",
    inline_code_bg="#363940",
    table_header_bg="#33363d",
    quote_text="#c4c7ce",
    quote_bar="#4a4e57",
    danger="#ff8f86",
    danger_bg="#3a2224",
    danger_border="#6b3036",
    warn="#f2c46d",
    warn_bg="#3a3019",
    warn_border="#66532a",
    good="#8fdca4",
    good_bg="#1d3526",
    good_border="#2f5a3c",
    disabled_text="#7c808a",
    syntax=Syntax(
        keyword="#cf9bff",
        builtin="#8cb6ff",
        string="#9fd89b",
        comment="#9aa0aa",
        number="#f4b183",
        function="#7fd3ea",
    ),
)

BY_NAME = {"light": LIGHT, "dark": DARK}

# Spacing scale (px): margins, gaps and paddings use these and nothing in between.
SPACE = {"xs": 4, "s": 8, "m": 12, "l": 16, "xl": 24, "xxl": 32}
# Corner radii (px).
RADIUS = {"s": 4, "m": 8, "l": 12}
# Type sizes (pt): caption, body, subtitle (card titles), title (page titles), display.
TYPE = {"caption": 8.5, "body": 10.0, "subtitle": 11.5, "title": 15.0, "display": 19.0}


def relative_luminance(color: str) -> float:
    """WCAG 2.x relative luminance of ``#rrggbb``."""
    value = color.lstrip("#")
    if len(value) != 6:
        raise ValueError(f"not a #rrggbb colour: {color!r}")
    channels = [int(value[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(foreground: str, background: str) -> float:
    """WCAG contrast ratio (1..21) of two ``#rrggbb`` colours; AA for body text is 4.5."""
    a, b = relative_luminance(foreground), relative_luminance(background)
    hi, lo = max(a, b), min(a, b)
    return (hi + 0.05) / (lo + 0.05)

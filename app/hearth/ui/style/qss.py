"""The one app-wide stylesheet, built from a theme's tokens.

Object names and dynamic properties select the app's own pieces: ``#pageRail`` (the
left navigation), ``QFrame[card="true"]`` (empty-state and page cards, clickable),
``QFrame[section="true"]`` (the titled panels of Settings and Server, ``ui/widgets/section.py``),
``QPushButton[primary="true"]`` (the one main action of a view), ``QLabel[role=...]``
("title", "subtitle", "muted", "caption"). Everything else is stock widgets, kept close
to the Fusion style. Input frames (line edits, spin and combo boxes) use
``control_border``, which stands out from every background; spin and combo boxes then
draw their sub-controls from the stylesheet, so their arrows come from ``arrows.py``.
"""

from __future__ import annotations

from hearth.ui.style.arrows import ARROW_PX, arrow_files
from hearth.ui.style.tokens import RADIUS, SPACE, TYPE, Tokens

BUTTON_W = 18  # the width of a spin box's up/down buttons and a combo box's drop-down


def _input_frames(t: Tokens) -> str:
    """Spin and combo boxes framed like QLineEdit, with their arrows from PNG files.

    Once the stylesheet gives them a border Qt draws every sub-control from it, so
    the buttons, the drop-down and the arrows are all spelled out here.
    """
    r_s = RADIUS["s"]
    arrows = arrow_files(t)

    def image(key: str) -> str:
        return f'image: url("{arrows[key]}"); ' if arrows else ""

    return f"""
QAbstractSpinBox, QComboBox {{ color: {t.text}; background: {t.surface};
    border: 1px solid {t.control_border}; border-radius: {r_s}px; padding: 3px 4px;
    min-height: 18px; selection-background-color: {t.selection};
    selection-color: {t.on_selection}; }}
QAbstractSpinBox {{ padding-right: {BUTTON_W + 2}px; }}
QComboBox {{ padding-right: {BUTTON_W + 4}px; }}
QAbstractSpinBox:hover, QComboBox:hover {{ border: 1px solid {t.text_muted}; }}
QAbstractSpinBox:focus, QComboBox:focus, QComboBox:on {{ border: 1px solid {t.accent}; }}
QAbstractSpinBox:disabled, QComboBox:disabled {{ color: {t.disabled_text};
    background: {t.window}; border: 1px solid {t.border}; }}
QAbstractSpinBox::up-button, QAbstractSpinBox::down-button {{ subcontrol-origin: border;
    width: {BUTTON_W}px; border: none; border-left: 1px solid {t.border};
    background: transparent; }}
QAbstractSpinBox::up-button {{ subcontrol-position: top right;
    border-top-right-radius: {r_s}px; }}
QAbstractSpinBox::down-button {{ subcontrol-position: bottom right;
    border-bottom-right-radius: {r_s}px; }}
QAbstractSpinBox::up-button:hover, QAbstractSpinBox::down-button:hover {{
    background: {t.surface_alt}; }}
QAbstractSpinBox::up-button:pressed, QAbstractSpinBox::down-button:pressed {{
    background: {t.border}; }}
QAbstractSpinBox::up-arrow, QAbstractSpinBox::down-arrow, QComboBox::down-arrow {{
    width: {ARROW_PX}px; height: {ARROW_PX}px; }}
QAbstractSpinBox::up-arrow {{ {image("up")}}}
QAbstractSpinBox::down-arrow {{ {image("down")}}}
QAbstractSpinBox::up-arrow:disabled, QAbstractSpinBox::up-arrow:off {{ {image("up_disabled")}}}
QAbstractSpinBox::down-arrow:disabled, QAbstractSpinBox::down-arrow:off {{
    {image("down_disabled")}}}
QComboBox::drop-down {{ subcontrol-origin: padding; subcontrol-position: center right;
    width: {BUTTON_W}px; border: none; background: transparent; }}
QComboBox::down-arrow {{ {image("down")}}}
QComboBox::down-arrow:disabled {{ {image("down_disabled")}}}
QComboBox QAbstractItemView {{ color: {t.text}; background: {t.surface};
    border: 1px solid {t.control_border}; border-radius: 0px; outline: 0;
    selection-background-color: {t.selection}; selection-color: {t.on_selection}; }}
"""


def stylesheet(t: Tokens) -> str:
    s, m, l_ = SPACE["s"], SPACE["m"], SPACE["l"]
    r_s, r_m, r_l = RADIUS["s"], RADIUS["m"], RADIUS["l"]
    return f"""
QMainWindow, QDialog {{ background: {t.window}; }}
QToolTip {{ color: {t.text}; background: {t.surface}; border: 1px solid {t.border};
    padding: {SPACE["xs"]}px; }}

QFrame#topBar {{ background: {t.window}; border-bottom: 1px solid {t.border}; }}
QToolBar#mainToolbar {{ background: transparent; border: none;
    spacing: {s}px; padding: {SPACE["xs"]}px {s}px; }}
QToolBar#mainToolbar QToolButton {{ color: {t.text}; padding: {SPACE["xs"]}px {s}px;
    border-radius: {r_s}px; }}
QToolBar#mainToolbar QToolButton:hover {{ background: {t.surface_alt}; }}
QToolBar#mainToolbar QToolButton:checked {{ background: {t.surface_alt}; }}
QToolBar#mainToolbar QToolButton:disabled {{ color: {t.disabled_text}; }}

QListWidget#pageRail {{ background: {t.rail}; border: none;
    border-right: 1px solid {t.border}; padding: {s}px {SPACE["xs"]}px; outline: 0; }}
QListWidget#pageRail::item {{ color: {t.text_muted}; border-radius: {r_m}px;
    padding: {s}px 0px; margin: 2px 0px; }}
QListWidget#pageRail::item:hover {{ background: {t.surface_alt}; color: {t.text}; }}
QListWidget#pageRail::item:selected {{ background: {t.accent_fill}; color: {t.on_accent}; }}
QListWidget#chatList::item, QListWidget#modelsFolders::item {{ padding: {SPACE["xs"]}px {s}px;
    border-radius: {r_s}px; }}

QStatusBar {{ background: {t.window}; color: {t.text_muted};
    border-top: 1px solid {t.border}; }}
QStatusBar QLabel {{ color: {t.text_muted}; padding: 0px {SPACE["xs"]}px; }}

QPushButton {{ color: {t.text}; background: {t.surface}; border: 1px solid {t.border};
    border-radius: {r_s}px; padding: 5px {m}px; min-height: 18px; }}
QPushButton:hover {{ background: {t.surface_alt}; }}
QPushButton:pressed {{ background: {t.border}; }}
QPushButton:disabled {{ color: {t.disabled_text}; background: {t.window}; }}
QPushButton:focus {{ border: 1px solid {t.accent}; }}
QPushButton[primary="true"] {{ color: {t.on_accent}; background: {t.accent_fill};
    border: 1px solid {t.accent_fill}; font-weight: 600; }}
QPushButton[primary="true"]:hover {{ background: {t.selection}; }}
QPushButton[primary="true"]:disabled {{ color: {t.disabled_text}; background: {t.surface_alt};
    border: 1px solid {t.border}; }}

QLineEdit, QPlainTextEdit, QTextEdit {{ color: {t.text}; background: {t.surface};
    border: 1px solid {t.border}; border-radius: {r_s}px; padding: 4px;
    selection-background-color: {t.selection}; selection-color: {t.on_selection}; }}
QLineEdit {{ border: 1px solid {t.control_border}; }}
QLineEdit:disabled {{ color: {t.disabled_text}; background: {t.window};
    border: 1px solid {t.border}; }}
QLineEdit:focus, QPlainTextEdit:focus, QTextEdit:focus {{ border: 1px solid {t.accent}; }}
QTextBrowser#transcript {{ border: none; border-radius: 0px; padding: {s}px {l_}px; }}
QPlainTextEdit#chatInput {{ border-radius: {r_m}px; padding: {s}px; }}

QListView, QTreeView, QTableView, QListWidget, QTreeWidget, QTableWidget {{
    color: {t.text}; background: {t.surface}; alternate-background-color: {t.surface_alt};
    border: 1px solid {t.border}; border-radius: {r_s}px;
    selection-background-color: {t.selection}; selection-color: {t.on_selection}; }}
QHeaderView::section {{ color: {t.text_muted}; background: {t.window}; border: none;
    border-bottom: 1px solid {t.border}; padding: 4px {s}px; font-weight: 600; }}

QSplitter::handle {{ background: {t.window}; }}
QSplitter::handle:horizontal {{ width: 1px; border-left: 1px solid {t.border}; }}
QSplitter::handle:vertical {{ height: 1px; border-top: 1px solid {t.border}; }}
QScrollBar:vertical {{ background: transparent; width: 10px; margin: 0px; }}
QScrollBar::handle:vertical {{ background: {t.border}; border-radius: 5px; min-height: 24px; }}
QScrollBar:horizontal {{ background: transparent; height: 10px; margin: 0px; }}
QScrollBar::handle:horizontal {{ background: {t.border}; border-radius: 5px; min-width: 24px; }}
QScrollBar::add-line, QScrollBar::sub-line {{ width: 0px; height: 0px; }}
QScrollBar::add-page, QScrollBar::sub-page {{ background: transparent; }}

QProgressBar {{ color: {t.text}; background: {t.surface_alt}; border: none;
    border-radius: {r_s}px; text-align: center; min-height: 14px; }}
QProgressBar::chunk {{ background: {t.accent_fill}; border-radius: {r_s}px; }}

QFrame[card="true"] {{ background: {t.surface}; border: 1px solid {t.border};
    border-radius: {r_l}px; }}
QFrame[card="true"]:hover {{ border: 1px solid {t.accent}; }}
QFrame[section="true"] {{ background: {t.surface}; border: 1px solid {t.border};
    border-radius: {r_l}px; }}
{_input_frames(t)}
QListWidget#sectionIndex {{ background: transparent; border: none; outline: 0;
    padding: {SPACE["xs"]}px 0px; }}
QListWidget#sectionIndex::item {{ color: {t.text_muted}; padding: 0px {m}px;
    border-radius: {r_s}px; }}
QListWidget#sectionIndex::item:hover {{ background: {t.surface_alt}; color: {t.text}; }}
QListWidget#sectionIndex::item:selected {{ background: {t.surface_alt}; color: {t.text};
    font-weight: 600; }}
QWidget#emptyState {{ background: {t.surface}; }}
QLabel[role="title"] {{ color: {t.text}; font-size: {TYPE["title"]}pt; font-weight: 600; }}
QLabel[role="display"] {{ color: {t.text}; font-size: {TYPE["display"]}pt; font-weight: 600; }}
QLabel[role="subtitle"] {{ color: {t.text}; font-size: {TYPE["subtitle"]}pt; font-weight: 600; }}
QLabel[role="muted"] {{ color: {t.text_muted}; }}
QLabel[role="error"] {{ color: {t.danger}; }}
QLabel[role="caption"] {{ color: {t.text_muted}; font-size: {TYPE["caption"]}pt; }}
QLabel#chatStats {{ color: {t.text_muted}; padding: 2px {l_}px; }}
QLabel#editBanner {{ color: {t.text}; background: {t.surface_alt}; padding: {s}px;
    border-radius: {r_s}px; }}
QFrame#workerBanner {{ background: {t.danger_bg}; border: 1px solid {t.danger_border};
    border-radius: {r_s}px; }}
QFrame#workerBanner QLabel {{ color: {t.text}; }}
QLabel#offloadNotice {{ color: {t.text}; background: {t.warn_bg};
    border: 1px solid {t.warn_border}; border-radius: {r_s}px; padding: {s}px; }}
QLabel#hardwareChip {{ color: {t.text}; background: {t.surface_alt};
    border: 1px solid {t.border}; border-radius: {r_m}px; padding: 3px {s}px; }}
QLabel#pickKicker {{ color: {t.accent}; font-weight: 600; }}
QWidget#chatFooter {{ background: {t.window}; }}
QPushButton#sendButton, QPushButton#stopButton {{ border-radius: {r_m}px; padding: 0px; }}
QToolButton#regenerateButton {{ color: {t.text_muted}; border: none; padding: 2px {s}px;
    border-radius: {r_s}px; }}
QToolButton#regenerateButton:hover {{ color: {t.text}; background: {t.surface_alt}; }}
QLabel#endpointState {{ border-radius: 11px; padding: 2px {s}px; font-weight: 600;
    color: {t.text_muted}; background: {t.surface_alt}; border: 1px solid {t.border}; }}
QLabel#endpointState[tone="on"] {{ color: {t.good}; background: {t.good_bg};
    border: 1px solid {t.good_border}; }}
QLabel#endpointState[tone="starting"] {{ color: {t.warn}; background: {t.warn_bg};
    border: 1px solid {t.warn_border}; }}
QLabel#endpointState[tone="error"] {{ color: {t.danger}; background: {t.danger_bg};
    border: 1px solid {t.danger_border}; }}
QLabel#endpointUrl {{ color: {t.text}; background: {t.surface_alt};
    border: 1px solid {t.border}; border-radius: {r_s}px; padding: 5px {s}px; }}
QLabel#endpointUrl[live="false"] {{ color: {t.text_muted}; }}
QTabWidget#snippetTabs::pane {{ border: none; }}
QLabel#snippetNotice {{ color: {t.warn}; }}
QTabWidget#snippetTabs QTabBar::tab {{ color: {t.text_muted}; background: transparent;
    border: none; border-bottom: 2px solid transparent; padding: {SPACE["xs"]}px {m}px;
    margin-right: 2px; }}
QTabWidget#snippetTabs QTabBar::tab:hover {{ color: {t.text}; }}
QTabWidget#snippetTabs QTabBar::tab:selected {{ color: {t.text};
    border-bottom: 2px solid {t.accent}; font-weight: 600; }}
"""

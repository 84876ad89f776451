"""Draw Hearth's app icon (a flame in a warm rounded square) into resources/.

Run with the project's venv: `.venv/bin/python scripts/draw_icon.py`. Writes icon.png
(1024 px), the sized PNGs Briefcase's Linux/Windows templates use, icon.ico and
icon.icns, so packaging never depends on a hand-made binary.
"""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QPointF, QRectF, Qt
from PySide6.QtGui import (
    QColor,
    QGuiApplication,
    QImage,
    QLinearGradient,
    QPainter,
    QPainterPath,
    QRadialGradient,
)

OUT = Path(__file__).resolve().parent.parent / "resources"
SIZES = (16, 32, 48, 64, 128, 256, 512, 1024)


def flame_path(s: float, scale: float, dy: float) -> QPainterPath:
    cx = s / 2
    top, bottom, width = s * (0.16 + dy), s * 0.82, s * 0.30 * scale
    path = QPainterPath(QPointF(cx, top))
    path.cubicTo(
        QPointF(cx + width * 0.35, top + s * 0.17),
        QPointF(cx + width * 1.25, top + s * 0.3),
        QPointF(cx + width, bottom - s * 0.16),
    )
    path.cubicTo(
        QPointF(cx + width * 0.8, bottom + s * 0.02),
        QPointF(cx - width * 0.8, bottom + s * 0.02),
        QPointF(cx - width, bottom - s * 0.16),
    )
    path.cubicTo(
        QPointF(cx - width * 1.05, top + s * 0.36),
        QPointF(cx - width * 0.1, top + s * 0.28),
        QPointF(cx, top),
    )
    return path


def draw(size: int) -> QImage:
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    p = QPainter(image)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    s = float(size)
    bg = QLinearGradient(0, 0, 0, s)
    bg.setColorAt(0, QColor("#3a2418"))
    bg.setColorAt(1, QColor("#1c120c"))
    p.setBrush(bg)
    p.setPen(Qt.PenStyle.NoPen)
    p.drawRoundedRect(QRectF(s * 0.04, s * 0.04, s * 0.92, s * 0.92), s * 0.2, s * 0.2)
    glow = QRadialGradient(QPointF(s / 2, s * 0.72), s * 0.42)
    glow.setColorAt(0, QColor(255, 140, 40, 120))
    glow.setColorAt(1, QColor(255, 140, 40, 0))
    p.setBrush(glow)
    p.drawEllipse(QRectF(s * 0.08, s * 0.3, s * 0.84, s * 0.84))
    outer = QLinearGradient(0, s * 0.15, 0, s * 0.85)
    outer.setColorAt(0, QColor("#ffcf4a"))
    outer.setColorAt(1, QColor("#f0601c"))
    p.setBrush(outer)
    p.drawPath(flame_path(s, 1.0, 0.0))
    inner = QLinearGradient(0, s * 0.4, 0, s * 0.85)
    inner.setColorAt(0, QColor("#fff6c8"))
    inner.setColorAt(1, QColor("#ffc23a"))
    p.setBrush(inner)
    p.drawPath(flame_path(s, 0.5, 0.26))
    p.setBrush(QColor("#e8d3b8"))
    p.drawRoundedRect(QRectF(s * 0.24, s * 0.8, s * 0.52, s * 0.06), s * 0.03, s * 0.03)
    p.end()
    return image


def png_bytes(image: QImage) -> bytes:
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return bytes(data.data())


def write_ico(images: dict[int, QImage], path: Path) -> None:
    sizes = [s for s in (16, 32, 48, 64, 128, 256) if s in images]
    blobs = [png_bytes(images[s]) for s in sizes]
    header = struct.pack("<HHH", 0, 1, len(sizes))
    offset = 6 + 16 * len(sizes)
    entries = b""
    for size, blob in zip(sizes, blobs, strict=True):
        dim = 0 if size == 256 else size
        entries += struct.pack("<BBBBHHII", dim, dim, 0, 0, 1, 32, len(blob), offset)
        offset += len(blob)
    path.write_bytes(header + entries + b"".join(blobs))


def write_icns(images: dict[int, QImage], path: Path) -> None:
    kinds = {
        16: b"icp4",
        32: b"icp5",
        64: b"icp6",
        128: b"ic07",
        256: b"ic08",
        512: b"ic09",
        1024: b"ic10",
    }
    chunks = b""
    for size, kind in kinds.items():
        blob = png_bytes(images[size])
        chunks += kind + struct.pack(">I", len(blob) + 8) + blob
    path.write_bytes(b"icns" + struct.pack(">I", len(chunks) + 8) + chunks)


def main() -> int:
    QGuiApplication(sys.argv[:1])
    OUT.mkdir(exist_ok=True)
    images = {size: draw(size) for size in SIZES}
    images[1024].save(str(OUT / "icon.png"))
    for size in SIZES:
        images[size].save(str(OUT / f"icon-{size}.png"))
    write_ico(images, OUT / "icon.ico")
    write_icns(images, OUT / "icon.icns")
    images[256].save(
        str(Path(__file__).resolve().parent.parent / "app/hearth/ui/resources/icon.png")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

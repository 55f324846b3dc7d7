"""Charts drawn on the server as inline SVG: the admin page needs no script and no CDN."""

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

WIDTH, HEIGHT = 760, 240
LEFT, RIGHT, TOP, BOTTOM = 48, 16, 28, 36
COLORS = ("#2563eb", "#16a34a", "#dc2626", "#9333ea", "#ea580c")


def _nice_top(value: int) -> int:
    """The smallest of 1, 2, 5, 10, 20, 50 ... at or above ``value``: round axis labels."""
    top = 1
    while True:
        for step in (1, 2, 5):
            if step * top >= value:
                return step * top
        top *= 10


def _frame(title: str, labels: list[str], top: int, legend: list[tuple[str, str]]) -> list[str]:
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    parts: list[str] = [
        format_html(
            '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {} {}" width="100%" '
            'role="img" aria-label="{}" class="analytics-chart">',
            WIDTH,
            HEIGHT,
            title,
        ),
        format_html("<title>{}</title>", title),
        format_html(
            '<text x="{}" y="16" font-size="13" font-weight="bold" fill="#111">{}</text>',
            LEFT,
            title,
        ),
    ]
    for fraction in (0, 0.5, 1):
        y = TOP + plot_h - fraction * plot_h
        parts.append(
            format_html(
                '<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#e5e7eb"/>'
                '<text x="{}" y="{}" font-size="10" text-anchor="end" fill="#555">{}</text>',
                LEFT,
                f"{y:.1f}",
                LEFT + plot_w,
                f"{y:.1f}",
                LEFT - 6,
                f"{y + 3:.1f}",
                round(top * fraction),
            )
        )
    if labels:
        for index, anchor in ((0, "start"), (len(labels) - 1, "end")):
            parts.append(
                format_html(
                    '<text x="{}" y="{}" font-size="10" text-anchor="{}" fill="#555">{}</text>',
                    LEFT if anchor == "start" else LEFT + plot_w,
                    HEIGHT - BOTTOM + 14,
                    anchor,
                    labels[index],
                )
            )
    x = LEFT
    for name, color in legend:
        parts.append(
            format_html(
                '<rect x="{}" y="{}" width="10" height="10" fill="{}"/>'
                '<text x="{}" y="{}" font-size="11" fill="#333">{}</text>',
                x,
                HEIGHT - 14,
                color,
                x + 14,
                HEIGHT - 5,
                name,
            )
        )
        x += 22 + 7 * len(name)
    return parts


def line_chart(title: str, labels: list[str], series: dict[str, list[int]]) -> SafeString:
    """One polyline per series over the days in ``labels``."""
    legend = list(zip(series, COLORS, strict=False))
    top = _nice_top(max((max(values, default=0) for values in series.values()), default=0))
    parts = _frame(title, labels, top, legend)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = plot_w / max(len(labels) - 1, 1)
    for (name, values), color in zip(series.items(), COLORS, strict=False):
        points = " ".join(
            f"{LEFT + index * step:.1f},{TOP + plot_h - value / top * plot_h:.1f}"
            for index, value in enumerate(values)
        )
        parts.append(
            format_html(
                '<polyline points="{}" fill="none" stroke="{}" stroke-width="2">'
                "<title>{}</title></polyline>",
                points,
                color,
                name,
            )
        )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every value above went through format_html


def bar_chart(title: str, labels: list[str], series: dict[str, list[int]]) -> SafeString:
    """Side-by-side bars per day, one colour per series; a tooltip gives the exact values."""
    legend = list(zip(series, COLORS, strict=False))
    top = _nice_top(max((max(values, default=0) for values in series.values()), default=0))
    parts = _frame(title, labels, top, legend)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / max(len(labels), 1)
    width = max(slot * 0.8 / max(len(series), 1), 0.5)
    for offset, ((name, values), color) in enumerate(zip(series.items(), COLORS, strict=False)):
        for index, value in enumerate(values):
            if not value:
                continue
            height = value / top * plot_h
            parts.append(
                format_html(
                    '<rect x="{}" y="{}" width="{}" height="{}" fill="{}">'
                    "<title>{} {}: {}</title></rect>",
                    f"{LEFT + index * slot + slot * 0.1 + offset * width:.1f}",
                    f"{TOP + plot_h - height:.1f}",
                    f"{width:.1f}",
                    f"{height:.1f}",
                    color,
                    labels[index],
                    name,
                    value,
                )
            )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every value above went through format_html

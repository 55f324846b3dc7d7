"""The admin's per-project dashboard: charts drawn on the server, the metrics table."""

import re

import pytest
from django.test import Client
from django.urls import reverse

from analytics.charts import bar_chart, line_chart
from tests.analytics.conftest import NOW


def test_the_dashboard_page_renders_charts_and_metrics(browser, scenario, pinned):
    page = reverse("admin:analytics_projectdashboard_change", args=[scenario.project.pk])
    with pinned(NOW):
        response = browser.get(page, {"period": "30d"})
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('class="analytics-chart"') == 4
    assert "Open issues at the end of each day" in html
    assert "Comments per day" in html
    assert "<script" not in html.split('id="content-main"')[1]
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", html.split('id="content-main"')[1])
    # The metrics table shows the API's figures.
    assert "<td>Issues closed in the period (still closed)</td><td>5</td>" in html
    assert "<td>Closings in the period</td><td>6</td>" in html
    assert "<td>Average resolution time</td><td>10 days 48 minutes</td>" in html
    assert "<td>Average review time (opening to merge)</td><td>2 days 6 hours</td>" in html
    assert "Issues by label" in html and "backend" in html


@pytest.mark.parametrize("period", ["7d", "all", "bogus"])
def test_every_period_choice_renders(browser, scenario, pinned, period):
    page = reverse("admin:analytics_projectdashboard_change", args=[scenario.project.pk])
    with pinned(NOW):
        response = browser.get(page, {"period": period})
    assert response.status_code == 200
    assert response.context["period"] == ("30d" if period == "bogus" else period)


def test_the_list_links_to_each_project(browser, world):
    response = browser.get(reverse("admin:analytics_projectdashboard_changelist"))
    assert response.status_code == 200
    assert f'href="{world.project.pk}/change/"' in response.content.decode()
    missing = browser.get(reverse("admin:analytics_projectdashboard_change", args=[987654321]))
    assert missing.status_code == 302


def test_the_page_needs_a_staff_login(world):
    page = reverse("admin:analytics_projectdashboard_change", args=[world.project.pk])
    assert Client().get(page).status_code == 302


def test_charts_scale_and_escape():
    svg = line_chart("<b>Title</b>", ["2026-03-01", "2026-03-02"], {"a&b": [0, 7]})
    assert "&lt;b&gt;Title&lt;/b&gt;" in svg and "<b>" not in svg
    assert "a&amp;b" in svg
    # 7 rounds the axis up to 10: the point at 7 sits 70% up the 176-pixel plot (from y=204).
    assert ">10</text>" in svg
    points = re.search(r'points="([^"]+)"', svg).group(1).split()
    assert points[0].endswith(",204.0") and points[1].endswith(",80.8")
    bars = bar_chart("Bars", ["d1", "d2", "d3"], {"x": [0, 3, 0], "y": [1, 0, 0]})
    assert bars.count("<rect x=") == 2 + 2  # two bars plus two legend swatches
    empty = line_chart("Nothing", [], {"a": []})
    assert empty.startswith("<svg") and empty.endswith("</svg>")

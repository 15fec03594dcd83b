"""Admin reports (best sellers, sales totals, by day / month / year) and the review JSON helper for reward checks."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flask import Flask, jsonify, render_template, request

from sites.core import get_db, login_required
from sites.shop import queries as Q
from sites.shop.constants import ADMIN_LOGIN

DATE_FORMATS = ("%Y-%m-%d", "%m/%d/%Y", "%m/%d/%y")


def parse_date(text: str) -> str | None:
    """'2023-01-31', '1/31/2023' or '1/31/23' -> '2023-01-31'; None when empty or not a date."""
    for fmt in DATE_FORMATS:
        try:
            return datetime.strptime(text.strip(), fmt).strftime("%Y-%m-%d")
        except ValueError:
            continue
    return None


def _filter() -> dict[str, Any]:
    a = request.args
    period = a.get("period_type", "month")
    return {
        "period": period if period in Q.PERIOD_FORMATS else "month",
        "date_from": parse_date(a.get("from", "")),
        "date_to": parse_date(a.get("to", "")),
        "raw_from": a.get("from", ""),
        "raw_to": a.get("to", ""),
        "invalid": any(a.get(k) and not parse_date(a[k]) for k in ("from", "to")),
    }


def register_reports(app: Flask) -> None:
    @app.get("/admin/reports/report_sales/bestsellers/")
    @login_required(ADMIN_LOGIN)
    def admin_bestsellers() -> str:
        f = _filter()
        shown = "filter" in request.args and not f["invalid"]
        rows = Q.bestsellers(get_db(), f["period"], f["date_from"], f["date_to"]) if shown else []
        return render_template(
            "admin/report_bestsellers.html", title="Bestsellers Report", f=f, rows=rows, shown=shown
        )

    @app.get("/admin/reports/report_sales/sales/")
    @login_required(ADMIN_LOGIN)
    def admin_sales_report() -> str:
        f = _filter()
        shown = "filter" in request.args and not f["invalid"]
        rows = Q.sales_totals(get_db(), f["period"], f["date_from"], f["date_to"]) if shown else []
        totals = {
            k: round(sum(r[k] or 0 for r in rows), 2)
            for k in ("orders", "items", "subtotal", "shipping", "total")
        }
        return render_template(
            "admin/report_sales.html", title="Sales Report", f=f, rows=rows, shown=shown, totals=totals
        )

    @app.get("/__api__/reviews/latest")
    def api_latest_review() -> Any:
        r = Q.latest_review(get_db(), request.args.get("sku", "").strip())
        if r is None:
            return jsonify(error="no review for this SKU"), 404
        return jsonify(author=r["nickname"], rating=r["rating"], title=r["title"], id=r["id"])

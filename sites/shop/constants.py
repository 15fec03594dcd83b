"""Constants the shop's admin modules share. A leaf, so `admin_catalog` / `admin_reports` need not import `admin`."""

from __future__ import annotations

# The admin's sign-in endpoint: `login_required` sends anonymous visitors of an admin page there.
ADMIN_LOGIN = "admin_home"

"""Bundled practice web sites modelled on WebArena's (shop, shop admin, forum, code host), with per-rollout sandboxes.

See sites/README.md for the conventions; `sites.core` says how a site plugs in; `sites.server.SiteServer` starts them.
"""

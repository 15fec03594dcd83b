"""Bundled practice web sites modelled on WebArena's (shop, shop admin, forum, code host), with per-rollout sandboxes.

See sites/README.md for the conventions; `sites.core` says how a site plugs in; `sites.server.SiteServer` starts them.

    core.py      the framework: the site registry, the per-site Flask app, request helpers
    server.py    SiteServer: start and stop all bundled sites in this process
    sandbox.py   per-rollout sandboxes: private copies of the seeded databases, selected by a token
    auth.py      passwords and Playwright storage states
    metrics.py   request metrics of one site (prometheus_client)
    expert.py    which scripted expert plays a bundled-site task
    __main__.py  `python -m sites serve` and the other commands
    shop/        the shop and the shop admin (`shopping`, `shopping_admin`)
    forum/       the forum (`reddit`)
    gitlab/      the code host (`gitlab`)
    tasks/       the task suites in WebArena's JSON format, and the expert's steps
    miniwob/     MiniWoB++ as a second environment: task pages, seeds, experts
    templates/   the HTML templates the sites share
"""

"""Writes deploy/grafana/webagent_dashboard.json, the Grafana dashboard of a training run.

    python deploy/grafana/make_dashboard.py            # rewrite the JSON after changing a panel here

The panels read Ray's Prometheus metrics: the run's metrics from `rollout_workers/metrics.py` (Ray exports a
metric named `webagent_x` as `ray_webagent_x`, with a `SessionName` label per Ray cluster session) and the bundled
sites' request metrics from `sites/metrics.py` (scraped directly, see deploy/prometheus.yml). The JSON is
generated so that every panel has the same shape and the layout is computed; a test checks the committed file
is what this script writes and that every metric it queries exists in the code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).with_name("webagent_dashboard.json")
DS = {"type": "prometheus", "uid": "${datasource}"}
SESSION = 'SessionName=~"$SessionName"'


def _q(metric: str, extra: str = "") -> str:
    """A Ray metric selector restricted to the chosen cluster session."""
    labels = SESSION + (", " + extra if extra else "")
    return f"ray_{metric}{{{labels}}}"


def _quantiles(
    metric: str,
    selector: str = "",
    by: str = "",
    window: str = "5m",
    qs: tuple[float, ...] = (0.5, 0.9, 0.99),
) -> list[tuple[str, str]]:
    """Quantile queries of a histogram: `metric` is the exported name without `_bucket`."""
    grp = f"le, {by}" if by else "le"
    legend = f"{{{{{by}}}}} " if by else ""
    sel = f"{{{selector}}}" if selector else ""
    return [
        (
            f"histogram_quantile({q}, sum by ({grp}) (rate({metric}_bucket{sel}[{window}])))",
            f"{legend}p{round(q * 100)}",
        )
        for q in qs
    ]


_SUCCESSES = _q("webagent_episodes_total", 'outcome="success"')
_SCORED = _q("webagent_episodes_total", 'outcome=~"success|fail"')

# (title, description, unit, panel type, [(expr, legend)]) per row; the layout is two panels per line.
ROWS: list[tuple[str, list[tuple[str, str, str, str, list[tuple[str, str]]]]]] = [
    (
        "Learning",
        [
            (
                "Success rate by site and phase",
                "Share of scored episodes with reward 1 in the last evaluation of "
                "each phase (before BC, after BC, after RL), per site.",
                "percentunit",
                "timeseries",
                [(f"max by (site, phase) ({_q('webagent_success_rate')})", "{{phase}} {{site}}")],
            ),
            (
                "Reward mean by phase",
                "Mean reward of the last batch of each phase (rl = the RL rollouts).",
                "none",
                "timeseries",
                [(f"max by (phase) ({_q('webagent_reward_mean')})", "{{phase}}")],
            ),
            (
                "Per-group reward spread",
                "Mean over groups of the reward standard deviation inside a group. "
                "M-GRPO learns only from groups whose episodes disagree.",
                "none",
                "timeseries",
                [(f"max({_q('webagent_group_reward_std')})", "mean group std")],
            ),
            (
                "Zero-variance groups",
                "Share of groups whose episodes all got the same reward: they give no "
                "gradient. Near 1 means the tasks are too hard or too easy for the policy.",
                "percentunit",
                "timeseries",
                [(f"max({_q('webagent_zero_variance_group_share')})", "share")],
            ),
            (
                "RL groups per minute: kept and dropped",
                "Groups drawn by RL iterations: kept for the update (mixed outcomes under dynamic sampling) or "
                "dropped (all-equal rewards, or failed). Mostly dropped means the tasks are too easy or too hard.",
                "none",
                "timeseries",
                [(f"sum by (fate) (rate({_q('webagent_rl_groups_total')}[5m])) * 60", "{{fate}}")],
            ),
            (
                "Expert members per minute",
                "Expert episodes played into all-failed groups (rl.expert_guidance; with rl.guide_up_to also "
                "rarely solved ones), by outcome: a success makes an all-failed group trainable.",
                "none",
                "timeseries",
                [
                    (
                        f"sum by (outcome) (rate({_q('webagent_rl_expert_members_total')}[5m])) * 60",
                        "{{outcome}}",
                    )
                ],
            ),
        ],
    ),
    (
        "Episodes",
        [
            (
                "Episodes per minute by outcome",
                "Finished episodes: success, fail, unscorable (no judge for a "
                "fuzzy_match check) and infra_error (browser crash or time-out; the group is re-run).",
                "none",
                "timeseries",
                [(f"sum by (outcome) (rate({_q('webagent_episodes_total')}[5m])) * 60", "{{outcome}}")],
            ),
            (
                "Live success rate by site (15 min)",
                "Successes over scored episodes finished in the last 15 minutes, all phases together.",
                "percentunit",
                "timeseries",
                [
                    (
                        f"sum by (site) (rate({_SUCCESSES}[15m])) / sum by (site) (rate({_SCORED}[15m]))",
                        "{{site}}",
                    )
                ],
            ),
            (
                "Turns per episode",
                "Quantiles of the number of turns an episode took (max_turns caps it).",
                "none",
                "timeseries",
                _quantiles("ray_webagent_turns_per_episode", SESSION, window="10m"),
            ),
            (
                "Action parse failures per minute",
                "Completions from which no valid action could be parsed; the "
                "episode gets an error observation and goes on.",
                "none",
                "timeseries",
                [(f"sum(rate({_q('webagent_action_parse_failures_total')}[5m])) * 60", "parse failures")],
            ),
        ],
    ),
    (
        "Throughput",
        [
            (
                "Browser step latency",
                "Seconds of one browser step (action, settle, next observation).",
                "s",
                "timeseries",
                _quantiles("ray_webagent_step_latency_seconds", SESSION),
            ),
            (
                "Generated tokens per second",
                "Completion tokens generated by all engines, per second of rollout.",
                "none",
                "timeseries",
                [(f"max({_q('webagent_generate_tokens_per_second')})", "generate")],
            ),
            (
                "Learner tokens per second",
                "Tokens through the learner's forward and backward in the last update.",
                "none",
                "timeseries",
                [(f"max({_q('webagent_learner_tokens_per_second')})", "learner")],
            ),
            (
                "Weight push seconds",
                "Seconds from the learner's gathered weights to every engine serving them.",
                "s",
                "timeseries",
                [(f"max by (method) ({_q('webagent_weight_push_seconds')})", "{{method}}")],
            ),
        ],
    ),
    (
        "Health",
        [
            (
                "RL iteration",
                "The current RL iteration of the run.",
                "none",
                "stat",
                [(f"max({_q('webagent_iteration')})", "iteration")],
            ),
            (
                "RL stalled tries",
                "Tries in a row of an RL iteration in which every group failed (sites down); 0 when training.",
                "none",
                "stat",
                [(f"max({_q('webagent_rl_stalled_tries')})", "stalled tries")],
            ),
            (
                "Infrastructure failures per minute",
                "Browser crashes, step time-outs and other failures that make a group run again, by kind.",
                "none",
                "timeseries",
                [(f"sum by (kind) (rate({_q('webagent_infra_failures_total')}[5m])) * 60", "{{kind}}")],
            ),
        ],
    ),
    (
        "Bundled sites",
        [
            (
                "Site request latency",
                "Server-side seconds per request of the bundled sites, by site.",
                "s",
                "timeseries",
                _quantiles("wa_site_request_seconds", by="site", qs=(0.5, 0.95)),
            ),
            (
                "Site requests per second",
                "Requests served by each bundled site.",
                "reqps",
                "timeseries",
                [("sum by (site) (rate(wa_site_request_seconds_count[5m]))", "{{site}}")],
            ),
            (
                "Site errors per second",
                "Responses with status >= 400, by site and status (403 on the read-only "
                "default is a policy writing without a sandbox).",
                "reqps",
                "timeseries",
                [("sum by (site, status) (rate(wa_site_errors_total[5m]))", "{{site}} {{status}}")],
            ),
            (
                "Live sandboxes",
                "Private database copies alive on each site's server (one per rollout in flight, "
                "until the janitor removes idle ones).",
                "none",
                "timeseries",
                [("max by (site) (wa_site_live_sandboxes)", "{{site}}")],
            ),
        ],
    ),
]


def _panel(
    pid: int, x: int, y: int, spec: tuple[str, str, str, str, list[tuple[str, str]]]
) -> dict[str, Any]:
    title, desc, unit, kind, queries = spec
    defaults: dict[str, Any] = {"unit": unit}
    if unit == "percentunit":
        defaults.update(min=0, max=1)
    panel: dict[str, Any] = {
        "id": pid,
        "type": kind,
        "title": title,
        "description": desc,
        "datasource": DS,
        "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "targets": [
            {"refId": chr(ord("A") + i), "datasource": DS, "expr": expr, "legendFormat": legend}
            for i, (expr, legend) in enumerate(queries)
        ],
    }
    if kind == "stat":
        panel["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}}
    else:
        panel["options"] = {
            "legend": {"displayMode": "list", "placement": "bottom"},
            "tooltip": {"mode": "multi"},
        }
    return panel


def _templating() -> dict[str, Any]:
    return {
        "list": [
            {
                "name": "datasource",
                "label": "Data source",
                "type": "datasource",
                "query": "prometheus",
                "current": {},
                "hide": 0,
                "refresh": 1,
            },
            {
                "name": "SessionName",
                "label": "Ray session",
                "type": "query",
                "datasource": DS,
                "query": {"query": "label_values(ray_webagent_iteration, SessionName)", "refId": "sessions"},
                "definition": "label_values(ray_webagent_iteration, SessionName)",
                "includeAll": True,
                "allValue": ".*",
                "multi": False,
                "current": {},
                "hide": 0,
                "refresh": 2,
                "sort": 2,
            },
        ]
    }


def build() -> dict[str, Any]:
    panels: list[dict[str, Any]] = []
    pid, y = 1, 0
    for row_title, specs in ROWS:
        panels.append(
            {
                "id": pid,
                "type": "row",
                "title": row_title,
                "collapsed": False,
                "panels": [],
                "gridPos": {"h": 1, "w": 24, "x": 0, "y": y},
            }
        )
        pid, y = pid + 1, y + 1
        for i, spec in enumerate(specs):
            panels.append(_panel(pid, 12 * (i % 2), y + 8 * (i // 2), spec))
            pid += 1
        y += 8 * ((len(specs) + 1) // 2)
    return {
        "uid": "webagent-rl",
        "title": "WebAgent RL training",
        "description": __doc__.split("\n")[0],
        "tags": ["webagent", "ray"],
        "timezone": "browser",
        "editable": True,
        "graphTooltip": 1,
        "schemaVersion": 39,
        "version": 1,
        "refresh": "10s",
        "time": {"from": "now-3h", "to": "now"},
        "templating": _templating(),
        "annotations": {"list": []},
        "links": [],
        "panels": panels,
    }


def render() -> str:
    return json.dumps(build(), indent=2) + "\n"


if __name__ == "__main__":
    OUT.write_text(render(), encoding="utf-8")
    print(f"wrote {OUT}")

"""Shared foundation: typed records, task schema, config, action grammar and prompt building.

Every other package imports from here; nothing here imports ray, vllm, deepspeed or playwright at import time.

    records.py           the typed records that flow browser -> reward -> learner (Observation, Turn, Trajectory, ...)
    tasks.py             WebArena's task-config schema, loading, placeholders, a validator CLI
    config.py            the pydantic config tree (one YAML + dotted overrides)
    actions.py           model output <-> typed actions, in the two grammars and the thinking format
    webarena_actions.py  WebArena's id-based action grammar
    webrl_actions.py     WebRL's / WebAgent-R1's call grammar
    prompts.py           PromptBuilder: each turn's prompt as token ids, history compression, the page budget
    remote.py            `call`: a Ray actor handle or a plain object called alike, with a time-out
    allowlist.py         the origins an episode may reach
    confine.py           request confinement inside Chromium (CDP Fetch)
    chromium.py          Chromium's flags and executable
    sites.py             names the bundled sites and their clients agree on (sandbox cookie, placeholders)
    loop.py              LoopThread: a synchronous API over an asyncio loop
    models.py            the model folders used offline (default CPU model, tiny test models)
    cli.py               command-line errors as one line, before anything starts
    net.py               free_port()
    text.py              cutting and repairing text
"""

